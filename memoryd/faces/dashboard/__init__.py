"""The operator's dashboard: the supervisor's bounded samples (recorded by
:mod:`memoryd.workers.sampler`) and a local, token-guarded web page over them
(:mod:`.app`, imported only by the command)."""

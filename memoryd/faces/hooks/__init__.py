"""``memoryd hook EVENT``: capture and recall through the agents' own lifecycle hooks
(:mod:`.event`, the fast path a hook process takes; :mod:`.transcript`, the agent's
transcript read on by offset), and ``memoryd hooks install`` (:mod:`.install`)."""

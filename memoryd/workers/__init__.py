"""The runtime: the job contract, the registry of kinds, the supervisor with its group
commit and extensions, and the pools that run jobs (local processes or Ray)."""

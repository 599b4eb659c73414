"""The evidence archive as a capability: transcripts in, operations, the retention job.

The store contract is :mod:`memoryd.storage.archive`; retention policy is
:mod:`memoryd.retention`. Every operation here runs in the archive's single
owner: the retention worker when a supervisor runs, else the CLI process
itself (embedded), under the same lock.
"""

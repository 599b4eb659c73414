"""The supervisor's control socket (``memoryd.sock``): requests that must not wait
behind the job queue — status, search, recall, archive reads — answered by a
thread of the supervisor, archive reads through a RocksDB secondary instance."""

from memoryd.control.client import Client, request, socket_path, unwrap

__all__ = ["Client", "request", "socket_path", "unwrap"]

"""The stores: the SQLite authority (and, later, the RocksDB archive)."""

from memoryd.storage.authority import Authority, open_authority

__all__ = ["Authority", "open_authority"]

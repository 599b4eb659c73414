"""The archive store's RocksDB options: what an open leaves behind is bounded."""

from __future__ import annotations

from pathlib import Path

from memoryd.storage.archive import ArchiveStore
from memoryd.storage.archive.core import INFO_LOGS_KEPT


def test_reopening_keeps_a_bounded_number_of_info_logs(tmp_path: Path) -> None:
    """Each open starts an info log and renames the last one; RocksDB's default keeps
    1000 of them, which a supervisor restarting daily (and every control-socket change
    check listing the directory) would pay for."""
    path = tmp_path / "archive"
    for _ in range(INFO_LOGS_KEPT + 5):
        ArchiveStore.open_primary(path, sync=False).close()
    logs = [p.name for p in path.iterdir() if p.name.startswith("LOG")]
    assert "LOG" in logs and len(logs) <= INFO_LOGS_KEPT, logs

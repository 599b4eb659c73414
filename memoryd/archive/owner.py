"""The archive's single owner: the open primary store with its policy, boundary,
maintenance and disk guard. The retention worker keeps one for its lifetime;
the CLI opens one embedded when no supervisor runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoryd.config import ARCHIVE_DIR, Config
from memoryd.retention.boundary import Boundary
from memoryd.retention.maintenance import Maintenance
from memoryd.storage.archive import ArchiveStore


def archive_path(home: Path) -> Path:
    return Path(home) / ARCHIVE_DIR


class ArchiveOwner:
    def __init__(self, home: Path, config: Config) -> None:
        self.home = Path(home)
        self.path = archive_path(home)
        self.config = config
        self._open()

    def _open(self) -> None:
        config = self.config
        self.store = ArchiveStore.open_primary(self.path)
        self.boundary = Boundary(self.path)
        self.maintenance = Maintenance.from_config(self.store, config, boundary=self.boundary)
        self.policy = self.maintenance.policy
        if self.maintenance.disk_guard is not None:
            self.maintenance.disk_guard.on_open()

    def close(self) -> None:
        self.store.close()

    @contextmanager
    def closed(self) -> Iterator[None]:
        """Let go of the store (migration steps open it themselves), then reopen."""
        self.store.close()
        try:
            yield
        finally:
            self._open()

    def __enter__(self) -> ArchiveOwner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Retention suites: real RocksDB archives in tmp dirs, real child processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from memoryd.retention.policy import RetentionPolicy
from memoryd.search import archive_bm25
from memoryd.storage.archive import ArchiveStore, NewVersion

NOW = 1_700_000_000.0
DAY = 86400.0
ROOT = Path(__file__).resolve().parents[2]
POLICY = RetentionPolicy()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "archive"


@pytest.fixture
def store(path: Path):
    s = ArchiveStore.open_primary(path, sync=False)
    yield s
    s.close()


def populate(
    store: ArchiveStore,
    n: int,
    *,
    due_every: int = 2,
    cls: str = "conversation",
    spread_days: int = 1,
):
    """``n`` documents ``doc<i> uniq<i> ...``; every ``due_every``-th is past its policy
    deadline at NOW (their deadlines spread over ``spread_days`` day segments). Returns
    ``{locator: (text, due)}``."""
    items, meta = [], []
    for i in range(n):
        due = i % due_every == 0
        created = NOW - (100 * DAY + (i // due_every) % spread_days * DAY if due else 1 * DAY)
        text = f"doc{i} uniq{i} shared words for retention {'due' if due else 'fresh'}"
        items.append(NewVersion("p", cls, text, created, POLICY.expires_at(cls, created)))
        meta.append((text, due))
    out = {}
    for start in range(0, n, 500):
        res = store.ledgers.append_many(items[start : start + 500], now=NOW)
        for r, m in zip(res, meta[start : start + 500], strict=True):
            out[r.locator] = m
    return out


def child(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
    """Run ``tests.retention.child`` to completion; returns (returncode, parsed last line)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "tests.retention.child", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return proc.returncode, (orjson.loads(lines[-1]) if lines else None), proc.stderr


def spawn(*args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.retention.child", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def check_invariants(store: ArchiveStore, docs: dict, *, protected: set[str] = frozenset()):
    """No live key lost, no expired version visible. Returns (live, expired) counts."""
    live = expired = 0
    for loc, (text, due) in docs.items():
        got = store.ledgers.get(loc)
        term = text.split()[1]  # uniq<i>
        hits = {h.locator for h in archive_bm25.search(store.postings, "p", term)}
        if got["status"] == "live":
            assert got["content"] == text, loc  # no live key lost
            assert hits == {loc}
            live += 1
        else:
            assert got["status"] == "expired" and "content" not in got
            assert due and loc not in protected, f"{loc} expired but was not due/protected"
            assert hits == set(), f"expired {loc} still visible"
            expired += 1
        if not due or loc in protected:
            assert got["status"] == "live", loc
    return live, expired

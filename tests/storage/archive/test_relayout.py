"""The format bump to expiry segments: a layout-1 archive (keys by family, as memoryd
wrote them before segments) moved in place on open, resumably, a SIGKILL in the
middle included."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest
from rocksdict import Options, Rdict

from memoryd.retention.boundary import Boundary
from memoryd.retention.policy import RetentionPolicy
from memoryd.retention.waves import run_wave
from memoryd.search import archive_bm25
from memoryd.storage.archive import ArchiveStore, codec, keys, positions
from memoryd.storage.archive.relayout import Relayout

NOW = 1_700_000_000.0
DAY = 86400.0
ROOT = Path(__file__).resolve().parents[3]


def text_of(i: int) -> str:
    return f"user: note {i} about harbor{i % 7} and tides\nassistant: noted {i}"


def write_layout_1(path: Path, n: int) -> dict[str, tuple[str, bool]]:
    """A layout-1 archive of ``n`` documents written key by key: every third one past
    its deadline at NOW, every tenth one expired earlier and still queued for its
    purge. Returns ``{locator: (text, due)}`` of the live ones."""
    db = Rdict(str(path), Options(raw_mode=True))
    fmt = {"layout": 1, "bucket_seconds": 3600, "payload_format": 2, "postings_layout": 2}
    db[keys.FORMAT] = orjson.dumps(fmt)
    df: Counter[bytes] = Counter()
    versions = length = 0
    live = {}
    for i in range(n):
        doc, text = f"d{i:05d}".encode(), text_of(i)
        due, queued = i % 3 == 0, i % 10 == 1
        created = NOW - (100 if due else 1) * DAY
        deadline = created + 90 * DAY
        values, size = positions.posting_values(text, None)
        payload = codec.encode_payload(text, None, 2)
        v = {"status": "expired" if queued else "live", "created_at": created,
             "expires_at": deadline, "gen": 1, "override": False, "len": size,
             "size": len(payload), "sha256": hashlib.sha256(text.encode()).hexdigest(),
             "request_id": None}  # fmt: skip
        if queued:
            v["retired_at"] = NOW - 2 * DAY
        ledger = {"project": "p", "class": "conversation", "session": None,
                  "created_at": created, "current": 1, "versions": [v]}  # fmt: skip
        dv = keys.dv(doc, 1)
        db[keys.doc(doc)] = codec.encode_ledger(ledger)
        db[b"V" + dv] = payload
        db[b"L" + dv] = keys.join_terms(list(values))
        for term, value in values.items():
            db[b"Pp\x00" + term.encode() + b"\x00" + dv] = value
        if queued:
            db[b"U" + dv] = b""
            continue
        db[keys.expiry(int(deadline // 3600), keys.CLASS_CODE["conversation"], dv)] = b"\0\0\0\1"
        df.update(t.encode() for t in values)
        versions, length = versions + 1, length + size
        live[f"d{i:05d}@1"] = (text, due)
    for term, count in df.items():
        db[keys.termstat(b"p", term)] = keys.U64.pack(count)
    db[keys.corpus(b"p")] = orjson.dumps({"versions": versions, "length": length})
    db.close()
    return live


def check_moved(store: ArchiveStore, live: dict[str, tuple[str, bool]]) -> None:
    assert store.layout == 2
    assert store.ledgers.get("d00001@1")["status"] == "expired"  # was queued: purged on the way
    for loc, (text, _) in live.items():
        assert store.ledgers.get(loc)["content"] == text
    hits = {h.locator for h in archive_bm25.search(store.postings, "p", "harbor3", limit=1000)}
    assert hits == {loc for loc, (text, _) in live.items() if "harbor3 " in text}
    assert store.postings.verify_postings()["ok"]
    old = [
        k for k, _ in store.maintenance.raw_items() if k[:1] in (b"C", b"E", b"L", b"P", b"U", b"V")
    ]
    assert old == []


def test_a_layout_1_archive_moves_under_segments_on_open(tmp_path):
    path = tmp_path / "archive"
    live = write_layout_1(path, 60)
    with ArchiveStore.open_primary(path, sync=False) as store:
        check_moved(store, live)
        wave = run_wave(store, RetentionPolicy(), Boundary(path), now=NOW)
        assert sorted(wave.expired) == sorted(loc for loc, (_, due) in live.items() if due)
        assert all(
            store.ledgers.get(loc)["status"] == "live" for loc, (_, d) in live.items() if not d
        )
        assert store.postings.verify_postings()["ok"]
    with ArchiveStore.open_primary(path, sync=False) as store:  # once: layout 2 recorded
        assert Relayout(store).relayout() == 0


@pytest.mark.slow
def test_a_relayout_killed_mid_way_resumes_where_it_stopped(tmp_path):
    path = tmp_path / "archive"
    live = write_layout_1(path, 1300)  # three batches of 500 ledgers
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["MEMORYD_KILL_AT"] = "relayout_mid_copy:2"
    code = "import sys, memoryd.storage.archive as a; a.ArchiveStore.open_primary(sys.argv[1])"
    argv = [sys.executable, "-c", code, str(path)]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    db = Rdict(str(path), Options(raw_mode=True))
    cursor = db.get(keys.cursor("archive.relayout"))
    db.close()
    assert cursor is not None  # the first batch committed with its cursor
    with ArchiveStore.open_primary(path, sync=False) as store:
        check_moved(store, live)
        assert store.ledgers.counts()["versions"]["live"] == len(live)

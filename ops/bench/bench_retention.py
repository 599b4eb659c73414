"""make bench-retention: archive 200,000 versions, expire half, run retention until quiescent.

Reports: the keys retention deleted per second against raw rocksdict WriteBatch
deletes of the *same keys* (the keys the retained archive no longer holds, found
by comparing it with a checkpoint taken before; deleted from the checkpoint in
batches of retention's purge batch size, every batch fsynced) and their ratio.
Retention expires whole expiry segments (one range delete each, the statistics
folded per batch of segments), so "keys per second" counts what its range
deletes removed; ``retention_wall_us_per_expired`` is the per-version cost.
Also: SST bytes before retention, after the trigger's flush plus background
compaction, after ``retention compact`` (the content ranges) and after a full
compaction, and a full read of every live version afterwards (none may be
lost). ``--json``: one object with, among others, ``memoryd_keys_per_s``,
``raw_keys_per_s``, ``ratio``, ``sst_before_bytes``, ``sst_after_bytes``
(after ``retention compact``) and ``live_read_back`` (live versions read back
intact; all of them or exit 1). ``retention_cpu_us_per_expired`` (the process's
CPU, RocksDB's background threads included) beside ``retention_wall_us_per_expired``
shows how much of retention's wall time is waiting.

``--spread-days D`` spreads the creation times over D days, so the expired half
falls in about D day segments (and the live half in as many); ``--protect N``
pins N due documents and leases N others (copied out to the held segment, every
one read back whole).

    .venv/bin/python ops/bench/bench_retention.py [--versions N] [--spread-days D]
        [--protect N] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rocksdict import Checkpoint, Options, Rdict, WriteBatch, WriteOptions

from memoryd.retention.boundary import Boundary
from memoryd.retention.maintenance import Maintenance, TickBounds
from memoryd.retention.policy import RetentionPolicy
from memoryd.storage.archive import ArchiveStore, NewVersion

NOW = 1_700_000_000.0
DAY = 86400.0
MiB = 1024 * 1024


def text_of(i: int, rng_words: list[str]) -> str:
    r = random.Random(i)
    return f"msg{i} " + " ".join(r.choices(rng_words, k=20))


def created_of(i: int, spread_days: float) -> float:
    """Even versions are past 90 days (due), odd ones a day old; ``spread_days``
    spreads both over that many days (so over as many day segments)."""
    spread = (i % 997) / 997 * spread_days * DAY
    return NOW - (100 * DAY if i % 2 == 0 else 1 * DAY) - spread


def protect(store: ArchiveStore, versions: int, n: int) -> set[int]:
    """Pin ``n`` due documents and lease ``n`` others (spread over the due range; the
    leases taken at their creation, long enough to hold at NOW)."""
    due = list(range(0, versions, 2))
    chosen = due[:: max(1, len(due) // max(2 * n, 1))][: 2 * n]
    for k, i in enumerate(chosen):
        loc = f"d{i:07d}@1"
        if k % 2:
            created = store.ledgers.version_info(loc).created_at
            store.protections.acquire_leases(
                f"c{k}", "bench", [loc], ttl=NOW - created + DAY, now=created
            )
        else:
            store.protections.pin(loc, now=NOW)
    return set(chosen)


def main() -> int:  # noqa: C901 (listed in pyproject.toml)
    ap = argparse.ArgumentParser()
    ap.add_argument("--versions", type=int, default=200_000)
    ap.add_argument("--spread-days", type=float, default=0.0)
    ap.add_argument("--protect", type=int, default=0, help="pin N and lease N due documents")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="bench-retention-"))
    work.mkdir(parents=True, exist_ok=True)
    path, copy = work / "archive", work / "raw-copy"
    for p in (path, copy):
        shutil.rmtree(p, ignore_errors=True)
    policy = RetentionPolicy()
    words = [f"w{i}" for i in range(20_000)]
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    res: dict = {"versions": args.versions, "spread_days": args.spread_days}

    store = ArchiveStore.open_primary(path)  # sync=True: every batch fsynced, as in service
    t0 = time.perf_counter()
    batch = []
    for i in range(args.versions):
        created = created_of(i, args.spread_days)
        batch.append(
            NewVersion(
                "bench",
                "conversation",
                text_of(i, words),
                created,
                policy.expires_at("conversation", created),
                doc_id=f"d{i:07d}",
            )
        )
        if len(batch) == 1000:
            store.ledgers.append_many(batch, now=NOW)
            batch = []
    if batch:
        store.ledgers.append_many(batch, now=NOW)
    res["append_seconds"] = round(time.perf_counter() - t0, 2)
    res["append_versions_per_s"] = round(args.versions / res["append_seconds"])
    store.maintenance.flush()
    res["sst_bytes_before_uncompacted"] = store.meta.properties()["sst_bytes"]
    store.maintenance.compact_all()  # a settled baseline: the live archive fully compacted
    before = store.meta.properties()
    res["sst_bytes_before"] = before["sst_bytes"]
    res["keys_before"] = before["estimated_keys"]
    protected = protect(store, args.versions, args.protect)
    res["protected"] = len(protected)
    res["segments_due"] = len(store.segments.due_segments(NOW))
    log(f"archived {args.versions} versions in {res['append_seconds']}s; SST {before}")

    # the same archive, for the raw baseline
    store.close()
    db = Rdict(str(path), Options(raw_mode=True))
    Checkpoint(db).create_checkpoint(str(copy))
    db.close()
    store = ArchiveStore.open_primary(path)

    m = Maintenance(store, policy, Boundary(path), bounds=TickBounds())
    t0, c0 = time.perf_counter(), time.process_time()
    ticks = expired = deleted = 0
    while True:
        r = m.tick(now=NOW)
        ticks += 1
        expired += r.expired
        deleted += r.keys_deleted
        if r.exhausted and r.expired == 0:
            break
    retention_s = time.perf_counter() - t0
    retention_cpu = time.process_time() - c0
    res.update(
        retention_cpu_seconds=round(retention_cpu, 2),
        retention_cpu_us_per_expired=round(retention_cpu * 1e6 / max(expired, 1), 1),
        retention_wall_us_per_expired=round(retention_s * 1e6 / max(expired, 1), 1),
        ticks=ticks,
        expired_versions=expired,
        retention_seconds=round(retention_s, 2),
        retention_deleted_keys=deleted,
        retention_keys_per_s=round(deleted / retention_s),
        retention_versions_per_s=round(expired / retention_s),
    )
    log(f"retention: {expired} versions, {deleted} keys in {retention_s:.1f}s, {ticks} ticks")
    t0 = time.perf_counter()
    while True:  # background compaction after the trigger's flushes
        r = m.tick(now=NOW)
        if not r.compaction["armed"] or time.perf_counter() - t0 > 120:
            break
        time.sleep(1)
    after_bg = store.meta.properties()
    res["sst_bytes_after_background"] = after_bg["sst_bytes"]
    res["background_wait_seconds"] = round(time.perf_counter() - t0, 1)
    res["trigger_flushes"] = r.compaction["flushes"]
    content = m.compact(full=False)  # what `memoryd retention compact` does
    res["sst_bytes_after_retention_compact"] = content["sst_bytes_after"]
    full = m.compact()
    res["sst_bytes_after_full_compaction"] = full["sst_bytes_after"]
    log(
        f"SST: before {before['sst_bytes']}, after background {after_bg['sst_bytes']}, "
        f"after retention compact {content['sst_bytes_after']}, after full "
        f"{full['sst_bytes_after']}"
    )

    # every live version reads back whole
    t0 = time.perf_counter()
    lost = live = 0
    for i in [*range(1, args.versions, 2), *sorted(protected)]:
        got = store.ledgers.get(f"d{i:07d}@1")
        live += 1
        if got["status"] != "live" or got["content"] != text_of(i, words):
            lost += 1
    wrong = sum(
        store.ledgers.get(f"d{i:07d}@1")["status"] != "expired"
        for i in range(0, args.versions, 2)
        if i not in protected
    )
    res.update(
        live_read=live,
        live_read_back=live - lost,
        live_lost=lost,
        expired_visible=wrong,
        read_seconds=round(time.perf_counter() - t0, 2),
    )
    res["postings_verified"] = (
        store.postings.verify_postings()["ok"] if args.versions <= 20_000 else None
    )
    store.close()

    # raw baseline: the same keys deleted from the checkpoint with plain WriteBatches
    a = Rdict(str(path), Options(raw_mode=True))
    b = Rdict(str(copy), Options(raw_mode=True))
    gone = []
    ia = a.keys()
    ka = next(ia, None)
    for kb in b.keys():  # noqa: SIM118 (an Rdict is not iterable)
        while ka is not None and ka < kb:
            ka = next(ia, None)
        if ka != kb:
            gone.append(kb)
    a.close()
    wopt = WriteOptions()
    wopt.sync = True
    size = TickBounds().purge_batch_keys
    t0 = time.perf_counter()
    for s in range(0, len(gone), size):
        wb = WriteBatch(raw_mode=True)
        for k in gone[s : s + size]:
            wb.delete(k)
        b.write(wb, wopt)
    raw_s = time.perf_counter() - t0
    b.close()
    res.update(
        raw_deleted_keys=len(gone),
        raw_seconds=round(raw_s, 2),
        raw_keys_per_s=round(len(gone) / raw_s),
    )
    memoryd_keys_per_s = round(len(gone) / retention_s)  # the same key set as the raw side
    res["retention_vs_raw"] = round(memoryd_keys_per_s / res["raw_keys_per_s"], 3)
    res["raw_wall_us_per_expired"] = round(raw_s * 1e6 / max(expired, 1), 1)
    res.update(
        memoryd_keys_per_s=memoryd_keys_per_s,
        ratio=res["retention_vs_raw"],
        sst_before_bytes=before["sst_bytes"],
        sst_after_bytes=content["sst_bytes_after"],
        sst_after_ratio=round(content["sst_bytes_after"] / before["sst_bytes"], 3),
    )
    res["sst_reduction_background"] = round(1 - after_bg["sst_bytes"] / before["sst_bytes"], 3)
    res["sst_reduction_full"] = round(1 - full["sst_bytes_after"] / before["sst_bytes"], 3)
    if args.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:34} {v}")
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if lost == 0 and wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

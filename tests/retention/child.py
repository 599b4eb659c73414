"""Run archive work in a separate OS process (for kill, boundary and concurrency tests).

python -m tests.retention.child wave PATH NOW [MAX_DOCS [PURGE_KEYS [MAX_SEGMENTS [MAX_VERSIONS]]]]
python -m tests.retention.child tick PATH NOW DELETED_KEYS_TRIGGER
python -m tests.retention.child hold-wave PATH       (shared boundary until killed)
python -m tests.retention.child hold-exclusive PATH  (exclusive boundary until killed)
python -m tests.retention.child serve PATH NOW       (worker model, JSON lines on stdin)
python -m tests.retention.child migrate-copy PATH
"""

from __future__ import annotations

import sys
import threading
import time

import orjson

from memoryd.base.errors import MemorydError
from memoryd.retention.boundary import Boundary, Migration
from memoryd.retention.maintenance import Maintenance, TickBounds
from memoryd.retention.policy import RetentionPolicy
from memoryd.retention.waves import run_wave
from memoryd.storage.archive import ArchiveStore


def out(value) -> None:
    sys.stdout.write(orjson.dumps(value).decode() + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> None:
    cmd, path = argv[0], argv[1]
    policy = RetentionPolicy()
    if cmd == "wave":
        now, docs = float(argv[2]), int(argv[3]) if len(argv) > 3 else 256
        keys = int(argv[4]) if len(argv) > 4 else 64
        segments = int(argv[5]) if len(argv) > 5 else 64
        versions = int(argv[6]) if len(argv) > 6 else 4096
        with ArchiveStore.open_primary(path) as store:
            expired = []
            while True:
                r = run_wave(
                    store,
                    policy,
                    Boundary(path),
                    now=now,
                    max_documents=docs,
                    purge_batch_keys=keys,
                    max_segments=segments,
                    max_versions=versions,
                )
                expired += r.expired
                if r.exhausted:
                    break
            out({"expired": expired, "pending": store.ledgers.pending_purge()})
    elif cmd == "tick":
        now, trigger = float(argv[2]), int(argv[3])
        with ArchiveStore.open_primary(path) as store:
            bounds = TickBounds(compaction_deleted_keys=trigger, purge_batch_keys=64)
            m = Maintenance(store, policy, Boundary(path), bounds=bounds)
            out(m.tick(now=now, force=True).as_dict())
    elif cmd in ("hold-wave", "hold-exclusive"):
        b = Boundary(path)
        ctx = b.retention_wave() if cmd == "hold-wave" else b.exclusive()
        with ctx:
            out({"holding": cmd})
            time.sleep(600)
    elif cmd == "migrate-copy":
        out(Migration(path).copy(2))
    elif cmd == "serve":
        serve(path, float(argv[2]))


def serve(path: str, now: float) -> None:
    """The worker model: one process owns the primary; a thread serves pin and lease
    requests while the main thread runs retention waves between them."""
    store = ArchiveStore.open_primary(path, sync=False)
    go = threading.Event()
    lock = threading.Lock()

    def requests() -> None:
        for line in sys.stdin:
            req = orjson.loads(line)
            if req["op"] == "go":
                go.set()
                continue
            if req["op"] == "stop":
                break
            try:
                if req["op"] == "pin":
                    store.protections.pin(req["locator"], now=now)
                elif req["op"] == "lease":
                    # requested before the versions' deadline (due versions are not
                    # leasable), delivered while the wave runs
                    store.protections.acquire_leases(
                        req["client"], "p", req["locators"], ttl=12 * 86400, now=now - 11 * 86400
                    )
                elif req["op"] == "release":
                    store.protections.release_leases(req["client"])
                result = {"id": req["id"], "ok": True}
            except MemorydError as exc:
                result = {"id": req["id"], "ok": False, "code": exc.code}
            with lock:
                out(result)
        go.set()

    t = threading.Thread(target=requests)
    t.start()
    with lock:
        out({"ready": True})
    go.wait()
    waves = 0
    while True:
        r = run_wave(
            store,
            RetentionPolicy(),
            Boundary(path),
            now=now,
            max_documents=8,
            purge_batch_keys=32,
            max_segments=1,
        )
        waves += 1
        if r.exhausted:
            break
    with lock:
        out({"wave_done": waves})
    t.join()
    store.close()


if __name__ == "__main__":
    main(sys.argv[1:])

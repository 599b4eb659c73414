"""The writes a control-socket read implies, coalesced off the request path.

A recall's coarse access records and a search's retrieval leases are archive
writes, so they go to the retention worker as jobs. Enqueueing one job per
request would cost every read a transaction on the authority and the retention
worker an fsynced RocksDB write (and a lease heartbeat would queue behind
them), so a request only notes what it showed, and a flusher thread enqueues
what is new at most once per ``control_write_flush_seconds``:

* access records: at most one per document per bucket
  (``retention_access_bucket_seconds``), as the archive keeps them; a document
  already handed over for this bucket is not handed over again;
* retrieval leases: a version leased less than half a lease ago still has half
  its protection left and is not leased again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from memoryd.base import logs
from memoryd.base.errors import MemorydError
from memoryd.storage.archive import parse_locator

Enqueue = Callable[[str, dict], object]


class DeferredWrites:
    def __init__(self, enqueue: Enqueue, *, period: float, access_bucket_seconds: float) -> None:
        self._enqueue = enqueue
        self.period = float(period)
        self.bucket_seconds = float(access_bucket_seconds)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._bucket = -1  # the access bucket the documents below were handed over in
        self._accessed: set[str] = set()  # documents handed over (or pending) this bucket
        self._access: dict[int, dict[str, float]] = {}  # pending: bucket -> {locator: now}
        self._leased: dict[str, float] = {}  # locator -> when its last lease runs out
        self._leases: dict[float, dict[str, float]] = {}  # pending: seconds -> {locator: now}

    # -- the request side (no I/O) -----------------------------------------------

    def access(self, args: dict) -> dict:
        """Note the versions a recall showed; ``{"deferred": N}`` documents new this bucket."""
        now = float(args["now"])
        new = 0
        with self._lock:
            bucket = int(now // self.bucket_seconds)
            if bucket != self._bucket:
                self._bucket, self._accessed = bucket, set()
            for loc in args["locators"]:
                doc = parse_locator(loc)[0]
                if doc not in self._accessed:
                    self._accessed.add(doc)
                    self._access.setdefault(bucket, {})[loc] = now
                    new += 1
        if new:
            self._wake.set()
        return {"deferred": new}

    def retrieval_lease(self, args: dict) -> dict:
        """Note the versions a search returned; ``{"deferred": N}`` leases to take."""
        now, seconds = float(args["now"]), float(args["seconds"])
        new = 0
        with self._lock:
            pending = self._leases.setdefault(seconds, {})
            for loc in args["locators"]:
                if self._leased.get(loc, 0.0) - seconds / 2 <= now:
                    self._leased[loc] = now + seconds
                    pending[loc] = max(now, pending.get(loc, 0.0))
                    new += 1
        if new:
            self._wake.set()
        return {"deferred": new}

    # -- the flusher -------------------------------------------------------------

    def start(self) -> None:
        self._stopped.clear()
        self._thread = threading.Thread(target=self._run, name="control-deferred", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the flusher and hand over what is still pending."""
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self.flush()

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait()
            if self._stopped.wait(self.period):  # gather what the next requests show
                return
            self._wake.clear()
            self.flush()

    def flush(self) -> None:
        """One job per kind of write; a failure is logged, the records are best effort."""
        for op, args in self._take():
            try:
                self._enqueue(op, args)
            except MemorydError as exc:
                logs.event(
                    "control_write_dropped",
                    f"control socket: {op} for {len(args['locators'])} versions not queued "
                    f"({exc.code}: {exc})",
                    level=logging.WARNING,
                    op=op,
                )

    def _take(self) -> list[tuple[str, dict]]:
        with self._lock:
            access, self._access = self._access, {}
            leases, self._leases = self._leases, {}
            # forget leases that ran out: the map stays as small as what is protected
            wall = time.time()
            self._leased = {loc: until for loc, until in self._leased.items() if until > wall}
        jobs = [("access", {}, shown) for shown in access.values()]
        jobs += [("retrieval_lease", {"seconds": sec}, shown) for sec, shown in leases.items()]
        return [
            (op, {"locators": list(shown), "now": max(shown.values()), **extra})
            for op, extra, shown in jobs
            if shown
        ]

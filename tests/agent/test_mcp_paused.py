"""Through the agent's own interface while the supervisor's claims are paused (another
process holds a read snapshot that pins the WAL): ``recall`` answers at once and says
why its session's remembered fact is not decided yet; ``forget`` by the text just
remembered waits on through the pause (it needs the record), and forgets it once the
reader lets go."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import pytest

from memoryd.base.config import MEMORY_FORGET_SETTLE_SECONDS
from tests.agent.conftest import PROJECT, call, connect, ingest_sources
from tests.conftest import marker, status, wait_for, wal_reader
from tests.workers.test_walguard import PAUSE

pytestmark = pytest.mark.slow

RELEASE_AFTER = 2.0  # seconds the reader keeps the claims paused during ``forget``


def test_recall_answers_at_once_and_forget_waits_through_paused_claims(
    home: Path, tmp_path: Path, background
) -> None:
    ingest_sources(home, tmp_path, PROJECT)
    word = marker("pinned")
    fact = f"Release tags {word} are cut from the main branch."
    with wal_reader(home) as reader:
        background("run", "--workers", "1", env=PAUSE)
        wait_for(lambda: status(home)["claims_paused"], what="claims to pause")

        def let_go() -> None:  # the reader ends its snapshot: claims run again
            reader.stdin.write("\n")
            reader.stdin.flush()

        async def scenario() -> tuple[dict, dict, float]:
            async with connect(home, **PAUSE) as s:
                await call(s, "remember", candidates=[{"text": fact}])
                recalled = await call(s, "recall", query=f"where are release tags {word} cut")
                timer = threading.Timer(RELEASE_AFTER, let_go)
                started = time.monotonic()  # before the timer: it cannot fire earlier
                timer.start()
                try:
                    gone = await call(s, "forget", text=fact)
                finally:
                    timer.join()
                return recalled, gone, time.monotonic() - started

        recalled, gone, waited = anyio.run(scenario)
    assert "paused claims" in recalled["memory_pending"]["why"], recalled["memory_pending"]
    # without the wait it found no record (the fact was still a candidate) and said so
    assert len(gone["forgotten"]) == 1, gone
    assert RELEASE_AFTER <= waited < MEMORY_FORGET_SETTLE_SECONDS, waited

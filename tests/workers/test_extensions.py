"""A supervisor runs the extensions it is given, and only those: ``start`` before the
first turn, ``in_turn`` inside a turn's open transaction (what it writes commits with
the turn), ``after_commit`` after each commit, ``stop`` once at the end; direct work an
extension submits runs in a worker of its kind's pool, off the queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryd.app import default_registry
from memoryd.base.config import load_config
from memoryd.operations.api import Memoryd
from memoryd.operations.control_client import socket_path
from memoryd.queue import JobSpec
from memoryd.workers.extensions import Direct, Extension, Running
from memoryd.workers.supervisor import Supervisor


class Recorder(Extension):
    """Notes each hook, checks what it may see, and submits one direct ``echo``."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.in_transaction: list[bool] = []
        self.socket_seen: list[bool] = []
        self.direct = Direct("echo", {"said": "directly"})

    def start(self, sup: Running) -> None:
        self.calls.append("start")
        self.socket_seen.append(socket_path(sup.home).exists())
        assert sup.inbox is not None and sup.inbox.submit(self.direct)

    def in_turn(self, tx: Any, sup: Running, tally: Any) -> None:
        self.calls.append("in_turn")
        self.in_transaction.append(tx.in_transaction)

    def after_commit(self) -> None:
        self.calls.append("after_commit")

    def stop(self) -> None:
        self.calls.append("stop")


def test_a_supervisor_runs_the_hooks_of_the_extensions_it_is_given(tmp_path: Path) -> None:
    home = tmp_path / "home"
    md = Memoryd(home)
    md.init()
    md.queue.enqueue_bulk(JobSpec("noop"), 5)
    md.close()
    recorder = Recorder()
    sup = Supervisor(
        home,
        load_config(home, {"workers": 1}),
        workers=1,
        drain=True,
        registry=default_registry(),
        extensions=[recorder],
    )
    stats = sup.run()
    assert stats.done == 5
    calls = recorder.calls
    assert calls[0] == "start" and calls[-1] == "stop" and calls.count("stop") == 1
    assert "in_turn" in calls and all(recorder.in_transaction)
    turns = [i for i, c in enumerate(calls) if c == "in_turn"]
    assert all(calls[i + 1] == "after_commit" for i in turns)  # the turn's commit came next
    assert recorder.socket_seen == [False]  # no control socket: none was given
    assert recorder.direct.done.is_set() and recorder.direct.pool == "jobs"
    assert recorder.direct.answer == {"said": "directly"}

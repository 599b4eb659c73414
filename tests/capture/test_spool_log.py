"""The hook spool's session logs: records that frame themselves (a torn one is skipped,
the ones after it kept), hooks of one session appending at once, a hook killed
holding the log's lock mid-record, and the drain archiving every event exactly once
while hooks append and while it is itself killed (real processes throughout)."""

from __future__ import annotations

import contextlib
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from memoryd.base import hooklog, hookspool
from memoryd.capture import drain as capture
from memoryd.faces.hooks.install import command
from tests.capture.spool_drill import FileArchive, Policy, archived
from tests.hooks.conftest import run_hook
from tests.hooks.payloads import payload

ROOT = Path(__file__).resolve().parents[2]


def event(session: str, text: str) -> dict:
    return {"v": 1, "event": "PostToolUse", "agent": "claude-code", "session": session,
            "cwd": "/work/drill", "at": time.time(), "transcript_path": None,
            "kind": "tool", "tool_name": "Bash", "tool_input": {"command": text},
            "tool_response": text}  # fmt: skip


def log_path(home: Path, session: str) -> Path:
    return home / "hooks" / "spool" / hookspool.log_name(session)


def drill(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tests.capture.spool_drill", *args],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)  # fmt: skip


def acknowledged(procs: list[subprocess.Popen]) -> dict[str, str]:
    """What the appenders printed: each event's text and name, once durable."""
    done = {}
    for p in procs:
        out, _ = p.communicate(timeout=300)
        done.update(line.split(" ", 1) for line in out.splitlines())
    return done


def tool_texts(out: Path) -> list[str]:
    """The tool events the archive holds, one entry per document (a redo's copy not)."""
    return [orjson.loads(d["content"].split("\n")[1].removeprefix("input: "))["command"]
            for d in archived(str(out)).values() if d["cls"] == "ephemeral"]  # fmt: skip


def test_a_torn_record_is_skipped_and_the_records_around_it_kept(home: Path):
    """A record cut short by a kill: at the log's end it is left (a hook may still be
    writing it) and not counted; once a record follows it, it is passed over. A
    record whose bytes changed fails its checksum, and only it is lost."""
    h = str(home)
    for i in range(3):
        hookspool.append(h, event("s", f"e{i}"))
    path = log_path(home, "s")
    whole = hookspool.frame(hookspool.EVENT_RECORD, "99-1-10", hookspool.dumps(event("s", "x")))
    with open(path, "ab") as f:
        f.write(whole[: len(whole) // 2])
    assert [e["tool_input"]["command"] for _, e in hooklog.spooled(h)] == ["e0", "e1", "e2"]
    assert hooklog.waiting_events(h) == 3
    records, gap = hooklog.parse_records(path.read_bytes())
    assert (len(records), gap) == (3, False)
    hookspool.append(h, event("s", "e3"))
    records, gap = hooklog.parse_records(path.read_bytes())
    assert (len(records), gap) == (4, True)
    assert [e["tool_input"]["command"] for _, e in hooklog.spooled(h)] == ["e0", "e1", "e2",
                                                                            "e3"]  # fmt: skip
    data = bytearray(path.read_bytes())
    at = data.index(b'"command":"e1"') + len(b'"command":"')
    data[at : at + 2] = b"E1"
    path.write_bytes(bytes(data))
    assert [e["tool_input"]["command"] for _, e in hooklog.spooled(h)] == ["e0", "e2", "e3"]


def test_records_frame_themselves_and_the_checksum_is_builtin_only():
    payload_ = hookspool.dumps({"a": "caf\u00e9 \u00ff", "b": [1, 2]})
    assert b"\xff" not in payload_  # ASCII JSON: the mark starts records and nothing else
    rec = hookspool.frame(hookspool.EVENT_RECORD, "n-1-2", payload_)
    (r,), gap = hooklog.parse_records(b"junk" + rec + rec[:-1], base=100)
    assert (r.kind, r.arg, r.start, r.end, r.payload, gap) == ("E", "n-1-2", 104, 104 + len(rec),
                                                               payload_, True)  # fmt: skip
    assert hooklog.consumed_to(rec + hookspool.frame("C", 7) + hookspool.frame("C", 3)) == 7
    lettered = next(
        r for i in range(100) if not (r := hookspool.frame("E", i)).split()[3].isdigit()
    )
    upper = lettered.replace(lettered.split()[3], lettered.split()[3].upper())
    assert hooklog.parse_records(upper)[0] == []  # the checksum's case changed: a change


def test_a_log_is_read_from_its_archived_offset_a_window_at_a_time(tmp_path: Path):
    """The archived offset comes from the log's last consumed record (its head is not
    read); records are read a window on from it (a record longer than the window:
    to the log's end), and consumed records between them passed over."""
    small = [hookspool.frame("E", f"{i}-1-1", b'"%d"' % i) for i in range(3)]
    giant = hookspool.frame("E", "3-1-1", b'"' + b"g" * 5000 + b'"')
    log = tmp_path / "x.log"
    log.write_bytes(small[0] + hookspool.frame("C", len(small[0])) + small[1] + giant + small[2])
    fd = os.open(log, os.O_RDONLY)
    try:
        records, done, gap = hooklog.unarchived(fd, 100)
        got = (done, [r.arg for r in records if r.kind == "E"], gap)
        assert got == (len(small[0]), ["1-1-1"], False)
        after = records[-1].end
        with open(log, "ab") as f:
            f.write(hookspool.frame("C", after))
        records, done, _ = hooklog.unarchived(fd, 100)
        assert (done, [r.arg for r in records if r.kind == "E"]) == (after, ["3-1-1", "2-1-1"])
        assert hooklog.last_consumed(fd, os.fstat(fd).st_size) == after
    finally:
        os.close(fd)


def test_the_last_consumed_record_is_found_across_read_chunks(tmp_path: Path, monkeypatch):
    log = tmp_path / "x.log"
    data = (hookspool.frame("E", "0-1-1", b'"a"') + hookspool.frame("C", 17)
            + hookspool.frame("E", "1-1-1", b'"b"') + hookspool.frame("C", 42)
            + hookspool.frame("E", "2-1-1", b'"c"'))  # fmt: skip
    log.write_bytes(data)
    fd = os.open(log, os.O_RDONLY)
    try:
        for chunk in range(1, len(data) + 2):
            monkeypatch.setattr(hooklog, "READ_CHUNK", chunk)
            assert hooklog.last_consumed(fd, len(data)) == 42, chunk
    finally:
        os.close(fd)


def test_hooks_of_one_session_appending_at_once_keep_every_record_whole(home: Path):
    """Eight processes append 40 events each (outputs up to 150 KB) to one session's
    log at once: every acknowledged event is there, once, whole."""
    procs = [drill("append", str(home), "same", "40", "60000", f"p{i}") for i in range(8)]
    done = acknowledged(procs)
    assert all(p.returncode == 0 for p in procs)
    assert len(done) == 320
    kept = hooklog.spooled(str(home))
    assert sorted(e["tool_input"]["command"] for _, e in kept) == sorted(done)
    assert sorted(n for n, _ in kept) == sorted(done.values())
    records, gap = hooklog.parse_records(log_path(home, "same").read_bytes())
    assert len(records) == 320 and not gap
    assert os.stat(log_path(home, "same")).st_mode & 0o777 == hookspool.FILE_MODE


HOLD_HALF = """
import os, sys, time
from memoryd.base import hookspool
path, record = sys.argv[1], hookspool.frame("E", "1-1-1", hookspool.dumps({"a": "b" * 5000}))
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
os.lockf(fd, os.F_LOCK, 0)
os.write(fd, record[: len(record) // 2])
print("holding", flush=True)
time.sleep(120)
"""


def test_a_hook_killed_mid_record_holding_the_lock(home: Path, tmp_path: Path):
    """A process killed holding the log's lock with half a record written: the hook
    waiting on the lock goes on once it is dead, its event is kept after the torn
    bytes, and the drain archives it once and nothing of the torn record."""
    proj = tmp_path / "proj"
    proj.mkdir()
    first = payload("claude-code", "PostToolUse", "s1", proj, tmp_path / "none",
                    tool_response={"stdout": "first"})  # fmt: skip
    assert run_hook(home, "PostToolUse", first).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD_HALF, str(log_path(home, "s1"))],
                              env=env, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdout.readline() == "holding\n"
    second = payload("claude-code", "PostToolUse", "s1", proj, tmp_path / "none",
                     tool_response={"stdout": "second"})  # fmt: skip
    hook = subprocess.Popen(
        [sys.executable, "-m", "memoryd.faces.hooks", "PostToolUse", "--home", str(home)],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    hook.stdin.write(orjson.dumps(second))
    hook.stdin.close()
    time.sleep(1.0)
    assert hook.poll() is None  # waiting on the lock
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert hook.wait(60) == 0 and not hookspool.read_failures(str(home))
    kept = [e["tool_response"]["stdout"] for _, e in hooklog.spooled(str(home))]
    assert kept == ["first", "second"]
    out = tmp_path / "archive.jsonl"
    capture.drain(str(home), FileArchive(str(out)), Policy(), dict, 30)
    texts = sorted(d["content"] for d in archived(str(out)).values())
    assert len(texts) == 2 and "first" in texts[0] and "second" in texts[1]
    assert not hooklog.waiting(str(home))


def test_a_drain_while_hooks_append_archives_each_event_once(home: Path, tmp_path: Path,
                                                             monkeypatch):  # fmt: skip
    """Appenders of three sessions run while the drain plans and applies batches over
    and over, its logs rotated at 16 KB archived (a hook then starts the next log):
    every acknowledged event is archived once, and the spool ends empty."""
    monkeypatch.setattr(capture, "ROTATE_BYTES", 16 * 1024)
    monkeypatch.setattr(capture, "MAX_BATCH_EVENTS", 7)
    out = tmp_path / "archive.jsonl"
    procs = [drill("append", str(home), f"s{i % 3}", "60", "3000", f"a{i}") for i in range(6)]
    store = FileArchive(str(out))
    while any(p.poll() is None for p in procs):
        capture.drain(str(home), store, Policy(), dict, 0.05)
    done = acknowledged(procs)
    capture.drain(str(home), store, Policy(), dict, 60)
    assert len(done) == 360
    texts = tool_texts(out)
    assert sorted(texts) == sorted(done)  # each once
    assert not hooklog.waiting(str(home)) and not capture.pending_batches(str(home))
    sealed = [n for n in hooklog.log_names(str(home)) if n.endswith(hookspool.SEALED_SUFFIX)]
    assert sealed == []


@pytest.mark.parametrize("seed", [1, 2])
def test_drains_killed_at_random_while_hooks_append_archive_each_event_once(home: Path,
                                                                            tmp_path: Path,
                                                                            seed: int):  # fmt: skip
    """The drain as its own process, SIGKILLed at random moments (and its logs rotated
    at 8 KB archived, idle after 0.3 s) while hooks append: the next drain redoes a
    planned batch with the same documents, so each acknowledged event is archived
    once; a hook killed at random loses only what it had not acknowledged."""
    rng = random.Random(seed)
    out = tmp_path / "archive.jsonl"
    appenders = [drill("append", str(home), f"s{i % 4}", "250", "2000", f"k{i}")
                 for i in range(6)]  # fmt: skip
    victims = [drill("append", str(home), "s0", "200", "50000", f"v{i}") for i in range(2)]
    kills = 0
    span = 0.6  # kills land within this many seconds of a drain's start: what one lasts
    drains = 0  # hooks done before a drain was killed (a fast machine): drains go on a while
    while any(p.poll() is None for p in appenders) or (kills < 3 and drains < 40):
        drains += 1
        d = drill("drain", str(home), str(out), "8192", "0.3")
        wait = rng.uniform(0.1, 1.0) * span
        time.sleep(wait)
        if d.poll() is None:
            d.send_signal(signal.SIGKILL)
            kills += 1
        else:  # it ended first (a fast machine): the next kill comes sooner
            span = max(0.02, 0.8 * wait)
        d.communicate()
        for v in victims:
            if v.poll() is None and rng.random() < 0.2:
                v.send_signal(signal.SIGKILL)
    done = acknowledged(appenders)
    victim_done = acknowledged(victims)
    final = drill("drain", str(home), str(out), "8192", "0.3")
    final.communicate(timeout=300)
    assert final.returncode == 0 and kills > 0
    texts = tool_texts(out)
    assert len(texts) == len(set(texts))  # nothing twice
    assert set(done) | set(victim_done) <= set(texts)  # nothing acknowledged lost
    assert len(done) == 1500
    assert not hooklog.waiting(str(home), 0.3) and not capture.pending_batches(str(home))


#: A hook's append with a pause: ``lock`` between opening the log and taking its lock,
#: ``write`` between the check that its file is the live one and the write.
PAUSED = """
import os, sys, time
from memoryd.base import hookspool
where, home = sys.argv[1], sys.argv[2]
real_lockf, real_write = os.lockf, os.write
def pause(what):
    if where == what:
        print("paused", flush=True)
        time.sleep(3)
def lockf(fd, cmd, n):
    if cmd == os.F_LOCK:
        pause("lock")
    return real_lockf(fd, cmd, n)
def write(fd, data):
    if data[:1] == hookspool.MARK:
        pause("write")
    return real_write(fd, data)
os.lockf, os.write = lockf, write
event = {"session": "s", "kind": "tool", "tool_name": "Bash", "at": time.time(),
         "tool_input": {"command": "late"}, "tool_response": "late", "cwd": "/w"}
print(hookspool.append(home, event), flush=True)
"""


@pytest.mark.parametrize("where", ["lock", "write"])
def test_a_log_renamed_away_under_a_hook_loses_nothing(home, tmp_path, monkeypatch, where):
    """The drain renames an idle log away while a hook is at it: the hook opened the
    log but has not taken its lock (``lock``: it then finds its file is no longer the
    live one and starts a new log), or holds the lock and has not written (``write``:
    the drain waits on the lock before reading). Either way its event is archived,
    once."""
    monkeypatch.setattr(capture, "IDLE_SECONDS", 0.0)
    h = str(home)
    hookspool.append(h, event("s", "early"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    hook = subprocess.Popen([sys.executable, "-c", PAUSED, where, h], env=env,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert hook.stdout.readline() == "paused\n"
    out = tmp_path / "archive.jsonl"
    store = FileArchive(str(out))
    capture.drain(h, store, Policy(), dict, 30)  # renames the log, archives, removes it
    assert hook.wait(60) == 0
    capture.drain(h, store, Policy(), dict, 30)
    assert sorted(tool_texts(out)) == ["early", "late"]
    assert not hooklog.log_names(h) and not capture.pending_batches(h)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def test_real_hooks_killed_at_random_keep_the_log_whole(home: Path, tmp_path: Path):
    """``memoryd hook PostToolUse`` processes with 3 MB outputs, one session, every
    other one SIGKILLed as its write shows in the log (mid-write: a torn record, as a
    rule) or at a random moment before: each hook that exited is archived once, a
    killed one at most once, and the hooks after a torn record are kept."""
    rng = random.Random(5)
    proj = tmp_path / "proj"
    proj.mkdir()
    argv = shlex.split(command("PostToolUse", "claude-code", str(home)))
    log = log_path(home, "s1")
    exited, killed = [], []
    for i in range(10):  # five exit, five are killed
        p = payload("claude-code", "PostToolUse", "s1", proj, tmp_path / "none",
                    tool_input={"command": f"h{i}"},
                    tool_response={"stdout": f"h{i} " + "y" * 3_000_000})  # fmt: skip
        hook = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        with contextlib.suppress(BrokenPipeError):
            hook.stdin.write(orjson.dumps(p))
            hook.stdin.close()
        if i % 2:  # killed as its write shows in the log (or at a random moment before)
            size, deadline = _size(log), time.monotonic() + rng.uniform(0.0, 3.0)
            while hook.poll() is None and _size(log) == size and time.monotonic() < deadline:
                time.sleep(0.0002)
            hook.send_signal(signal.SIGKILL)
        code = hook.wait(120)
        (exited if code == 0 else killed).append(f"h{i}")
    out = tmp_path / "archive.jsonl"
    capture.drain(str(home), FileArchive(str(out)), Policy(), dict, 60)
    texts = tool_texts(out)
    assert len(texts) == len(set(texts)) and set(exited) <= set(texts) <= set(exited + killed)
    assert killed  # the drill did kill

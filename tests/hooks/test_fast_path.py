"""What a hook process runs without ``re`` or ``json``: the spool's JSON
(:mod:`memoryd.base.hookjson`) and the redaction's precompiled patterns
(:mod:`memoryd.text.precompiled`) give what ``json`` and ``re`` give."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import memoryd
from memoryd.base import hookjson
from memoryd.faces.hooks import event
from memoryd.faces.hooks.install import command
from memoryd.text import precompiled, redact
from tests.hooks.conftest import spooled

VALUES = [
    {"v": 1, "text": 'caf\u00e9 \u2603 \U0001f600 "quoted" \\ \n\t\x00', "n": None},
    [1, -2, 10**30, 0.1, 1e-300, 1.5e300, -0.0, True, False, None, ""],
    {"nested": {"a": [{"b": []}, {}], "k\u00e9y": "lone \ud800 surrogate"}},
    "a string alone",
    3.25,
]


@pytest.mark.parametrize("value", VALUES)
def test_dumps_and_loads_are_json_s(value):
    text = json.dumps(value, separators=(",", ":"))
    assert hookjson.dumps(value) == text.encode()
    assert hookjson.loads(text.encode()) == json.loads(text.encode())
    assert hookjson.loads(f" \n{text}\t\r ") == json.loads(f" \n{text}\t\r ")


def test_loads_takes_what_json_takes_and_refuses_the_rest():
    for data in (b'\xef\xbb\xbf{"a":1}', '{"a":1}'.encode("utf-16"), b"[NaN,Infinity]"):
        assert repr(hookjson.loads(data)) == repr(json.loads(data))
    for data in (b"", b"  ", b"{", b"{} {}", b"[1,]", b"nul", b'"\\x"'):
        with pytest.raises(ValueError):
            json.loads(data)
        with pytest.raises(ValueError):
            hookjson.loads(data)


def test_dumps_refuses_what_json_refuses_and_goes_on():
    with pytest.raises(TypeError):
        hookjson.dumps({"a": {1, 2}})
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError):
        hookjson.dumps(loop)
    assert hookjson.dumps([[], []]) == b"[[],[]]"


SOURCES = [(r"(?i)\bkey\s*=\s*(?P<value>\S{6,})", 0), (r"<p>.*?(?:</p>|\Z)", re.S), ("x{3,}", 0)]


def test_patterns_from_the_cache_are_re_s(tmp_path: Path):
    """The first load compiles and keeps the code; the next builds the same patterns
    from it (``Pattern.__eq__`` compares the compiled code)."""
    cache = tmp_path / "c.sre"
    compiled = [re.compile(p, f) for p, f in SOURCES]
    assert precompiled.load("spec", lambda: SOURCES, str(cache)) == compiled
    assert cache.exists()
    again = precompiled.load("spec", lambda: pytest.fail("compiled again"), str(cache))
    assert again == compiled
    assert [p.groupindex for p in again] == [p.groupindex for p in compiled]


@pytest.mark.parametrize("content", [b"", b"not marshal", None])
def test_a_stale_or_broken_cache_is_compiled_again_and_rewritten(tmp_path: Path, content):
    cache = tmp_path / "c.sre"
    if content is None:
        precompiled.load("other spec", lambda: SOURCES[:1], str(cache))
    else:
        cache.write_bytes(content)
    assert precompiled.load("spec", lambda: SOURCES, str(cache)) == [
        re.compile(p, f) for p, f in SOURCES]  # fmt: skip
    assert precompiled.load("spec", lambda: pytest.fail("compiled again"), str(cache))


def test_secret_file_names_are_fnmatch_s():
    names = [".env", ".env.local", "prod.env", "id_rsa.pub", "key.pem", "credentials",
             "my-credentials-prod.json", "service-account-1.json", "secrets.yaml", "x.secrets",
             "README.md", "env", "environment.py", "credentials.txt.bak", "id_rs",
             "a.keys"]  # fmt: skip
    for name in names:
        expected = any(fnmatch.fnmatchcase(name, glob) for glob in redact.SECRET_FILES)
        assert redact.secret_file(f"/some/dir/{name}") is expected, name


def test_a_hook_process_imports_neither_re_nor_json(home: Path, tmp_path: Path):
    """The installed command's interpreter (``-I -S``) keeps a tool call and a prompt,
    redacted (its session's log locked by ``os.lockf``, its records checksummed by
    builtins: no ``fcntl`` or ``zlib`` library loaded; the logs' reader not imported),
    with the patterns from the cache (the first run may write it), and asks for recall
    (no supervisor here) without ``socket``'s import."""
    root = str(Path(memoryd.__file__).resolve().parent.parent)
    secret = "export API_TOKEN=abcdef123456"
    payload = {"session_id": "s", "cwd": str(tmp_path), "tool_name": "Bash",
               "tool_input": {"command": secret}, "prompt": secret}  # fmt: skip
    code = (
        f"import sys; sys.path.insert(0, {root!r}); from memoryd.faces.hooks import event; "
        "data = sys.stdin.buffer.read(); "
        f"[event.handle(e, 'claude-code', {str(home)!r}, data) "
        "for e in ('PostToolUse', 'UserPromptSubmit')]; "
        "print(sorted({'re', 'json', 'socket', 'enum', 'fnmatch', 'contextlib', 'hashlib', "
        "'fcntl', 'zlib', 'binascii', 'memoryd.base.hooklog'} & set(sys.modules)))"
    )
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=json.dumps(
            payload).encode(), capture_output=True, check=True)  # fmt: skip
    assert proc.stdout.decode().strip() == "[]"
    kept = spooled(home)
    texts = [e["tool_input"]["command"] if e["kind"] == "tool" else e["text"] for e in kept]
    assert texts == ["export API_TOKEN=[redacted:assignment]"] * 4


#: Prepended to the installed command's code: each fsync, fdatasync and the process's
#: ``os._exit`` say so on stderr (unbuffered ``os.write``) as they happen.
TRACE = (
    "import os; _fsync, _fdatasync, _exit = os.fsync, os.fdatasync, os._exit; "
    "os.fsync = lambda fd: (os.write(2, b'fsync '), _fsync(fd))[1]; "
    "os.fdatasync = lambda fd: (os.write(2, b'fdatasync '), _fdatasync(fd))[1]; "
    "os._exit = lambda code: (os.write(2, b'_exit'), _exit(code)); "
)
HELD = {
    "atexit": "import atexit; atexit.register(os.write, 2, b'atexit'); ",
    "thread": "import threading, time; threading.Thread(target=lambda: (time.sleep(0.2), "
    "os.write(2, b'thread'))).start(); ",
}


def traced_hook(home: Path, tmp_path: Path, args: list[str], held: str = "") -> tuple:
    """The installed PostToolUse command with ``args`` for its own, traced: (stdout,
    stderr)."""
    argv = shlex.split(command("PostToolUse", "claude-code", str(home)))
    argv[4] = TRACE + held + argv[4]
    argv[5:] = args
    payload = {"session_id": "s", "cwd": str(tmp_path), "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "tool_response": "a file"}  # fmt: skip
    proc = subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True,
                          timeout=60, check=True)  # fmt: skip
    return proc.stdout.decode(), proc.stderr.decode()


def test_a_hook_ends_without_teardown_once_its_event_is_fsynced(home: Path, tmp_path: Path):
    """``os._exit`` comes after the event is synced (its record's data; the directory
    too when the hook made the session's log: the first event, and never again), and
    what the hook printed (buffered: ``-I`` ignores PYTHONUNBUFFERED) still reaches the
    pipe."""
    out, err = traced_hook(home, tmp_path, ["PostToolUse", "--home", str(home)])
    assert (out, err) == ("", "fdatasync fsync _exit")
    out, err = traced_hook(home, tmp_path, ["PostToolUse", "--home", str(home)])
    assert (out, err) == ("", "fdatasync _exit")
    assert [e["tool_response"] for e in spooled(home)] == ["a file", "a file"]
    out, err = traced_hook(home, tmp_path, ["--help"])
    assert (out, err) == (event.USAGE, "_exit")


@pytest.mark.parametrize("held", HELD)
def test_an_atexit_handler_or_a_live_thread_keeps_the_full_exit(home, tmp_path, held):
    out, err = traced_hook(home, tmp_path, ["--help"], HELD[held])
    assert (out, err) == (event.USAGE, held)

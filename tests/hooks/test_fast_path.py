"""What a hook process runs without ``re`` or ``json``: the spool's JSON
(:mod:`memoryd.base.hookjson`) and the redaction's precompiled patterns
(:mod:`memoryd.text.precompiled`) give what ``json`` and ``re`` give."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memoryd
from memoryd.base import hookjson
from memoryd.text import precompiled, redact

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
    redacted, with the patterns from the cache (the first run may write it), and asks
    for recall (no supervisor here) without ``socket``'s import."""
    root = str(Path(memoryd.__file__).resolve().parent.parent)
    secret = "export API_TOKEN=abcdef123456"
    payload = {"session_id": "s", "cwd": str(tmp_path), "tool_name": "Bash",
               "tool_input": {"command": secret}, "prompt": secret}  # fmt: skip
    code = (
        f"import sys; sys.path.insert(0, {root!r}); from memoryd.faces.hooks import event; "
        "data = sys.stdin.buffer.read(); "
        f"[event.handle(e, 'claude-code', {str(home)!r}, data) "
        "for e in ('PostToolUse', 'UserPromptSubmit')]; "
        "print(sorted({'re', 'json', 'socket', 'enum', 'fnmatch', 'contextlib', 'hashlib'} "
        "& set(sys.modules)))"
    )
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=json.dumps(
            payload).encode(), capture_output=True, check=True)  # fmt: skip
    assert proc.stdout.decode().strip() == "[]"
    spool = Path(home) / "hooks" / "spool"
    kept = [json.loads(p.read_bytes()) for p in sorted(spool.iterdir())]
    texts = [e["tool_input"]["command"] if e["kind"] == "tool" else e["text"] for e in kept]
    assert texts == ["export API_TOKEN=[redacted:assignment]"] * 4

"""Archive and retention: human output is prose or tables, never a
Python repr, for every archive and retention command."""

from __future__ import annotations

import re
import time

import orjson

REPR = re.compile(r"[{}]|\[\s*'|'\s*:\s")


def test_no_archive_or_retention_command_prints_a_python_repr(cli, tmp_path):
    path = tmp_path / "chat.jsonl"
    stamp = time.time() - 60
    lines = [
        {"role": "user", "content": "we deploy the heron service on fridays", "timestamp": stamp},
        {"role": "tool", "content": "heron deployed", "timestamp": stamp},
    ]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    added = cli("archive", "add", str(path), "--project", "demo", "--new-project")
    assert added.code == 0, added.stderr
    session, tool = cli(
        "archive", "add", str(path), "--project", "demo", "--new-project", "--json"
    ).json()["locators"]
    commands = [
        ("archive", "search", "when do we deploy the heron service?", "--project", "demo"),
        ("archive", "get", session),
        ("archive", "pin", session),
        ("archive", "unpin", session),
        ("archive", "lease", "acquire", "--client", "c", "--project", "demo", session),
        ("archive", "lease", "renew", "--client", "c"),
        ("archive", "lease", "release", "--client", "c"),
        ("archive", "migrate"),
        ("archive", "migrate", "--copy"),
        ("archive", "migrate", "--verify"),
        ("archive", "migrate", "--commit"),
        ("retention", "run", "--dry-run"),
        ("retention", "run"),
        ("retention", "status"),
        ("archive", "forget", tool),
    ]
    printed = {}
    for args in [("archive", "add", str(path), "--project", "demo", "--new-project"), *commands]:
        res = cli(*args)
        assert res.code == 0, (args, res.stderr)
        assert not REPR.search(res.stdout), (args, res.stdout)
        printed[args] = res.stdout
    assert f"archived {session}" in added.stdout
    assert (
        "already archived"
        in printed[("archive", "add", str(path), "--project", "demo", "--new-project")]
    )
    assert session in printed[commands[0]]
    # a version's class, project and expiry, as its JSON answer has them
    got = printed[("archive", "get", session)].splitlines()[0]
    assert got.startswith(f"{session}: live, conversation, project demo, expires 20"), got
    assert "next: memoryd archive migrate --verify" in printed[("archive", "migrate", "--copy")]
    assert "--commit" in printed[("archive", "migrate", "--verify")]
    assert "no archive migration in progress" in printed[("archive", "migrate", "--commit")]

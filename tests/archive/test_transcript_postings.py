"""A JSONL agent transcript archived through the real CLI: its postings know who said
each word (role and named speaker), in which turn, and which words are tool output."""

from __future__ import annotations

import orjson

from memoryd.storage.archive import ArchiveStore

MESSAGES = [
    {"role": "user", "content": "Priya: the nightly export to the billing bucket failed"},
    {"role": "assistant", "content": "Felix: I will rerun the export with verbose logs"},
    {"role": "tool", "content": "ERROR export billing: permission denied on bucket"},
    {"role": "user", "content": "Priya: grant the export role write access then"},
]


def test_jsonl_transcript_postings_carry_speakers_turns_and_tool_output(cli, home, tmp_path):
    path = tmp_path / "t.jsonl"
    stamped = [{**m, "timestamp": 1_718_000_000 + i} for i, m in enumerate(MESSAGES)]
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in stamped))
    res = cli(
        "archive",
        "add",
        str(path),
        "--project",
        "ops",
        "--new-project",
        "--session",
        "night",
        "--json",
        "--imported",
    )  # 2024: history past its class age
    assert res.code == 0, res.stderr
    session_loc, tool_loc = res.json()["locators"]
    with ArchiveStore.open_primary(home / "archive", sync=False) as store:
        export, tool_export, bucket = store.postings.read_postings(
            "ops", [(session_loc, "export"), (tool_loc, "export"), (session_loc, "bucket")]
        )
    assert [(h.turn.index, h.turn.role, h.turn.speaker, h.turn.tool) for h in export.turns] == [
        (0, "user", "priya", False),
        (1, "assistant", "felix", False),
        (2, "user", "priya", False),  # the tool message is not a turn of the session
    ]
    assert [(h.turn.tool, h.turn.speaker) for h in tool_export.turns] == [(True, None)]
    assert bucket.tf == 1 and bucket.turns[0].turn.speaker == "priya"

"""``memoryd hook EVENT`` fed each agent's payloads: what the agent reads, what is kept."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memoryd.base import hookspool
from tests.conftest import files_holding, marker, run_cli
from tests.hooks.conftest import context_of, run_hook, spooled
from tests.hooks.payloads import EVENTS, payload, tool_line, transcript_line

AGENTS = ("claude-code", "codex")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    return d


@pytest.mark.parametrize(("agent", "via_cli"), [(a, False) for a in AGENTS] + [(AGENTS[0], True)])
def test_each_event_exits_0_and_keeps_what_it_brings(agent, via_cli, home, project, tmp_path):
    """Every event answers 0; only SessionStart and UserPromptSubmit may print, and with
    nothing recalled (an empty home) they print nothing. The prompt, the tool call and
    the transcript's text turns are spooled, tool blocks of the transcript are not. The
    same through the installed command and through ``memoryd hook``."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(transcript_line(agent, "user", "plan the cache")
                           + tool_line(agent)
                           + transcript_line(agent, "assistant", "use an LRU"))  # fmt: skip
    kinds = []
    for event in EVENTS:
        data = payload(agent, event, "s1", project, transcript)
        proc = run_hook(home, event, data, agent, via_cli=via_cli)
        assert proc.returncode == 0, proc.stderr
        assert context_of(proc, event) is None
        kinds.append([e["kind"] for e in spooled(home)])
        assert not hookspool.read_failures(str(home)), hookspool.read_failures(str(home))
    events = spooled(home)
    assert [e["kind"] for e in events].count("tool") == 1
    assert [e["kind"] for e in events].count("turn") == 1  # the prompt
    # Stop read the transcript; the events after it found nothing new
    (piece,) = [e for e in events if e["kind"] == "transcript"]
    assert [(t["role"], t["text"]) for t in piece["transcript"]["turns"]] == [
        ("user", "plan the cache"), ("assistant", "use an LRU")]  # fmt: skip
    assert (piece["transcript"]["from"], piece["transcript"]["to"]) == (
        0, transcript.stat().st_size)  # fmt: skip


def test_the_transcript_is_read_on_from_its_offset(home, project, tmp_path):
    """A resumed session's next read takes only the lines written since; a line being
    written (no newline yet) waits."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(transcript_line("claude-code", "user", "first question"))
    run_hook(home, "Stop", payload("claude-code", "Stop", "s1", project, transcript))
    with transcript.open("ab") as f:
        f.write(transcript_line("claude-code", "assistant", "second answer"))
        f.write(b'{"type": "user", "mess')  # half a line
    run_hook(home, "PreCompact", payload("claude-code", "PreCompact", "s1", project, transcript))
    pieces = [e["transcript"] for e in spooled(home) if e["kind"] == "transcript"]
    texts = [[t["text"] for t in p["turns"]] for p in pieces]
    assert texts == [["first question"], ["second answer"]]
    assert pieces[1]["from"] == pieces[0]["to"]
    assert pieces[1]["to"] < transcript.stat().st_size


def test_a_compaction_summary_is_not_kept_again(home, project, tmp_path):
    """After a compaction Claude Code writes a boundary and a summary of what came
    before as a user message; the turns it sums up are kept already, the summary is not."""
    transcript = tmp_path / "t.jsonl"
    summary = {
        "type": "user",
        "isCompactSummary": True,
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "This session is being continued: x"},
    }
    boundary = {"type": "system", "subtype": "compact_boundary", "content": "compacted"}
    transcript.write_bytes(transcript_line("claude-code", "user", "plan the cache")
                           + orjson.dumps(boundary) + b"\n" + orjson.dumps(summary) + b"\n"
                           + transcript_line("claude-code", "assistant", "use an LRU"))  # fmt: skip
    p = payload("claude-code", "SessionStart", "s1", project, transcript, source="compact")
    run_hook(home, "SessionStart", p)
    (piece,) = [e["transcript"] for e in spooled(home) if e["kind"] == "transcript"]
    assert [t["text"] for t in piece["turns"]] == ["plan the cache", "use an LRU"]


def test_a_hook_never_fails_the_agent_and_doctor_shows_why(home, cli):
    """Bad input, a bad event name: exit 0, nothing printed, a failure recorded that
    doctor reports."""
    assert cli("init").code == 0
    bad = run_hook(home, "UserPromptSubmit", b"{not json")
    assert bad.returncode == 0 and bad.stdout == b""
    wrong = run_hook(home, "Nonsense", {"session_id": "s"})
    assert wrong.returncode == 0
    codes = [f["code"] for f in hookspool.read_failures(str(home))]
    assert codes == ["BAD_INPUT", "BAD_USAGE"]
    report = cli("doctor", "--json").json()
    (finding,) = [f for f in report["findings"] if f["check"] == "hooks"]
    assert "2 hook failure(s)" in finding["message"] and "BAD_INPUT" in finding["message"]


def test_a_full_spool_drops_the_event_and_says_so(home, cli, project, tmp_path):
    assert cli("init").code == 0
    env = {"MEMORYD_HOOK_SPOOL_MAX_BYTES": "600"}
    for i in range(4):
        p = payload("claude-code", "PostToolUse", "s1", project, tmp_path / "none",
                    tool_response={"stdout": "x" * 150 + str(i)})  # fmt: skip
        assert run_hook(home, "PostToolUse", p, env=env).returncode == 0
    assert 0 < len(spooled(home)) < 4
    assert "SPOOL_FULL" in {f["code"] for f in hookspool.read_failures(str(home))}
    report = cli("doctor", "--json", env=env).json()
    assert any(f["check"] == "hooks" and f["status"] == "action" for f in report["findings"])


def test_a_directory_switched_off_is_left_alone(home, project, tmp_path):
    (project / ".memoryd-off").write_text("")
    sub = project / "pkg"
    sub.mkdir()
    p = payload("claude-code", "UserPromptSubmit", "s1", sub, tmp_path / "none")
    proc = run_hook(home, "UserPromptSubmit", p)
    assert proc.returncode == 0 and proc.stdout == b""
    assert spooled(home) == []


def test_secrets_and_private_spans_never_reach_the_spool(home, project, tmp_path):
    """Planted markers: a key, a token assignment, a private span, a .env file's
    content. None is in any file of the home after the hooks ran."""
    private, env_secret, assigned = marker("priv"), marker("envf"), marker("assg")
    key = "AKIA" + marker("K").upper()[-16:].rjust(16, "Q")
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(transcript_line("claude-code", "user",
                                           f"note <private>{private}</private> end"))  # fmt: skip
    prompt = f"deploy with {key} and API_TOKEN={assigned}"
    run_hook(home, "UserPromptSubmit", payload("claude-code", "UserPromptSubmit", "s1", project,
                                               transcript, prompt=prompt))  # fmt: skip
    run_hook(home, "PostToolUse", payload(
        "claude-code", "PostToolUse", "s1", project, transcript, tool_name="Read",
        tool_input={"file_path": str(project / ".env")},
        tool_response={"file": {"content": f"DB={env_secret}"}}))  # fmt: skip
    run_hook(home, "Stop", payload("claude-code", "Stop", "s1", project, transcript))
    assert len(spooled(home)) == 3
    for needle in (private, env_secret, assigned, key):
        assert files_holding(home, needle[-8:].encode()) == [], needle


def test_a_prompt_recalled_through_the_supervisor_leaves_no_secret_in_the_home(
    cli, home, project, tmp_path, background
):
    """Recall's query is the prompt, and a running supervisor answers it as a job (its
    payload in the authority): the query is the redacted prompt, so neither a key nor a
    private span reaches the authority, its WAL or a log."""
    assert cli("init").code == 0
    sup = background("run", "--workers", "1")
    sup.wait_running(1)
    private, assigned = marker("priv"), marker("assg")
    prompt = f"where is the cache? API_TOKEN={assigned} <private>{private}</private>"
    p = payload("claude-code", "UserPromptSubmit", "s1", project, tmp_path / "none", prompt=prompt)
    proc = run_hook(home, "UserPromptSubmit", p, env={"MEMORYD_HOOK_RECALL_SECONDS": "60"})
    assert proc.returncode == 0 and not hookspool.read_failures(str(home))
    sup.terminate()
    for needle in (private, assigned):
        assert files_holding(home, needle[-8:].encode()) == [], needle


def test_hook_help_names_an_example(home):
    res = run_cli("hook", "--help", home=home)
    assert res.code == 0 and "Example:" in res.stdout and "UserPromptSubmit" in res.stdout


def test_recall_here_for_a_project_no_one_knows_abstains_while_a_supervisor_listens(
    cli, home, tmp_path, background
):
    """A hook that recalls by itself (it found no supervisor, then one started) routes
    the project search to the supervisor: an unknown project comes back as its code
    and is an abstention, as it is embedded, not a failure of the hook."""
    from memoryd.operations.api import Memoryd
    from memoryd.operations.hook_context import context

    assert cli("init").code == 0
    background("run", "--workers", "1").wait_running(1)
    fresh = tmp_path / "brand-new-repo"
    fresh.mkdir()
    md = Memoryd(home)
    try:
        got = context(md, cwd=str(fresh), event="UserPromptSubmit", prompt="where is the cache?")
    finally:
        md.close()
    assert got["status"] == "abstained" and got["context"] is None

"""The hook spool into the archive: one conversation document per session per batch, a
linked document per tool call, exactly once when the retention worker is killed."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.archive.owner import ArchiveOwner
from memoryd.base import hooklog
from memoryd.base.config import load_config
from memoryd.base.locks import running_supervisor
from tests.conftest import files_holding, marker, wait_for
from tests.hooks.conftest import context_of, run_hook
from tests.hooks.payloads import payload, transcript_line


def documents(home: Path, project: str) -> list[dict]:
    """Every live document of ``project`` with its content."""
    with ArchiveOwner(home, load_config(home)) as owner:
        infos = owner.store.ledgers.documents(project=project)
        return [owner.store.ledgers.get(i.locator) for i in infos if i.status == "live"]


def drained(home: Path) -> None:
    """Wait until the drain a Stop hook started has archived the spool and exited."""

    def done() -> bool:
        return (not hooklog.waiting(str(home)) and running_supervisor(home) is None
                and not list((home / "hooks" / "batches").glob("*.json")))  # fmt: skip

    wait_for(done, timeout=90, what="the spool drained")


def spool_session(home: Path, cwd: Path, tmp_path: Path, session: str, fact: str,
                  env: dict | None = None) -> None:  # fmt: skip
    """A session as hooks see it: a prompt, a tool call, a transcript read at Stop (which
    starts a draining supervisor when none runs). ``env`` (a kill point) is the Stop
    hook's, so the drain it starts inherits it: a prompt's recall while a supervisor
    starts (its lock held, its socket not yet listening) enqueues its archive search and
    would meet a commit kill point first."""
    quiet = {"MEMORYD_HOOK_RECALL_SECONDS": "30"}
    env = {**quiet, **(env or {})}
    transcript = tmp_path / f"{session}.jsonl"
    transcript.write_bytes(
        transcript_line("claude-code", "user", f"where is {fact} kept?")
        + transcript_line("claude-code", "assistant", f"{fact} lives in vault")
    )
    for event, kw in (
        ("UserPromptSubmit", {"prompt": f"where is {fact} kept?"}),
        ("PostToolUse", {"tool_response": {"stdout": f"grep {fact}: 1 hit"}}),
    ):
        p = payload("claude-code", event, session, cwd, transcript, **kw)
        assert run_hook(home, event, p, env=quiet).returncode == 0
    assert run_hook(home, "Stop", payload("claude-code", "Stop", session, cwd, transcript),
                    env=env).returncode == 0  # fmt: skip


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    d = tmp_path / "shopfront"
    d.mkdir()
    return d


def test_a_drain_archives_each_session_once_with_linked_tool_output(cli, home, proj, tmp_path):
    assert cli("init").code == 0
    fact = marker("fact")
    spool_session(home, proj, tmp_path, "sess-a", fact)
    drained(home)  # the Stop hook started a draining supervisor
    docs = documents(home, "shopfront")
    (conv,) = [d for d in docs if d["class"] == "conversation"]
    (tool,) = [d for d in docs if d["class"] == "ephemeral"]
    # the prompt is in the transcript: kept once, from there
    assert conv["content"].count(f"where is {fact} kept?") == 1
    assert f"assistant: {fact} lives in vault" in conv["content"]
    assert tool["meta"]["session_doc"] == conv["doc_id"] and fact in tool["content"]
    assert conv["session"] == tool["session"] == "sess-a"
    # a second Stop with nothing new, drained again: nothing more
    spool_session_stop = payload("claude-code", "Stop", "sess-a", proj, tmp_path / "sess-a.jsonl")
    assert run_hook(home, "Stop", spool_session_stop).returncode == 0
    drained(home)
    # the Stop may have started a draining supervisor that takes the lock after the
    # wait above saw none: a drain of our own then follows it out
    wait_for(lambda: cli("run", "--drain").code == 0, timeout=90, what="a drain of our own")
    assert len(documents(home, "shopfront")) == 2


@pytest.mark.parametrize(
    "point", ["capture_batch_planned", "capture_batch_archived", "before_commit", "after_commit"]
)
def test_a_drain_killed_anywhere_archives_every_event_exactly_once(
    cli, home, proj, tmp_path, point
):
    """SIGKILL of the retention worker after a batch's manifest and after its archive
    write (events still spooled), or of the supervisor around its commit: the next
    drain (started by the next Stop hook) redoes the batch and writes nothing twice."""
    assert cli("init").code == 0
    facts = [marker("kf") for _ in range(3)]
    once = tmp_path / "killed"
    env = {"MEMORYD_KILL_AT": point, "MEMORYD_KILL_ONCE": str(once)}
    for i, fact in enumerate(facts[:2]):
        spool_session(home, proj, tmp_path, f"s{i}", fact, env)
    wait_for(once.exists, timeout=60, what=f"a drain killed at {point}")
    wait_for(lambda: running_supervisor(home) is None, timeout=60)
    spool_session(home, proj, tmp_path, "s2", facts[2], env)
    drained(home)
    docs = documents(home, "shopfront")
    for i, fact in enumerate(facts):
        mine = [d for d in docs if d["session"] == f"s{i}"]
        assert sorted(d["class"] for d in mine) == ["conversation", "ephemeral"], (i, mine)
        conv = next(d for d in mine if d["class"] == "conversation")
        assert conv["content"].count(f"{fact} lives in vault") == 1


def test_a_recalled_item_reaches_additional_context_and_nothing_when_recall_abstains(
    cli, home, proj, tmp_path, background
):
    """Through a running supervisor's control socket: a prompt that needs what an
    earlier session said gets it; an unrelated one gets nothing."""
    assert cli("init").code == 0
    fact = marker("vaultkey")
    spool_session(home, proj, tmp_path, "earlier", fact)
    drained(home)
    sup = background("run", "--workers", "1")
    sup.wait_running(1)
    env = {"MEMORYD_HOOK_RECALL_SECONDS": "30"}
    ask = payload("codex", "UserPromptSubmit", "later", proj, tmp_path / "none",
                  prompt=f"where does {fact} live?")  # fmt: skip
    ctx = context_of(run_hook(home, "UserPromptSubmit", ask, "codex", env), "UserPromptSubmit")
    assert ctx is not None and fact in ctx and "vault" in ctx
    assert len(ctx) <= 2000
    other = payload("claude-code", "UserPromptSubmit", "later", proj, tmp_path / "none",
                    prompt="zyzzyva quokkabrunch florbix")  # fmt: skip
    assert (
        context_of(run_hook(home, "UserPromptSubmit", other, env=env), "UserPromptSubmit") is None
    )
    sup.terminate()
    # without a supervisor the hook recalls by itself
    ctx = context_of(run_hook(home, "UserPromptSubmit", ask, "codex", env), "UserPromptSubmit")
    assert ctx is not None and fact in ctx


def test_no_secret_reaches_any_file_of_the_home_after_the_drain(cli, home, proj, tmp_path):
    assert cli("init").code == 0
    secret, private = marker("tok"), marker("prv")
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(
        transcript_line("claude-code", "user", f"SECRET_KEY={secret} <private>{private}</private>")
    )
    p = payload("claude-code", "UserPromptSubmit", "s", proj, transcript,
                prompt=f"password: {secret} and <PRIVATE>{private}")  # fmt: skip
    run_hook(home, "UserPromptSubmit", p)
    run_hook(home, "SessionEnd", payload("claude-code", "SessionEnd", "s", proj, transcript))
    drained(home)
    assert [d["class"] for d in documents(home, "shopfront")] == ["conversation"]
    for needle in (secret, private):
        assert files_holding(home, needle[-8:].encode()) == [], needle

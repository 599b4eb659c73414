"""A wall clock stepped forward does not purge young data: retention passes on the
wall clock are refused and reported until the clock comes back or an operator
confirms it. The step is real to the process (libfaketime moves its wall clock;
the time since boot, which no step moves, stays the kernel's)."""

from __future__ import annotations

import os
import shutil
import time

import orjson
import pytest

from tests.agent.conftest import PROJECT, write_transcript
from tests.conftest import run_cli

pytestmark = pytest.mark.slow
DAY = 86400


def faketime() -> dict[str, str]:
    """The environment stepping a process's wall clock 400 days ahead."""
    lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
    if not shutil.which("faketime") or not os.path.exists(lib):
        if os.environ.get("CI"):
            pytest.fail("libfaketime is missing in CI (.ci/run installs it)")
        pytest.skip("libfaketime is not installed (Debian package faketime)")
    return {"LD_PRELOAD": lib, "FAKETIME": "+400d", "DONT_FAKE_MONOTONIC": "1"}


def json_of(res) -> dict:
    assert res.code == 0, res.stderr
    return orjson.loads(res.stdout)


def test_a_forward_step_refuses_passes_until_confirmed_and_purges_nothing(home, tmp_path):
    stepped = faketime()
    assert run_cli("init", home=home).code == 0
    transcript = write_transcript(tmp_path / "chat.jsonl", time.time() - DAY)
    added = json_of(run_cli("archive", "add", str(transcript), "--project", PROJECT, "--json",
                            "--new-project", home=home))  # fmt: skip
    locator = added["locators"][0]
    json_of(run_cli("retention", "run", "--json", home=home))  # the baseline
    refused = json_of(run_cli("retention", "run", "--json", home=home, env=stepped))
    assert refused["refused"].startswith("CLOCK_STEP") and refused["expired"] == 0, refused
    assert json_of(run_cli("archive", "get", locator, "--json", home=home))["status"] == "live"
    status = json_of(run_cli("retention", "status", "--json", home=home, env=stepped))
    assert status["clock"]["refused"]["step_seconds"] > 399 * DAY
    doctor = orjson.loads(run_cli("doctor", "--json", home=home).stdout)["findings"]
    assert any(f["check"] == "retention clock" and f["status"] == "action" for f in doctor)
    # the clock came back: passes run again, the refusal is cleared
    back = json_of(run_cli("retention", "run", "--json", home=home))
    assert back["refused"] is None, back
    assert json_of(run_cli("retention", "status", "--json", home=home))["clock"]["refused"] is None
    # stepped again and confirmed by an operator: the pass runs at the new time
    json_of(run_cli("retention", "run", "--json", home=home, env=stepped))
    confirmed = json_of(run_cli("retention", "run", "--confirm-clock", "--json", home=home,
                                env=stepped))  # fmt: skip
    assert confirmed["refused"] is None and confirmed["expired"] >= 1, confirmed

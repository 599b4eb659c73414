"""Through the real CLI: renewing expiry, derived evidence
that follows its sources, and promotion."""

from __future__ import annotations

import time

from tests.retention.test_run_cli import archive, status_of


def test_renew_keeps_a_due_version_and_refuses_a_retired_one(cli, tmp_path):
    renewed, _ = archive(cli, tmp_path, "renewed", "an old decision worth keeping", 200)
    lapsed, _ = archive(cli, tmp_path, "lapsed", "an old note nobody renewed", 200)
    res = cli("archive", "renew", renewed, "--days", "30", "--json")
    assert res.code == 0, res.stderr
    r = res.json()
    assert r["locator"] == renewed and r["expires_at"].endswith("Z") and r["generation"] >= 2
    assert cli("retention", "run", "--force").code == 0
    assert status_of(cli, renewed) == "live" and status_of(cli, lapsed) == "expired"
    refused = cli("archive", "renew", lapsed, "--days", "30", "--json")
    assert refused.code == 1 and refused.json()["error"] == "NOT_LIVE"
    text = cli("archive", "renew", renewed)
    assert text.code == 0 and text.stdout.strip() == f"{renewed} now expires never"
    both = cli("archive", "renew", renewed, "--days", "1", "--until", "2030-01-01T00:00:00Z")
    assert both.code == 2


def test_derived_evidence_follows_its_source_unless_promoted(cli, tmp_path):
    source, _ = archive(cli, tmp_path, "source", "the original long session", 100)
    follows, _ = archive(cli, tmp_path, "digest", "facts from the session", 1,
                         "--class", "derived", "--source", source)  # fmt: skip
    promoted, _ = archive(cli, tmp_path, "kept", "facts worth keeping", 1,
                          "--class", "derived", "--source", source)  # fmt: skip
    res = cli("archive", "promote", promoted, "--json")
    assert res.code == 0, res.stderr
    assert res.json() == {"locator": promoted, "class": "durable", "expires_at": None}
    assert cli("retention", "run", "--force").code == 0  # the source is 100 days old
    assert status_of(cli, source) == "expired"
    assert status_of(cli, follows) == "expired"  # outlived none of its sources
    assert status_of(cli, promoted) == "live"
    again = cli("archive", "promote", promoted, "--json")
    assert again.code == 2 and again.json()["error"] == "BAD_ARCHIVE_INPUT"


def test_a_deadline_not_after_now_is_refused_and_the_version_kept(cli, tmp_path):
    """``--until 2020-01-01`` (a typo for 2030), ``--days 0`` and
    negative days are refused (BAD_USAGE, naming the date and now); nothing changes."""
    session, _ = archive(cli, tmp_path, "kept", "a decision renewed with a typo", 1)
    before = cli("archive", "get", session, "--json").json()
    typo = cli("archive", "renew", session, "--until", "2020-01-01", "--json")
    assert typo.code == 2 and typo.json()["error"] == "BAD_USAGE"
    assert "2020-01-01T00:00:00.000Z" in typo.message and "now (20" in typo.message
    for days in ("0", "-3"):
        res = cli("archive", "renew", session, "--days", days, "--json")
        assert res.code == 2 and res.json()["error"] == "BAD_USAGE", days
        assert "now (20" in res.message
    assert cli("retention", "run", "--force").code == 0
    after = cli("archive", "get", session, "--json").json()
    assert after["status"] == "live" and after["expires_at"] == before["expires_at"]
    future = cli("archive", "renew", session, "--until", "2099-01-01", "--json")
    assert future.code == 0 and future.json()["expires_at"] == "2099-01-01T00:00:00.000Z"


def test_a_past_deadline_is_refused_through_a_supervisor(cli, tmp_path, background):
    """The same refusal when the retention worker runs the renew as a job."""
    session, _ = archive(cli, tmp_path, "kept", "a decision renewed with a typo", 1)
    sup = background("run", "--workers", "1", env={"MEMORYD_RETENTION_TICK_SECONDS": "3600"})
    sup.wait_running(1)
    typo = cli("archive", "renew", session, "--until", "2020-01-01T00:00:00Z", "--json")
    assert typo.code == 2 and typo.json()["error"] == "BAD_USAGE"
    assert "2020-01-01T00:00:00.000Z" in typo.message
    assert status_of(cli, session) == "live"


def test_a_digest_of_a_durable_source_expires_at_the_derived_age(cli, tmp_path):
    """Derived evidence keeps its own age (30 days): a digest of a
    durable source expires then, while its source stays."""
    source, _ = archive(cli, tmp_path, "design", "the durable design notes", 40,
                        "--class", "durable")  # fmt: skip
    old, _ = archive(cli, tmp_path, "digest", "digest of the design notes", 31,
                     "--class", "derived", "--source", source)  # fmt: skip
    recent, _ = archive(cli, tmp_path, "fresh", "fresh digest of the notes", 2,
                        "--class", "derived", "--source", source)  # fmt: skip
    assert cli("retention", "run", "--force").code == 0
    assert status_of(cli, source) == "live"
    assert status_of(cli, old) == "expired"  # past 30 days though its source lives
    assert status_of(cli, recent) == "live"


def test_errors_name_what_is_allowed(cli, tmp_path):
    """Promoting a conversation points to renew; an unknown role lists the known ones."""
    session, _ = archive(cli, tmp_path, "talk", "a conversation to keep", 1)
    res = cli("archive", "promote", session, "--json")
    assert res.code == 2 and f"memoryd archive renew {session}" in res.json()["message"]
    bad = tmp_path / "wizard.jsonl"
    bad.write_text('{"role": "wizard", "content": "abracadabra"}\n')
    res = cli("archive", "add", str(bad), "--project", "demo", "--json")
    message = res.json()["message"]
    assert res.code == 2 and "unknown role 'wizard'" in message
    assert "assistant" in message and "user" in message and "tool" in message


def test_active_is_no_class_to_store_in(cli, tmp_path):
    """Active evidence is a lease's protection over a version's own class (the lease
    tests show it): storing or promoting into ``active`` is refused, BAD_USAGE naming
    leases and the classes a version may take; the version keeps its class."""
    path = tmp_path / "s.jsonl"
    path.write_text(
        f'{{"role": "user", "content": "current context", "timestamp": {time.time()}}}\n'
    )
    res = cli("archive", "add", str(path), "--project", "demo", "--new-project",
              "--class", "active", "--json")  # fmt: skip
    assert res.code == 2 and res.json()["error"] == "BAD_USAGE"
    assert "lease" in res.message and "durable" in res.message
    source, _ = archive(cli, tmp_path, "source", "the original long session", 1)
    digest, _ = archive(cli, tmp_path, "digest", "facts from the session", 1,
                        "--class", "derived", "--source", source)  # fmt: skip
    res = cli("archive", "promote", digest, "--class", "active", "--json")
    assert res.code == 2 and res.json()["error"] == "BAD_USAGE"
    res = cli("archive", "get", digest, "--json").json()
    assert res["class"] == "derived" and res["status"] == "live"

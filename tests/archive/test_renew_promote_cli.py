"""Issue 17 items 1 and 2 through the real CLI: renewing expiry, derived evidence
that follows its sources, and promotion."""

from __future__ import annotations

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

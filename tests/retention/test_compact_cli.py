"""Through the real CLI, a transcript with a unique marker
expires, ``retention run`` then ``retention compact``: no file under the home holds
the marker any more (the authority included), while a live one stays readable."""

from __future__ import annotations

from tests.conftest import files_holding
from tests.retention.test_run_cli import archive, status_of

GONE = b"quillfernmarker5521"  # an exact term: a posting key and a term statistic hold it
KEPT = b"pebbleharbor9034"


def test_expired_text_leaves_every_file_of_the_home_after_compact(cli, home, tmp_path):
    old = archive(cli, tmp_path, "old", f"the old note says {GONE.decode()}", 200)
    new = archive(cli, tmp_path, "new", f"the new note says {KEPT.decode()}", 1)
    assert files_holding(home, GONE), "precondition: the marker is on disk"

    res = cli("retention", "run", "--force", "--json")
    assert res.code == 0, res.stderr
    assert all(status_of(cli, loc) == "expired" for loc in old)
    res = cli("retention", "compact", "--json")
    assert res.code == 0, res.stderr
    r = res.json()
    assert r["sst_before_bytes"] >= 0 and r["sst_after_bytes"] >= 0 and r["project"] is None

    assert files_holding(home, GONE) == []
    assert all(status_of(cli, loc) == "live" for loc in new)
    got = cli("archive", "search", KEPT.decode(), "--project", "demo", "--json").json()
    assert {item["locator"] for item in got["items"]} & set(new)


def test_compact_one_project_and_in_prose(cli, tmp_path):
    archive(cli, tmp_path, "old", f"old words {GONE.decode()}", 200)
    assert cli("retention", "run", "--force").code == 0
    res = cli("retention", "compact", "--project", "demo")
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("compacted project demo: SST ")
    missing = cli("retention", "compact", "--project", "nope", "--json")
    assert missing.code == 2 and missing.json()["error"] == "BAD_USAGE"

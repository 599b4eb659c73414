"""Issue 18 defect 6: hidden and secret files are not ingested unless asked for."""

from __future__ import annotations

import pytest

from tests.conftest import query
from tests.ingest.test_ingest import ingest

SECRET = "hunter2supersecretvalue"


def _repo(root):
    root.mkdir()
    (root / "app.py").write_text("def handler():\n    return 'ordinary code'\n")
    (root / ".env").write_text(f"API_TOKEN={SECRET}\n")
    (root / ".env.production").write_text(f"DB_PASSWORD={SECRET}\n")
    (root / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    (root / "server.pem").write_text(f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n")
    (root / "credentials.json").write_text(f'{{"secret": "{SECRET}"}}\n')
    (root / ".hidden").mkdir()
    (root / ".hidden" / "notes.txt").write_text("hidden notes\n")
    (root / ".editorconfig").write_text("root = true\n")
    return root


def _live(home) -> set[str]:
    return {p for (p,) in query(home, "SELECT path FROM files WHERE live = 1")}


@pytest.mark.slow
def test_secrets_and_hidden_files_skipped_by_default_and_opt_in(cli, home, tmp_path):
    repo = _repo(tmp_path / "repo")
    res, summary = ingest(cli, repo)
    assert res.code == 0 and summary["complete"], res.stderr
    assert _live(home) == {"app.py"}
    assert summary["skipped"] == {"secret": 5, "hidden": 2}
    found = cli("search", SECRET, "--project", "repo", "--json").json()
    assert found["items"] == []

    res = cli("ingest", str(repo), "--wait")  # the human summary names the skips
    assert res.code == 0 and "secret 5" in res.stdout and "hidden 2" in res.stdout

    res, summary = ingest(cli, repo, "--include-secrets")
    assert res.code == 0, res.stderr
    # .env and .env.production are hidden as well: --include-secrets alone keeps them out
    assert _live(home) == {"app.py", "id_rsa", "server.pem", "credentials.json"}
    assert summary["skipped"] == {"hidden": 4}

    res, summary = ingest(cli, repo, "--include-secrets", "--include-hidden")
    assert res.code == 0, res.stderr
    assert _live(home) == {
        "app.py", "id_rsa", "server.pem", "credentials.json", ".env", ".env.production",
        ".hidden/notes.txt", ".editorconfig",
    }  # fmt: skip

    res, summary = ingest(cli, repo)  # back to the defaults: the secrets are retired
    assert _live(home) == {"app.py"} and summary["retired"] == 7

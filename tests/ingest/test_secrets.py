"""Hidden and secret files are not ingested unless asked for."""

from __future__ import annotations

import pytest

from memoryd.ingest.sensitive import content_reason
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

    res, summary = ingest(cli, repo)  # a plain re-run keeps the project's choices
    assert res.code == 0 and summary["retired"] == 0 and len(_live(home)) == 8

    res, summary = ingest(cli, repo, "--no-include-secrets", "--no-include-hidden")
    assert _live(home) == {"app.py"} and summary["retired"] == 7  # back to the defaults


# -- secrets by content ----------------------------------------------------------------

TOKEN = "q8Zr3TfX0pLw7VbN2yKd5HsJ9mC4"  # random-looking: 28 characters, letters and digits
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"


@pytest.mark.parametrize(
    "text",
    [
        f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n",
        f'PEM = "-----BEGIN PRIVATE KEY-----\\n{KEY_BODY}\\n"\n',  # inside a string literal
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n",
        "DEBUG=1\nDB_PASSWORD=hunter2supersecretvalue\n",
        "export GITHUB_TOKEN='hunter2supersecretvalue'  # ci\n",
        f'api_key = "{TOKEN}"\n',
        f'    self.clientSecret = "{TOKEN}";\n',
        f'{{"service": {{"access_key": "{TOKEN}"}}}}\n',
        f"auth:\n  bearer_token: '{TOKEN}'\n",
    ],
)
def test_content_with_a_credential_is_a_secret(text):
    assert content_reason(text.encode()).endswith(tuple(f"line {n}" for n in (1, 2)))


@pytest.mark.parametrize(
    "text",
    [
        'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    kind = "rsa"\n',
        "def token_hex(nbytes=None):\n    return token_bytes(nbytes).hex()\n",
        "API_KEY=your-api-key-here\nPASSWORD=changeme\nSECRET_KEY=${SECRET_KEY}\n",
        "GITHUB_TOKEN=$(cat ~/.token)\n",
        'password = os.environ["PASSWORD"]\ntoken = next(tokens)\n',
        f'TOKEN_TYPE = "{TOKEN}"\nsort_key = "{TOKEN}"\n',  # the name ends otherwise
        f'next_token = "{TOKEN}"\npage_token = "{TOKEN}"\n',  # a page of results
        'token = "identifier"\npassword: str = "a_readable_default_value"\n',
        "private_key: Ed25519PrivateKey | Ed448PrivateKey\n",  # an annotation
        "    password=password,\n",  # an argument passed on
        'secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"\n',  # an example
    ],
)
def test_content_naming_credentials_without_one_is_not(text):
    assert content_reason(text.encode()) == ""


def _content_repo(root):
    root.mkdir()
    files = {
        # modules ABOUT secrets and credentials: ordinary source, names that once skipped
        "secrets.py": "def token_urlsafe(nbytes=None):\n    return 'secure token'\n",
        "auth/credentials.py": "def load_credentials(path):\n    return open(path).read()\n",
        "parser.py": 'HEADER = "-----BEGIN RSA PRIVATE KEY-----"\n',
        "docs/setup.md": "Set `API_KEY=your-api-key-here` in your environment.\n",
        "client.py": f'next_token = "{TOKEN[::-1]}"\n',  # a page of results
        "app.py": "def handler():\n    return 'ordinary code'\n",
        # credentials in ordinary files: judged by content
        "config/settings.py": f'DEBUG = False\nAPI_TOKEN = "{TOKEN}"\n',
        "deploy/vars.sh": f"set -e\nDB_PASSWORD={SECRET}\n",
        "tests/fixture.py": f'PEM = "-----BEGIN PRIVATE KEY-----\\n{KEY_BODY}\\n"\n',
        # credential files by name, as before
        "server.pem": f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.slow
def test_files_are_judged_by_content_and_every_skip_is_listed(cli, home, tmp_path):
    repo = _content_repo(tmp_path / "repo")
    res, summary = ingest(cli, repo)
    assert res.code == 0 and summary["complete"], res.stderr
    ordinary = {"secrets.py", "auth/credentials.py", "parser.py", "docs/setup.md",
                "client.py", "app.py"}  # fmt: skip
    assert _live(home) == ordinary
    assert summary["skipped"] == {"secret": 1, "secret_content": 3}
    listed = {f["path"]: f for f in summary["skipped_files"]}
    assert set(listed) == {"server.pem", "config/settings.py", "deploy/vars.sh",
                           "tests/fixture.py"}  # fmt: skip
    assert listed["server.pem"]["reason"] == "secret"
    assert listed["config/settings.py"]["reason"] == "secret_content"
    assert listed["config/settings.py"]["detail"].endswith("at line 2")
    assert listed["deploy/vars.sh"]["detail"].endswith("at line 2")
    assert TOKEN not in res.stdout and SECRET not in res.stdout  # reasons never quote one
    for value in (TOKEN, SECRET, "hunter2supersecretvalue"):
        assert cli("search", value, "--project", "repo", "--json").json()["items"] == []

    human = cli("ingest", str(repo), "--wait")  # the human summary names them too
    assert "secret_content: deploy/vars.sh (a credential" in human.stdout
    assert "secret: server.pem" in human.stdout

    (repo / "app.py").write_text(f"def handler():\n    return 1\n\nSECRET = '{TOKEN}'\n")
    res, summary = ingest(cli, repo)  # a stored file that now holds one leaves search
    assert "app.py" not in _live(home) and summary["retired"] == 1
    assert any(f["path"] == "app.py" for f in summary["skipped_files"])

    res, summary = ingest(cli, repo, "--include-secrets")
    assert _live(home) == ordinary | {"server.pem", "config/settings.py", "deploy/vars.sh",
                                      "tests/fixture.py", "app.py"}  # fmt: skip
    assert summary["skipped"] == {} and summary["skipped_files"] == []

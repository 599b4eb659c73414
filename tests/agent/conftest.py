"""A home with one small ingested project and one archived conversation."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import run_cli

PROJECT = "demo"
CODEC = '''def decode_payload(blob):
    """Decode the zstandard frame and parse the orjson document."""
    return orjson.loads(zstandard.decompress(blob))
'''


def write_transcript(path: Path, created: float) -> Path:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))
    lines = [
        {
            "role": "user",
            "content": "We chose exponential retry backoff with jitter for the uploader.",
            "timestamp": stamp,
        },  # fmt: skip
        {"role": "assistant", "content": "Agreed, exponential backoff with jitter it is."},
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


@pytest.fixture
def project_home(home: Path, tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(6):
        (src / f"mod{i}.py").write_text(f"def helper_{i}(value):\n    return value + {i}\n")
    (src / "codec.py").write_text(CODEC)
    res = run_cli("ingest", str(src), "--project", PROJECT, "--wait", "--json", home=home)
    assert res.code == 0, res.stderr
    transcript = write_transcript(tmp_path / "chat.jsonl", time.time() - 3600)
    res = run_cli("archive", "add", str(transcript), "--project", PROJECT, "--session", "s1",
                  "--json", home=home)  # fmt: skip
    assert res.code == 0, res.stderr
    return home

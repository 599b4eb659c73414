"""The README's supervisor log: a run with a worker SIGKILLed and a reader pinning the WAL.

Real processes in a scratch home: a reader holds a snapshot of the authority,
an ingest of generated text grows the WAL until claims pause, a worker in a
long job is SIGKILLed, the reader lets go, claims resume, the ingest finishes,
and SIGTERM stops the supervisor. Prints the supervisor's stderr.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN")
conn.execute("SELECT count(*) FROM jobs").fetchall()
print("held", flush=True)
sys.stdin.readline()
"""
FILES = 24
ENV = {
    "MEMORYD_WAL_PAUSE_BYTES": str(2 * 1024 * 1024),
    "MEMORYD_MAINTENANCE_PERIOD_SECONDS": "0.2",
    "MEMORYD_INGEST_BATCH_TARGET_BYTES": str(256 * 1024),
}


def memoryd(home: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "memoryd.faces.cli.main", "--home", str(home), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, env=_env(), **kw)


def _env() -> dict[str, str]:
    return {**os.environ, **ENV}


def status(home: Path) -> dict:
    return json.loads(memoryd(home, "status", "--json").stdout)


def wait(condition, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def sleeping(pid: int) -> bool:
    try:
        return "nanosleep" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def _files(home: Path) -> int:
    return json.loads(memoryd(home, "projects", "--json").stdout)[0]["files"]


def make_repo(root: Path, files: int = FILES, kib: int = 256) -> Path:
    rng = random.Random(7)
    words = [f"w{rng.randrange(10**6):06d}" for _ in range(20000)]
    root.mkdir()
    for i in range(files):
        text = "\n".join(" ".join(rng.choices(words, k=12)) for _ in range(kib * 12))
        (root / f"doc{i:03d}.txt").write_text(text)
    return root


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="memoryd-log-") as tmp:
        home, log = Path(tmp) / "home", Path(tmp) / "supervisor.log"
        repo = make_repo(Path(tmp) / "repo")
        memoryd(home, "init")
        memoryd(home, "jobs", "add", "sleep", "--payload", '{"seconds": 3}', "--priority", "9")
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(home / "authority.db")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert reader.stdout.readline().strip() == "held"
        memoryd(home, "ingest", str(repo), "--project", "generated")
        with log.open("w") as err:
            cmd = [sys.executable, "-m", "memoryd.faces.cli.main", "--home", str(home), "run"]
            sup = subprocess.Popen(cmd, stderr=err, stdout=subprocess.DEVNULL, env=_env())
            workers = wait(lambda: (status(home)["supervisor"] or {}).get("workers"), "workers")
            pids = [w["pid"] for w in workers]
            victim = wait(lambda: next((p for p in pids if sleeping(p)), 0), "the sleep job")
            os.kill(victim, signal.SIGKILL)
            wait(lambda: status(home)["claims_paused"], "claims to pause")
            time.sleep(1.0)
            reader.stdin.write("\n")
            reader.stdin.flush()
            reader.wait(timeout=30)
            wait(lambda: not status(home)["claims_paused"], "claims to resume")
            wait(lambda: _files(home) == FILES, "the ingest to finish", timeout=600)
            sup.send_signal(signal.SIGTERM)
            sup.wait(timeout=120)
        print(log.read_text().replace(str(home), "~/.local/share/memoryd"), end="")


if __name__ == "__main__":
    main()

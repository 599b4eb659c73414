"""Make docs/dashboard.png: the dashboard during a stdlib ingest with a pinned reader.

    .venv/bin/python ops/dashboard_screenshot.py [--source DIR] [--out docs/dashboard.png]

In a scratch home: a supervisor (samples every second), the dashboard, two jobs
that fail for good (dead jobs with their errors), after a few idle seconds
``memoryd ingest`` of the source tree; ``--warmup`` seconds into the ingest
another process opens a read snapshot of the authority and keeps it (the WAL
grows, checkpoints give way, claims pause), and once the pause has lasted
``--pinned`` seconds headless chromium takes the screenshot. Everything started
is stopped and the home removed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from log_example import READER  # the same pinning reader as the README's log example

MEMORYD = [sys.executable, "-m", "memoryd.faces.cli.main"]


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MEMORYD, *args], env=env, check=True, capture_output=True, text=True)


def wait(what: str, condition, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def paused(env: dict) -> bool:
    return orjson.loads(cli(env, "status", "--json").stdout)["claims_paused"]


def screenshot(url: str, out: Path, size: str) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={size}", f"--screenshot={out}", url],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default="/usr/lib/python3.11")
    ap.add_argument("--out", type=Path, default=Path("docs/dashboard.png"))
    ap.add_argument("--idle", type=float, default=5.0, help="idle seconds before the ingest")
    ap.add_argument("--warmup", type=float, default=0.5, help="seconds of ingest before the pin")
    ap.add_argument("--pinned", type=float, default=8.0, help="seconds of pause before the shot")
    ap.add_argument("--size", default="1400,2250", help="browser window, width,height")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="memoryd-shot-"))
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_SAMPLE_PERIOD_SECONDS": "1"}
    env.update(MEMORYD_RETRY_BACKOFF_BASE="0.01", MEMORYD_RETRY_BACKOFF_MAX="0.05")
    # Smaller batches and pause bound than the defaults: the stdlib is small, and the
    # picture should show the pause while the ingest is under way, not after it.
    env.update(MEMORYD_INGEST_BATCH_TARGET_BYTES="524288", MEMORYD_WAL_PAUSE_BYTES="4194304")
    procs: list[subprocess.Popen] = []
    try:
        cli(env, "init")
        procs.append(subprocess.Popen([*MEMORYD, "run", "--workers", "2"], env=env))
        dash = subprocess.Popen([*MEMORYD, "dashboard", "--json"], env=env, stdout=subprocess.PIPE)
        procs.append(dash)
        url = orjson.loads(dash.stdout.readline())["url"]
        cli(env, "jobs", "add", "fail", "--count", "2")
        time.sleep(args.idle)  # a few idle samples before the work
        cli(env, "ingest", args.source, "--project", Path(args.source).name)
        print(f"dashboard at {url}; ingesting {args.source}", flush=True)
        time.sleep(args.warmup)
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(home / "authority.db")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        procs.append(reader)
        assert reader.stdout.readline().strip() == "held"
        print(f"reader pid {reader.pid} holds a snapshot; waiting for the pause", flush=True)
        wait("claims to pause", lambda: paused(env))
        time.sleep(args.pinned)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(url, args.out, args.size)
        print(f"wrote {args.out}", flush=True)
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()

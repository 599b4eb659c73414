"""The dashboard in a real headless browser shows what
``memoryd status --json`` says, refuses requests without its token, listens on the
loopback address only, and being open does not pause claims."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest

from tests.conftest import FAST_RETRY, query, status, wait_for, wal_reader

pytestmark = pytest.mark.slow
BROWSER_TIMEOUT = 120.0
KEY_RE = re.compile(r'data-key="([^"]+)"[^>]*>([^<]*)<')


def chromium() -> str:
    """Debian's chromium; a skip only outside CI (CI installs it: .ci/run)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def dump_dom(url: str) -> str:
    """The page's DOM as a headless chromium rendered it."""
    proc = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def start_dashboard(background, env: dict | None = None):
    dash = background("dashboard", "--json", env=env)

    def url() -> str | None:
        assert dash.alive(), dash.stderr
        line = dash.stdout.strip()
        return orjson.loads(line)["url"] if line else None

    return dash, wait_for(url, what="the dashboard's URL")


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def page_value(text: str) -> Any:
    """A number, flag or pid list as the page shows it, back to its JSON value."""
    text = text.strip()
    if text in ("yes", "no"):
        return text == "yes"
    if text == "—":
        return None
    if text == "none":
        return []
    if re.fullmatch(r"[\d,]+", text):
        return int(text.replace(",", ""))
    if re.fullmatch(r"\d+(, \d+)*", text):
        return [int(p) for p in text.split(", ")]
    return text


def at_path(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def small_repo(root: Path, files: int) -> Path:
    root.mkdir()
    for i in range(files):
        body = "\n".join(f"def f{i}_{n}(x):\n    return x * {n}\n" for n in range(40))
        (root / f"mod{i}.py").write_text(body)
    return root


def test_the_page_shows_what_status_says_to_a_browser_with_the_token_only(
    home: Path, tmp_path: Path, cli, background
) -> None:
    env = {**FAST_RETRY, "MEMORYD_SAMPLE_PERIOD_SECONDS": "30"}  # quiet once drained
    sup = background("run", "--workers", "2", env=env)
    sup.wait_running(2)
    assert cli("ingest", str(small_repo(tmp_path / "repo", 12)), "--project", "demo").code == 0
    assert cli("jobs", "add", "sleep", "--count", "40", "--payload", '{"seconds": 0.02}').code == 0
    assert cli("jobs", "add", "fail", "--count", "2", env=FAST_RETRY).code == 0
    dash, url = start_dashboard(background)

    def quiet() -> bool:
        q = status(home)["queue"]
        return q["queued"] + q["claimed"] + q["failed"] == 0

    wait_for(quiet, what="the work to drain")
    expected = [f"queue.{s}" for s in ("queued", "claimed", "done", "failed", "dead")]
    expected += ["wal_bytes", "wal_reader_pids", "claims_paused", "supervisor.pid", "schema"]
    expected += ["effects.effects", "projects.0.project", "projects.0.files", "projects.0.chunks"]
    for _ in range(20):  # a moment when nothing changed while the browser loaded the page
        before = status(home)
        dom = dump_dom(url)
        shown = {key: page_value(text) for key, text in KEY_RE.findall(dom)}
        assert set(expected) <= set(shown), dom[:3000]
        wanted = {k: at_path(before, k) for k in shown}
        if status(home) == before and shown == wanted:
            break
    else:
        assert shown == wanted, "the page never matched a status that held still across its load"
    assert before["queue"]["dead"] == 2 and before["projects"][0]["files"] == 12
    assert "DrillFailure" in dom, "the dead jobs' errors are listed"
    assert dom.count("<svg") >= 4, "the charts are inline SVG"
    assert not re.search(r'(src|href)="https?://', dom), "nothing loads from the network"

    base = url.split("?")[0]
    assert http_status(url) == 200
    for refused in (base, base + "?token=wrong", base + "api/snapshot", url.replace("=", "=x")):
        assert http_status(refused) == 403, refused
    snapshot = urllib.request.urlopen(url.replace("/?", "/api/snapshot?"), timeout=60).read()
    assert orjson.loads(snapshot)["status"]["queue"]["done"] == before["queue"]["done"]

    port = int(base.rsplit(":", 1)[1].strip("/"))
    listening = [
        c.laddr
        for c in psutil.Process(dash.pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening and all(a.ip == "127.0.0.1" for a in listening), listening
    outside = [
        a.address
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]
    for ip in outside:
        with pytest.raises(OSError), socket.create_connection((ip, port), timeout=5):
            pass
    assert dash.terminate() in (0, -15)


def test_an_open_dashboard_does_not_pause_claims(home: Path, cli, background) -> None:
    """The page loaded over and over (far more often than its refresh) while WAL-heavy
    work drains under a low pause bound: no sample, log line or status says claims
    paused. The same setup with a pinned reader does pause (the check can see one)."""
    env = {
        "MEMORYD_WAL_CHECKPOINT_BYTES": str(256 * 1024),
        "MEMORYD_WAL_PAUSE_BYTES": str(2 * 1024 * 1024),
        "MEMORYD_SAMPLE_PERIOD_SECONDS": "0.2",
    }
    jobs = 20000
    assert cli("jobs", "add", "noop", "--count", str(jobs)).code == 0  # before: no WAL race
    dash, url = start_dashboard(background, env)
    loads, stop = [0], threading.Event()

    def keep_loading() -> None:
        while not stop.wait(0.1):
            with urllib.request.urlopen(url, timeout=60) as resp:
                assert resp.status == 200
            loads[0] += 1

    loader = threading.Thread(target=keep_loading, daemon=True)
    loader.start()
    sup = background("run", "--workers", "2", env=env)
    try:
        done = "SELECT count(*) FROM jobs WHERE state = 'done'"
        wait_for(lambda: query(home, done)[0][0] == jobs, interval=0.5, what="the jobs done")
    finally:
        stop.set()
        loader.join(timeout=120)
    assert loads[0] >= 3, "the dashboard was loaded while the work ran"
    paused = query(home, "SELECT count(*) FROM samples WHERE data LIKE '%\"claims_paused\":true%'")
    assert paused[0][0] == 0
    assert "claims paused" not in sup.stderr
    with wal_reader(home):  # the control: a pinned reader does pause this setup
        assert cli("jobs", "add", "noop", "--count", str(jobs)).code == 0
        wait_for(lambda: status(home)["claims_paused"], what="claims paused by a pinned reader")
    wait_for(lambda: not status(home)["claims_paused"], what="claims resumed")
    assert "claims paused" in sup.stderr
    dash.terminate()
    assert sup.terminate() == 0

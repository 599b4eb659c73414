"""`memoryd service`: systemd units a manager accepts, written and removed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from memoryd.base.config import UNIT_NAMES

ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(
    ANALYZE is None, reason="systemd-analyze missing (.ci/run installs it)"
)


def verify(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [ANALYZE, "verify", *map(str, paths)], capture_output=True, text=True, timeout=120
    )


def test_print_shows_the_three_units_for_this_home(cli, home: Path) -> None:
    refused = cli("service", "install", "--user", "--print", "--json")
    assert refused.code == 1 and refused.json()["error"] == "HOME_MISSING", refused
    assert cli("init").code == 0
    res = cli("service", "install", "--user", "--print")
    assert res.code == 0, res.stderr
    for name in UNIT_NAMES:
        assert f"# --- {name} ---" in res.stdout
    assert f"Environment=MEMORYD_HOME={home.resolve()}" in res.stdout
    assert "UMask=0077" in res.stdout and "Restart=on-failure" in res.stdout
    assert "KillSignal=SIGTERM" in res.stdout and "Persistent=true" in res.stdout
    assert "RandomizedDelaySec=" in res.stdout and "retention run" in res.stdout
    assert "User=" not in res.stdout  # a user unit runs as its user
    assert not (home / "memoryd.service").exists()


@needs_systemd
def test_installed_units_pass_systemd_analyze_verify(cli, tmp_path: Path) -> None:
    assert cli("init").code == 0
    units = tmp_path / "units"
    res = cli("service", "install", "--dir", str(units), "--json")
    assert res.code == 0, res.stderr
    assert sorted(Path(p).name for p in res.json()["written"]) == sorted(UNIT_NAMES)
    done = verify(*(units / name for name in UNIT_NAMES))
    assert done.returncode == 0, done.stderr


@needs_systemd
def test_the_verifier_catches_a_broken_unit(cli, tmp_path: Path) -> None:
    """The check above is only worth something if verify fails on a bad unit."""
    assert cli("init").code == 0
    units = tmp_path / "units"
    assert cli("service", "install", "--dir", str(units)).code == 0
    unit = units / "memoryd.service"
    unit.write_text(unit.read_text().replace("ExecStart=/", "ExecStart=relative/"))
    assert verify(unit).returncode != 0


def test_uninstall_removes_only_memoryds_units(cli, tmp_path: Path) -> None:
    assert cli("init").code == 0
    units = tmp_path / "units"
    installed = cli("service", "install", "--dir", str(units))
    assert installed.code == 0 and "daemon-reload && systemctl enable --now" in installed.stdout
    (units / "other.service").write_text("[Service]\nExecStart=/bin/true\n")
    res = cli("service", "uninstall", "--dir", str(units))
    assert res.code == 0 and res.stdout.count("removed ") == len(UNIT_NAMES)
    assert [p.name for p in units.iterdir()] == ["other.service"]
    assert "no memoryd units" in cli("service", "uninstall", "--dir", str(units)).stdout

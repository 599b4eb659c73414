"""systemd units for a home: the supervisor, and nightly retention on a timer.

The templates live in ``ops/systemd/`` of the checkout memoryd runs from. Units
run ``memoryd`` with this interpreter (``python -m memoryd.faces.cli.main``), the home in
``MEMORYD_HOME`` and a private umask, so what they create stays 0600.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import sys
from pathlib import Path

from memoryd.base.config import (
    RETENTION_CALENDAR,
    RETENTION_RANDOM_DELAY,
    STOP_MARGIN_SECONDS,
    UNIT_NAMES,
    Config,
)
from memoryd.base.errors import HomeMissing, MemorydError

TEMPLATES = Path(__file__).resolve().parents[2] / "ops" / "systemd"
SYSTEM_DIR = Path("/etc/systemd/system")


class UnitsUnavailable(MemorydError):
    code = "UNITS_UNAVAILABLE"


def unit_dir(user: bool) -> Path:
    """Where systemd looks for units: the user's manager, or the system's."""
    if not user:
        return SYSTEM_DIR
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def render(home: Path, config: Config, *, user: bool) -> dict[str, str]:
    """The unit files' text, by name. A home that does not exist is refused: units
    naming a mistyped home would start a supervisor on an empty one."""
    if not Path(home).is_dir():
        raise HomeMissing(
            f"no memoryd home at {home}: create it with `memoryd init --home {home}`, or "
            "name the right one with --home"
        )
    if not TEMPLATES.is_dir():
        raise UnitsUnavailable(
            f"the unit templates are not at {TEMPLATES}; run memoryd from its checkout"
        )
    values = {
        "home": str(Path(home).resolve()),
        "exec": f"{sys.executable} -m memoryd.faces.cli.main",
        "stop_seconds": int(config.shutdown_grace_seconds + STOP_MARGIN_SECONDS),
        "user_line": "" if user else f"User={getpass.getuser()}\n",
        "wanted_by": "default.target" if user else "multi-user.target",
        "calendar": RETENTION_CALENDAR,
        "random_delay": RETENTION_RANDOM_DELAY,
    }
    return {
        name: (TEMPLATES / f"{name}.in").read_text(encoding="utf-8").format(**values)
        for name in UNIT_NAMES
    }


def install(home: Path, config: Config, *, user: bool, directory: Path | None = None) -> dict:
    """Write the units (0644: systemd reads them; they hold no secret) and reload
    the manager when one runs. Enabling them stays the user's choice."""
    target = directory or unit_dir(user)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render(home, config, user=user).items():
        path = target / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
        written.append(str(path))
    return {"written": written, "reloaded": directory is None and _reload(user), "user": user}


def uninstall(*, user: bool, directory: Path | None = None) -> dict:
    target = directory or unit_dir(user)
    removed = []
    for name in UNIT_NAMES:
        path = target / name
        if path.exists():
            path.unlink()
            removed.append(str(path))
    return {"removed": removed, "reloaded": directory is None and _reload(user), "user": user}


def enable_hint(user: bool, directory: Path | None = None) -> str:
    """The next step after writing the units (``directory``: written elsewhere than the
    manager's own unit directory, so they go there first)."""
    scope = " --user" if user else ""
    start = f"systemctl{scope} enable --now memoryd.service memoryd-retention.timer"
    if directory is None:
        return f"start it now and at boot: {start}"
    return f"next: copy them into {unit_dir(user)}, then systemctl{scope} daemon-reload && {start}"


def _reload(user: bool) -> bool:
    """``systemctl daemon-reload`` when a systemd manager answers; False otherwise."""
    systemctl = shutil.which("systemctl")
    if not systemctl:
        return False
    args = [systemctl, *(["--user"] if user else []), "daemon-reload"]
    try:
        done = subprocess.run(args, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0

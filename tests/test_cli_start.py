"""What a plain command's start imports (issue 32 item 6: ``status`` and ``search`` under
250 ms): a module a command does not use is not loaded, and a request a running
supervisor answers loads no store of its own."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from memoryd.operations.control_client import socket_path
from tests.conftest import clean_env, run_cli, wait_for

#: The stores and what opens them: a routed request needs none.
STORES = ["apsw", "memoryd.queue", "memoryd.storage", "memoryd.workers.contract", "zstandard"]
#: The search stack: only a search run in this process needs it.
SEARCH_STACK = ["numpy", "memoryd.search.engine", "memoryd.consolidation.recall"]
#: numpy loaded, not only named (a lazy module stands in ``sys.modules`` until used): a
#: small project's search scores and encodes in Python (memoryd.search.stats,
#: memoryd.text.dense), as numpy would, bit for bit.
NUMPY_LOADED = ["numpy._core", "numpy.linalg"]
#: Not read by a listing: the codecs the stores load on first use (a body decompressed,
#: a digest made), the job contract (projects' job kinds), the corpus (a project's rows
#: read or deleted).
NOT_LISTING = [
    "zstandard.backend_c",
    "_hashlib",
    "memoryd.workers.contract",
    "memoryd.storage.corpus",
]
#: What only another encoder (a command's, MiniLM's) or a failure's log line needs.
UNUSED_BY_SEARCH = ["subprocess", "zipfile", "logging"]
#: What a command run embedded does without: the control socket's client connects
#: only to a running supervisor; a retry's jitter, a digest load their modules.
EMBEDDED_UNUSED = ["socket", "random", "_hashlib"]
#: What a plain answer (lines, tables) printed to a pipe does without: rich prints to a
#: terminal, or what only it can lay out (memoryd.faces.cli.output).
RICH = ["rich", "rich.console", "rich.table", "rich.text"]
QUERY = "which port does the staging database listen on?"
#: The CLI, reporting at exit the click commands it made, the modules of the CLI it
#: imported and whether it opened /proc/locks (an audit hook sees every open).
MADE_AT_EXIT = """
import atexit, os, sys, click
made, opened = [], set()
sys.addaudithook(lambda event, args: event == "open" and opened.add(str(args[0])))
made_by_click = click.Command.__init__
def making(command, name, *args, **kwargs):
    made.append(name)
    made_by_click(command, name, *args, **kwargs)
click.Command.__init__ = making
atexit.register(lambda: os.write(2, b"made=%a" % ((
    sorted(made), sorted(m for m in sys.modules if m.startswith("memoryd.faces.cli.")),
    "/proc/locks" in opened),)))
from memoryd.faces.cli.main import main
main()
"""


def imported(home: Path, args: list[str], names: list[str], cwd: Path) -> list[str]:
    """Which of ``names`` the CLI running ``args`` has imported when it exits."""
    code = (
        "import atexit, os, sys; atexit.register(lambda: os.write(2, b'imported=%a' % "
        f"sorted(m for m in {names!r} if m in sys.modules))); "
        "from memoryd.faces.cli.main import main; main()"
    )
    argv = [sys.executable, "-c", code, *args]
    proc = subprocess.run(argv, cwd=cwd, env=clean_env(home), capture_output=True, check=True)
    return ast.literal_eval(re.search(rb"imported=(\[.*?\])", proc.stderr)[1].decode())


def ingested(home: Path, tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "README.md").write_text("# Staging\n\nThe staging database listens on port 6543.\n")
    assert run_cli("ingest", str(src), "--project", "demo", "--wait", home=home).code == 0
    return src


def test_status_and_search_without_a_supervisor_load_what_they_read(home, tmp_path) -> None:
    """``status`` reads the stores, not the search stack nor what a listing does without;
    ``search`` needs the search stack, not what the hashing encoder does without, nor
    numpy itself (a small project) nor rich (plain lines to a pipe)."""
    ingested(home, tmp_path)
    unused = NOT_LISTING + RICH + EMBEDDED_UNUSED + NUMPY_LOADED  # numpy may be named
    assert imported(home, ["status"], SEARCH_STACK[1:] + unused, tmp_path) == []
    search = ["search", QUERY, "--project", "demo"]
    unused = UNUSED_BY_SEARCH + RICH + NUMPY_LOADED + EMBEDDED_UNUSED
    assert imported(home, search, SEARCH_STACK + unused, tmp_path) == sorted(SEARCH_STACK)


def test_a_routed_status_or_search_loads_no_store(home, tmp_path, background) -> None:
    """Under a running supervisor the CLI asks its socket: neither the stores nor the
    search stack are loaded, and the answer is the one run embedded."""
    ingested(home, tmp_path)
    search = ["search", QUERY, "--project", "demo"]
    embedded = run_cli(*search, home=home).stdout
    background("run", "--workers", "1")
    wait_for(lambda: socket_path(home).exists(), what="the control socket")
    for args in (["status"], search):
        assert imported(home, args, STORES + SEARCH_STACK + RICH, tmp_path) == [], args
    assert run_cli(*search, home=home).stdout == embedded
    assert "supervisor: pid" in run_cli("status", home=home).stdout


def made(home: Path, args: list[str], cwd: Path) -> tuple[list[str], list[str], bool]:
    """The commands click made for ``args``, the CLI modules imported, and whether
    /proc/locks was read (:data:`MADE_AT_EXIT`)."""
    argv = [sys.executable, "-c", MADE_AT_EXIT, *args]
    proc = subprocess.run(argv, cwd=cwd, env=clean_env(home), capture_output=True, check=True)
    return ast.literal_eval(re.search(rb"made=(\(.*?\))$", proc.stderr)[1].decode())


def test_a_command_makes_and_imports_only_its_own(home, tmp_path) -> None:
    """The root group makes a command when it is asked for (memoryd.faces.cli.main's
    COMMANDS): ``status`` and ``search`` make no other command's options and import no
    other command's module; a plain ``status`` reads no /proc/locks (the WAL's reader
    pids, 10-20 ms on this VM's kernel: ``--json`` names them)."""
    ingested(home, tmp_path)
    cli = ["memoryd.faces.cli.common", "memoryd.faces.cli.main", "memoryd.faces.cli.output"]
    status = made(home, ["status"], tmp_path)
    assert status == (["main", "status"], sorted([*cli, "memoryd.faces.cli.status"]), False)
    search = made(home, ["search", QUERY, "--project", "demo"], tmp_path)
    modules = sorted([*cli, "memoryd.faces.cli.hits", "memoryd.faces.cli.search"])
    assert search[:2] == (["main", "search"], modules)
    assert made(home, ["status", "--json"], tmp_path)[2], "--json names the reader pids"

"""``memoryd hook EVENT``: what an agent's lifecycle hook runs, on every prompt and tool call.

It reads the hook's JSON from stdin (Claude Code and Codex CLI send the same common
fields: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``), keeps
what the event brings in the spool (:mod:`memoryd.base.hookspool`, durable before
the hook returns, secrets and ``<private>`` spans removed first), and for
``SessionStart`` and ``UserPromptSubmit`` answers with recalled context as both
agents read it: ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``.

It never fails the agent: whatever happens it exits 0 (exit 2 would block a
prompt), and what went wrong is a line in ``hooks/failures.jsonl`` that ``memoryd
doctor`` shows. A directory holding a ``.memoryd-off`` file (or any directory
above it) is left alone: nothing kept, nothing injected.

A hook process pays for every import: this module imports ``os``, ``sys``,
``time``, the spool and the redaction rules, none of which import ``re`` or
``json`` (:mod:`memoryd.base.hookjson`, :mod:`memoryd.text.precompiled`); recall
asks a running supervisor over its control socket, and only without one loads the
package to recall here.
"""

import os
import sys
import time

from memoryd.base import hookjson, hookspool
from memoryd.text.redact import redact, redact_value, secret_file

TYPE_CHECKING = False  # typing's import is one more a hook would pay for
if TYPE_CHECKING:
    import _socket

EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop", "SessionEnd")
AGENTS = ("claude-code", "codex")
INJECTING = ("SessionStart", "UserPromptSubmit")
#: Events at which the transcript is read on (SessionStart only when resumed or compacted).
READING = ("PreCompact", "Stop", "SessionEnd")
OFF_FILE = ".memoryd-off"
CONTROL_SOCKET_FILE = "memoryd.sock"  # memoryd.base.config's, not imported here
#: Settings a hook reads itself (memoryd.toml, then MEMORYD_<NAME>), with defaults.
HOOK_SETTINGS = {"hook_spool_max_bytes": hookspool.SPOOL_MAX_BYTES, "hook_recall_seconds": 2.0}
SECRET_FILE_OUTPUT = "[redacted:secret file]"

USAGE = """\
Usage: memoryd hook EVENT [--agent claude-code|codex] [--home DIR]

  Run by an agent's lifecycle hook (see `memoryd hooks install`): reads the hook's
  JSON on stdin, keeps the event in the home's spool (secrets and <private> spans
  removed), and for SessionStart and UserPromptSubmit prints recalled context as
  the agent's hook output. Always exits 0; failures are shown by `memoryd doctor`.
  EVENT: SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, SessionEnd.
  A directory with a .memoryd-off file (or under one) is not captured.

Example:
  memoryd hook UserPromptSubmit --agent claude-code < prompt-payload.json
"""


class HookUsage(Exception):
    """The hook's command line is wrong (recorded; the agent still gets exit 0)."""


def parse_args(argv: list[str]) -> tuple[str, str, str | None]:
    """(event, agent, home) from ``EVENT [--agent A] [--home DIR]``."""
    rest, agent, home = [], "claude-code", None
    it = iter(argv)
    for arg in it:
        if arg in ("--agent", "--home"):
            value = next(it, None)
            if value is None:
                raise HookUsage(f"{arg} needs a value")
            agent, home = (value, home) if arg == "--agent" else (agent, value)
        elif arg.startswith("--agent="):
            agent = arg.split("=", 1)[1]
        elif arg.startswith("--home="):
            home = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    if len(rest) != 1 or rest[0] not in EVENTS:
        raise HookUsage(f"expected one event of {', '.join(EVENTS)}, got {rest}")
    if agent not in AGENTS:
        raise HookUsage(f"--agent is one of {', '.join(AGENTS)}, got {agent!r}")
    return rest[0], agent, home


def default_home() -> str:
    """As :func:`memoryd.base.config.default_home`, without importing it."""
    if env := os.environ.get("MEMORYD_HOME"):
        return env
    if xdg := os.environ.get("XDG_DATA_HOME"):
        return os.path.join(xdg, "memoryd")
    return os.path.join(os.path.expanduser("~"), ".local", "share", "memoryd")


def run(argv: list[str]) -> None:
    """The hook process's entry: :func:`main`, its output flushed, then the process
    ends. With nothing left for the interpreter's teardown to run (no ``atexit``
    handler, no live non-daemon thread) it ends by ``os._exit``: freeing every module
    and object costs a hook a millisecond and keeps nothing (the spool is fsynced and
    every file written here is closed before :func:`main` returns)."""
    code = main(argv)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the agent closed its end: nothing to tell it
            continue
    if nothing_pending():
        os._exit(code)
    sys.exit(code)


def nothing_pending() -> bool:
    """Whether exit would run nothing of ours: no ``atexit`` handler (a full recall's
    imports register logging's), no live non-daemon thread besides this one."""
    atexit = sys.modules.get("atexit")  # no handler without it: not imported for nothing
    if atexit is not None and atexit._ncallbacks():
        return False
    threading = sys.modules.get("threading")
    if threading is None:
        return True
    current = threading.current_thread()
    return not any(
        t is not current and not t.daemon and t.is_alive() for t in threading.enumerate()
    )


def main(argv: list[str]) -> int:
    """The hook: always 0, whatever happens (a failure is recorded in the home)."""
    if argv[:1] in (["--help"], ["-h"]) or not argv:
        sys.stdout.write(USAGE)
        return 0
    home = default_home()
    event = argv[0]
    try:
        event, agent, given = parse_args(argv)
        home = given or home
        data = sys.stdin.buffer.read()
        answer = handle(event, agent, home, data)
        if answer:
            sys.stdout.write(answer)
            sys.stdout.flush()
    except BaseException as exc:  # noqa: BLE001 - the agent must never see a failure
        if isinstance(exc, SystemExit | KeyboardInterrupt):
            return 0
        hookspool.record_failure(home, event, _code(exc), f"{type(exc).__name__}: {exc}")
    return 0


def _code(exc: BaseException) -> str:
    if isinstance(exc, hookspool.SpoolFull):
        return "SPOOL_FULL"
    if isinstance(exc, HookUsage):
        return "BAD_USAGE"
    if isinstance(exc, ValueError):
        return "BAD_INPUT"
    return getattr(exc, "code", None) or "HOOK_ERROR"


def handle(event: str, agent: str, home: str, data: bytes) -> str:
    """Keep what ``event`` brings; the text the agent reads back ("" for none)."""
    payload = hookjson.loads(data) if data.strip() else {}
    if not isinstance(payload, dict):
        raise HookUsage("the hook's input is not a JSON object")
    cwd = str(payload.get("cwd") or os.getcwd())
    if switched_off(cwd):
        return ""
    if payload.get("prompt"):
        # Once, before anything keeps it: the spool, and recall's query (a running
        # supervisor answers it as a job, its payload written to the authority).
        payload["prompt"] = redact(str(payload["prompt"]))
    settings = hook_settings(home)
    capture(event, agent, home, payload, cwd, settings)
    if event not in INJECTING:
        return ""
    context = recall_context(home, event, payload, cwd, settings)
    return output(event, context) if context else ""


def switched_off(cwd: str) -> bool:
    """``MEMORYD_HOOKS=off``, or a ``.memoryd-off`` file in ``cwd`` or above it."""
    if os.environ.get("MEMORYD_HOOKS", "").lower() in ("off", "0", "false", "no"):
        return True
    path = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(path, OFF_FILE)):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def hook_settings(home: str) -> dict:
    """The settings a hook uses: defaults < memoryd.toml < ``MEMORYD_<NAME>`` (read
    here: a full Config costs a hook more than its own work). A bad value keeps the
    default (``memoryd config`` and ``doctor`` report it)."""
    values = dict(HOOK_SETTINGS)
    path = os.path.join(home, "memoryd.toml")
    if os.path.exists(path):
        import tomllib

        with open(path, "rb") as f:
            table = tomllib.load(f)
        values.update({k: table[k] for k in HOOK_SETTINGS if k in table})
    for name in HOOK_SETTINGS:
        if (env := os.environ.get(f"MEMORYD_{name.upper()}")) is not None:
            values[name] = env
    for name, default in HOOK_SETTINGS.items():
        try:
            values[name] = type(default)(values[name])
        except (TypeError, ValueError):
            values[name] = default
    return values


def base_event(event: str, agent: str, payload: dict, cwd: str) -> dict:
    return {
        "v": 1,
        "event": event,
        "agent": agent,
        "session": str(payload.get("session_id") or "unknown"),
        "cwd": cwd,
        "at": time.time(),
        "transcript_path": payload.get("transcript_path") or None,
    }


def capture(event: str, agent: str, home: str, payload: dict, cwd: str, settings: dict) -> None:
    """Spool what the event brings (redacted): a prompt, a tool call, the transcript's
    new turns, or, from an agent that gives no transcript, its last reply."""
    limit = settings["hook_spool_max_bytes"]
    record = base_event(event, agent, payload, cwd)
    if event == "UserPromptSubmit" and payload.get("prompt"):
        hookspool.append(home, {**record, "kind": "turn", "role": "user",
                                "text": payload["prompt"]}, limit)  # fmt: skip
    elif event == "PostToolUse":
        hookspool.append(home, {**record, **tool_fields(payload)}, limit)
    elif event in READING or payload.get("source") in ("resume", "compact"):
        spooled = capture_transcript(home, record, limit)
        reply = payload.get("last_assistant_message")
        if not spooled and not record["transcript_path"] and isinstance(reply, str) and reply:
            hookspool.append(home, {**record, "kind": "turn", "role": "assistant",
                                    "text": redact(reply)}, limit)  # fmt: skip
        if event in ("Stop", "SessionEnd", "PreCompact"):
            start_drain(home)


def tool_fields(payload: dict) -> dict:
    """A tool call's name, input and output, redacted; a secret file's content is
    never kept (the names ingest skips: ``.env*``, keys, credentials)."""
    tool_input = payload.get("tool_input")
    response = payload.get("tool_response")
    path = tool_input.get("file_path") or tool_input.get("path") if isinstance(
        tool_input, dict) else None  # fmt: skip
    if isinstance(path, str) and secret_file(path):
        response = SECRET_FILE_OUTPUT
    return {
        "kind": "tool",
        "tool_name": str(payload.get("tool_name") or "tool"),
        "tool_input": redact_value(tool_input),
        "tool_response": redact_value(response),
    }


def capture_transcript(home: str, record: dict, limit: int) -> bool:
    """Spool the transcript's turns past what the spool and the archive have of it
    (under the session's lock, so two hooks of one session never take one piece).
    Whether a piece was spooled."""
    from memoryd.faces.hooks.transcript import read_on

    path, session = record["transcript_path"], record["session"]
    if not path or not os.path.isfile(path):
        return False
    with hookspool.offsets_locked(home, session):
        done = hookspool.read_offsets(home, session).get(path, 0)
        offset = max(done, hookspool.spooled_to(hookspool.event_names(home), session, path))
        turns, start, end = read_on(path, offset)
        if end == start:
            return False
        for turn in turns:
            turn["text"] = redact(turn["text"])
        piece = {"path": path, "from": start, "to": end, "turns": turns}
        prefix = hookspool.transcript_prefix(session, path, end)
        hookspool.append(home, {**record, "kind": "transcript", "transcript": piece}, limit,
                         prefix=prefix)  # fmt: skip
        hookspool.write_offsets(home, session, {**hookspool.read_offsets(home, session),
                                                path: end})  # fmt: skip
    return True


def start_drain(home: str) -> None:
    """Without a supervisor listening, a draining one archives what waits (detached,
    its lines in ``hooks/drain.log``; none when another face's drain is starting);
    with one, its periodic drain takes it."""
    if _listening(home) or not os.path.exists(os.path.join(home, "authority.db")):
        return
    from memoryd.base import drainstart

    drainstart.start(home, os.path.join(hookspool.hooks_dir(home), "drain.log"))


def _listening(home: str) -> bool:
    """Whether a supervisor answers on the home's control socket (a file left by a
    killed one does not)."""
    conn = _unix_socket()
    try:
        conn.connect(_address(os.path.join(home, CONTROL_SOCKET_FILE)))
        return True
    except OSError:
        return False
    finally:
        conn.close()


def recall_context(home: str, event: str, payload: dict, cwd: str, settings: dict) -> str:
    """The recalled context for this prompt (or the session's start), "" when recall
    abstains: through the running supervisor's control socket, else here."""
    args = {"cwd": cwd, "event": event, "prompt": payload.get("prompt") or "",
            "source": payload.get("source") or ""}  # fmt: skip
    answer = _ask_supervisor(home, args, settings["hook_recall_seconds"])
    if answer is None:
        if not os.path.exists(os.path.join(home, "authority.db")):
            return ""
        return context_here(home, args)
    if not answer.get("ok"):
        raise RecallFailed(answer.get("error") or "RECALL_FAILED", answer.get("message") or "")
    return answer["result"].get("context") or ""


def context_here(home: str, args: dict) -> str:
    """Recall in this process (no supervisor listens): the package's whole import,
    with the site-packages a hook started without ``site`` (``-S``) left out."""
    if sys.flags.no_site:
        import site

        site.main()
    from memoryd.base.config import one_shot_blas

    one_shot_blas()
    from memoryd.operations.api import Memoryd
    from memoryd.operations.hook_context import context

    md = Memoryd(home)
    try:
        return context(md, **args)["context"] or ""
    finally:
        md.close()


class RecallFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def _ask_supervisor(home: str, args: dict, timeout: float) -> dict | None:
    """The supervisor's answer to a ``hook_context`` request; None when none listens."""
    path = os.path.join(home, CONTROL_SOCKET_FILE)
    conn = _unix_socket()
    conn.settimeout(timeout)
    try:
        try:
            conn.connect(_address(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        conn.sendall(hookspool.dumps({"op": "hook_context", "args": args}) + b"\n")
        chunks = []
        while not chunks or not chunks[-1].endswith(b"\n"):
            chunk = conn.recv(1 << 16)
            if not chunk:
                return None  # it stopped mid-answer: as if none listened
            chunks.append(chunk)
        return hookjson.loads(b"".join(chunks))
    except TimeoutError:
        raise RecallFailed("RECALL_TIMEOUT", f"no answer in {timeout:g}s") from None
    finally:
        conn.close()


def _unix_socket() -> "_socket.socket":
    """A UNIX stream socket from the interpreter's ``_socket``: :mod:`socket`'s import
    (``enum``, ``functools``, ``collections`` for its flag types) would cost a hook more
    than the recall it asks for; the calls made here (connect, sendall, recv,
    settimeout, close) are ``_socket``'s own."""
    import _socket

    return _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)


def _address(path: str) -> str:
    """A socket path too long for ``sun_path`` is reached through its directory."""
    if len(os.fsencode(path)) <= 103:
        return path
    fd = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{os.path.basename(path)}"  # closed at exit


def output(event: str, context: str) -> str:
    """What both agents read as added context (Claude Code's and Codex CLI's hook
    output schema: ``hookSpecificOutput`` naming the event)."""
    out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return hookspool.dumps(out).decode() + "\n"

"""Synthetic agent sessions for the hook replay benchmark (``bench_hooks.py``).

A session is a list of hook calls (:class:`Step`) as Claude Code or Codex CLI makes
them, each with the transcript lines the agent writes before it: a start, turns of
a prompt, zero to three tool calls with outputs of 10 B to 2 MB (log-uniform) and a
reply ending in ``Stop``; some sessions are compacted (``PreCompact``, the agent's
summary lines, ``SessionStart`` with ``source: compact``) or ended and resumed on the
same transcript (``SessionEnd``, ``SessionStart`` with ``source: resume``); the last
hook is ``SessionEnd`` (Claude Code) or the last ``Stop`` (Codex CLI, which has no
``SessionEnd`` hook). A tenth of the Codex sessions give no transcript: their prompt
and reply reach the archive from the hook's payload alone.

Every text the archive should keep carries a *unit* (``unit00042x007``) so a
benchmark counts each one in the archive. Secrets of every kind the hooks remove
(API keys, AWS and GitHub keys, ``.env`` assignments, a ``.env`` file read by a
tool, private keys, high-entropy tokens, ``<private>`` spans: closed, upper case,
across lines, unclosed) are planted in prompts, replies, tool inputs and tool
outputs (inside large ones too); each holds the tag ``qz7kw`` (in some case), which
nothing else generated here holds, so a raw scan for the tag finds any of them.

Everything follows from the seed; a large tool output is made when it is written.
"""

from __future__ import annotations

import random
import string
import time
from dataclasses import dataclass, field

import orjson

EVENTS_ORDER = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PreCompact",
    "Stop",
    "SessionEnd",
)
TAG = "qz7kw"  # in every planted secret (any case); nowhere else
PROJECTS = ("shopfront", "billing-api", "infra", "mobile-app", "data-pipeline", "docs-site")
MIN_OUTPUT, MAX_OUTPUT = 10, 2_000_000
PLANT_P = 0.35  # the chance a text slot holds a planted secret
COMPACT_P = RESUME_P = 0.12
NO_TRANSCRIPT_P = 0.1  # of Codex sessions
CODEX_P = 0.2
_TEXT = (
    "cache build test index query worker spool drain session value error retry lease "
    "commit schema migration handler request response config deploy branch merge "
    "module function return import class method parse render timeout socket archive "
    "the a of to in and for with on is was"
)
_WORDS = tuple(_TEXT.split())
_PATHS = tuple(
    f"src/{m}/{f}.py" for m in ("api", "core", "db", "ui") for f in ("main", "util", "models")
)
_MIXED = string.ascii_letters + string.digits


@dataclass
class Output:
    """A tool output made when written: ``size`` bytes of log-like lines from ``seed``,
    ``plant`` (a secret's text, or "") inserted at ``at`` (a fraction of it)."""

    seed: int
    size: int
    plant: str = ""
    at: float = 0.5

    def text(self) -> str:
        rng = random.Random(self.seed)
        parts, n = [], 0
        while n < self.size:
            words = " ".join(rng.choices(_WORDS, k=rng.randrange(3, 10)))
            line = f"{rng.choice(_PATHS)}:{rng.randrange(1, 999)}: {words}\n"
            parts.append(line)
            n += len(line)
        body = "".join(parts)[: self.size]
        if not self.plant:
            return body
        cut = int(len(body) * self.at)
        return f"{body[:cut]}\n{self.plant}\n{body[cut:]}"


@dataclass
class Step:
    """One hook call: the transcript lines written before it, its payload's own fields,
    the units only this hook brings (lost if it is killed before it keeps them)."""

    event: str
    fields: dict = field(default_factory=dict)
    lines: list[tuple] = field(default_factory=list)  # (kind, args...) rendered when written
    brings: list[str] = field(default_factory=list)
    final: bool = False
    partial: bool = False  # the agent is mid-way through writing the next line


@dataclass
class Session:
    index: int
    sid: str
    agent: str
    project: str
    transcript: bool
    steps: list[Step] = field(default_factory=list)
    #: unit -> "transcript" (read by offset: must be kept exactly once whatever is
    #: killed), "hook" (a hook's payload alone brings it) or "summary" (a compaction's:
    #: never kept, it sums up turns kept already)
    units: dict[str, str] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)  # every planted secret's text


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def secret(rng: random.Random) -> tuple[str, str]:
    """(kind, text) of a planted secret; its text holds the tag."""
    up, low = string.ascii_uppercase + string.digits, string.ascii_lowercase + string.digits
    kind = rng.choice(
        (
            "api_key",
            "aws",
            "github",
            "env_line",
            "private_key",
            "entropy",
            "private",
            "private_upper",
            "private_lines",
        )
    )
    if kind == "api_key":
        return kind, f"sk-ant-api03-{rand(rng, _MIXED, 10)}Qz7Kw{rand(rng, _MIXED, 18)}"
    if kind == "aws":
        return kind, f"AKIAQZ7KW{rand(rng, up, 11)}"
    if kind == "github":
        return kind, f"ghp_Qz7Kw{rand(rng, _MIXED, 31)}"
    if kind == "env_line":
        name = rng.choice(
            ("DATABASE_PASSWORD", "STRIPE_SECRET_KEY", "OPENAI_API_KEY", "AUTH_TOKEN")
        )
        return kind, f"{name}={TAG}{rand(rng, low, 15)}"
    if kind == "private_key":
        body = "\n".join(rand(rng, _MIXED + "+/", 64) for _ in range(3))
        return kind, (
            f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn{TAG.upper()}{body}\n"
            "-----END OPENSSH PRIVATE KEY-----"
        )
    if kind == "entropy":
        return kind, f"{rand(rng, _MIXED, 14)}Qz7Kw{rand(rng, _MIXED, 21)}"
    words = " ".join(rng.choices(_WORDS, k=4))
    if kind == "private":
        return kind, f"<private>my {words} {TAG}{rand(rng, low, 12)}</private>"
    if kind == "private_upper":
        return kind, f"<PRIVATE>{words} {TAG.upper()}{rand(rng, up, 12)}</Private>"
    return kind, f"<private>\n{words}\n{TAG}{rand(rng, low, 12)}\n</private>"


class Builder:
    """Builds one session's steps, drawing from its own seeded generator."""

    def __init__(self, index: int, seed: int, max_output: int) -> None:
        self.rng = random.Random(seed * 1_000_003 + index)
        self.max_output = max_output
        agent = "codex" if self.rng.random() < CODEX_P else "claude-code"
        has = agent == "claude-code" or self.rng.random() >= NO_TRANSCRIPT_P
        sid = f"{index:05d}-{rand(self.rng, string.hexdigits.lower()[:16], 8)}"
        self.s = Session(index, sid, agent, self.rng.choice(PROJECTS), has)
        self.count = 0

    def unit(self, kind: str) -> str:
        self.count += 1
        u = f"unit{self.s.index:05d}x{self.count:03d}"
        self.s.units[u] = kind
        return u

    def plant(self, text: str, *, end_ok: bool = True) -> str:
        """``text``, sometimes with a secret in it (an unclosed ``<private>`` only at its end)."""
        if self.rng.random() >= PLANT_P:
            return text
        _, s = secret(self.rng)
        self.s.secrets.append(s)
        if end_ok and self.rng.random() < 0.1:
            return f"{text} <private>and the rest {TAG}{rand(self.rng, string.digits, 12)}"
        return f"{text} {s} ok"

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choices(_WORDS, k=self.rng.randint(lo, hi)))

    def text_kind(self) -> str:
        return "transcript" if self.s.transcript else "hook"

    def add(self, step: Step) -> None:
        self.s.steps.append(step)

    def build(self) -> Session:
        self.add(Step("SessionStart", {"source": "startup"}, [("meta",)]))
        turns = self.rng.randint(1, 5)
        for t in range(turns):
            if t and self.rng.random() < COMPACT_P:
                self.compaction()
            if t and self.rng.random() < RESUME_P:
                self.resume()
            self.turn()
        if self.s.agent == "claude-code":
            self.add(Step("SessionEnd", {"reason": "exit"}))
        self.s.steps[-1].final = True
        return self.s

    def turn(self) -> None:
        u = self.unit(self.text_kind())
        prompt = self.plant(f"{u} please look at the {self.words(3, 12)}")
        self.add(
            Step(
                "UserPromptSubmit",
                {"prompt": prompt},
                [("user", prompt)],
                brings=[] if self.s.transcript else [u],
            )
        )
        for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
            self.tool_call()
        r = self.unit(self.text_kind())
        reply = self.plant(f"{r} done: {self.words(5, 30)}")
        fields = {"last_assistant_message": reply} if self.s.agent == "codex" else {}
        self.add(
            Step(
                "Stop",
                fields,
                [("assistant", reply)],
                brings=[] if self.s.transcript else [r],
                partial=self.rng.random() < 0.3,
            )
        )

    def tool_call(self) -> None:
        u = self.unit("hook")
        rng = self.rng
        size = min(self.max_output, int(MIN_OUTPUT * (MAX_OUTPUT / MIN_OUTPUT) ** rng.random()))
        if rng.random() < 0.08:  # a secret file read: its content is never kept
            _, s = secret(rng)
            content = f"DB_HOST=localhost\nFEATURE_FLAG={TAG}{rand(rng, _MIXED, 16)}\n{s}\n"
            self.s.secrets.append(content)
            name, tin = "Read", {"file_path": f"/srv/{self.s.project}/.env", "note": u}
            out: object = content
        else:
            planted = ""
            if rng.random() < PLANT_P:
                _, planted = secret(rng)
                self.s.secrets.append(planted)
            out = Output(rng.randrange(1 << 30), size, planted, rng.random())
            name = "Bash" if self.s.agent == "claude-code" else "shell"
            tin = {"command": self.plant(f"grep -rn {u} src", end_ok=False)}
        self.add(
            Step(
                "PostToolUse",
                {"tool_name": name, "tool_input": tin, "output": out},
                [("tool_use", name, tin), ("tool_result", out)],
                brings=[u],
            )
        )

    def compaction(self) -> None:
        """PreCompact reads on; the agent writes its summary; SessionStart(compact)."""
        self.add(Step("PreCompact", {"trigger": self.rng.choice(("auto", "manual"))}))
        u = self.unit("summary")
        self.add(Step("SessionStart", {"source": "compact"}, [("summary", u)]))

    def resume(self) -> None:
        """The session ends and is resumed later on the same transcript."""
        if self.s.agent == "claude-code":
            self.add(Step("SessionEnd", {"reason": "exit"}))
        self.add(Step("SessionStart", {"source": "resume"}, [("meta",)]))


def sessions(n: int, seed: int, max_output: int = MAX_OUTPUT) -> list[Session]:
    return [Builder(i, seed, max_output).build() for i in range(n)]


# -- the agents' files and payloads ------------------------------------------------------


def stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def output_text(out: object) -> str:
    return out.text() if isinstance(out, Output) else str(out)


def tool_response(agent: str, name: str, text: str) -> object:
    """The ``tool_response`` of a PostToolUse payload, as each agent gives it."""
    if agent == "codex":
        return text
    if name == "Read":
        return {"type": "text", "file": {"content": text, "numLines": text.count("\n")}}
    return {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}


def render(s: Session, line: tuple, text_of: dict) -> bytes:
    """One transcript line in ``s.agent``'s format (Claude Code's session JSONL; Codex
    CLI's rollout); ``text_of`` caches tool outputs made for the step's payload."""
    kind, *args = line
    if s.agent == "claude-code":
        obj = _claude_line(s, kind, args, text_of)
    else:
        obj = _codex_line(s, kind, args, text_of)
    return b"".join(orjson.dumps(o) + b"\n" for o in obj)


def _claude_line(s: Session, kind: str, args: list, text_of: dict) -> list[dict]:
    base = {
        "isSidechain": False,
        "userType": "external",
        "cwd": f"/srv/{s.project}",
        "sessionId": s.sid,
        "version": "1.0.98",
        "uuid": f"{s.sid}-{time.time_ns()}",
        "timestamp": stamp(),
    }
    if kind == "meta":
        return [
            {
                **base,
                "type": "user",
                "isMeta": True,
                "message": {"role": "user", "content": "<command-name>/clear</command-name>"},
            }
        ]
    if kind == "user":
        return [{**base, "type": "user", "message": {"role": "user", "content": args[0]}}]
    if kind == "assistant":
        return [
            {
                **base,
                "type": "assistant",
                "message": {
                    "id": "msg_01",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": args[0]}],
                },
            }
        ]
    if kind == "tool_use":
        return [
            {
                **base,
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "toolu_01", "name": args[0], "input": args[1]}
                    ],
                },
            }
        ]
    if kind == "tool_result":
        text = text_of.setdefault(id(args[0]), output_text(args[0]))
        return [
            {
                **base,
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_01", "content": text}
                    ],
                },
                "toolUseResult": {"stdout": text, "stderr": ""},
            }
        ]
    # a compaction: the boundary, then the summary the agent continues from
    return [
        {
            **base,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
        },
        {
            **base,
            "type": "user",
            "isCompactSummary": True,
            "message": {
                "role": "user",
                "content": f"This session is being continued from an earlier one. {args[0]}",
            },
        },
    ]


def _codex_line(s: Session, kind: str, args: list, text_of: dict) -> list[dict]:
    at = stamp()

    def item(payload: dict) -> dict:
        return {"timestamp": at, "type": "response_item", "payload": payload}

    if kind == "meta":
        return [
            {
                "timestamp": at,
                "type": "session_meta",
                "payload": {"id": s.sid, "cwd": f"/srv/{s.project}"},
            }
        ]
    if kind in ("user", "assistant"):
        block = "input_text" if kind == "user" else "output_text"
        return [
            item({"type": "message", "role": kind, "content": [{"type": block, "text": args[0]}]})
        ]
    if kind == "tool_use":
        return [
            item(
                {
                    "type": "function_call",
                    "name": args[0],
                    "arguments": orjson.dumps(args[1]).decode(),
                    "call_id": "call_01",
                }
            )
        ]
    if kind == "tool_result":
        text = text_of.setdefault(id(args[0]), output_text(args[0]))
        return [item({"type": "function_call_output", "call_id": "call_01", "output": text})]
    return [
        {"timestamp": at, "type": "compacted", "payload": {"message": f"Summary so far. {args[0]}"}}
    ]


def payload(s: Session, step: Step, cwd: str, transcript: str | None, text_of: dict) -> dict:
    """The hook's stdin: the common fields, then the event's own."""
    p = {
        "session_id": s.sid,
        "transcript_path": transcript,
        "cwd": cwd,
        "hook_event_name": step.event,
    }
    p |= {"permission_mode": "default"} if s.agent == "claude-code" else {"model": "gpt-5-codex"}
    fields = dict(step.fields)
    if step.event == "PostToolUse":
        out = fields.pop("output")
        text = text_of.setdefault(id(out), output_text(out))
        fields["tool_response"] = tool_response(s.agent, fields["tool_name"], text)
    return p | fields

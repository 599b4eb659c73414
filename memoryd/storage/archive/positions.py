"""Posting values: a term's frequency, positions and turn structure in one version.

The archive's derived layer is deterministic (archive-retention: "terms,
positions, structural scores"): everything here is a pure function of a
version's canonical content and meta, so :meth:`rebuild_postings` reproduces
what appends wrote byte for byte.

**Turns.** A version is read line by line. A line opening with a role
(``user:``, ``assistant:``, ... as :func:`memoryd.text.evidence.speaker_of`
reads them), a tool role (``tool:``, ``tool_result:``, ``function:``, the
tool roles of JSONL transcripts) or, in a dialogue, a named speaker
(``Name: text``, also after a role: :func:`~memoryd.text.evidence.named_speaker`,
kept only when :func:`~memoryd.text.evidence.is_dialogue` says the names make
a conversation) opens a new turn; other lines continue the current one. A
named turn without a role keeps the last conversational role (as archive
search reads transcripts). Turn
0 is the first turn (or the text before it). A version that is a transcript's
tool output (its meta names its ``session_doc``) is tool output throughout.

**Positions** count the version's tokens (:func:`tokenize` order, from 0).

**Value layout** (``LAYOUT`` 2), unsigned LEB128 varints after a tag byte::

    0x02 tf  n_names (len utf8)*n_names  group*
    group := turn_delta flags count pos_delta*count

Groups are the turns holding the term, in order; ``turn_delta`` and
``pos_delta`` are differences from the previous group's turn and the previous
position (the first ones from 0). ``flags`` = role code (0 none, 1 user,
2 assistant, 3 tool) | tool output << 2 | (index of the speaker's name + 1) << 3.
A layout-1 value is the bare frequency, ``u32`` big endian (its first byte is
0, which no layout-2 value starts with): it reads as a posting without
positions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memoryd.storage.archive.keys import U32

#: Layout of posting values written now (see the module docstring); 1 = frequency only.
LAYOUT = 2
_TAG = 2
ROLES: tuple[str | None, ...] = (None, "user", "assistant", "tool")
_ROLE_CODE = {r: i for i, r in enumerate(ROLES)}
_TOOL_LINE = re.compile(r"^\s*\**(tool|tool_result|function)\**\s*:", re.I)
_TERM_RE = re.compile(r"\w+")

#: Most distinct terms indexed per version (the first ones in text order).
MAX_TERMS_PER_VERSION = 10_000
MAX_TERM_CHARS = 64


def tokenize(text: str) -> list[str]:
    """The archive's exact terms: lowercase ``\\w+`` runs of at most 64 characters."""
    return [t for t in _TERM_RE.findall(text.lower()) if len(t) <= MAX_TERM_CHARS]


@dataclass(frozen=True)
class Turn:
    """Who holds a stretch of a version: its turn index, role, named speaker (first
    name, lowercased) and whether it is tool output."""

    index: int
    role: str | None = None
    speaker: str | None = None
    tool: bool = False


@dataclass(frozen=True)
class TurnHits:
    """A term's occurrences (token positions) inside one turn."""

    turn: Turn
    positions: tuple[int, ...]


@dataclass(frozen=True)
class Posting:
    """One term in one version: frequency and, per turn holding it, its positions
    (empty ``turns`` for a layout-1 value, which has no positions)."""

    tf: int
    turns: tuple[TurnHits, ...] = ()

    @property
    def positions(self) -> tuple[int, ...]:
        return tuple(p for h in self.turns for p in h.positions)


def version_turns(content: str, meta: dict[str, Any] | None = None) -> list[Turn]:
    """The turn of each line of ``content`` (see the module docstring)."""
    # Archive search reads speakers by the same rules; imported here because the
    # search package imports this store.
    from memoryd.text.evidence import is_dialogue, named_speaker, speaker_of

    lines = content.split("\n")
    tool_doc = bool(meta and meta.get("session_doc"))
    tools = [bool(_TOOL_LINE.match(line)) for line in lines]
    names = [None if t else named_speaker(line)[0] for line, t in zip(lines, tools, strict=True)]
    if not is_dialogue(lines, names):
        names = [None] * len(lines)
    out: list[Turn] = []
    turn = Turn(0, tool=tool_doc)
    current = None  # the last conversational role: a named turn without one keeps it
    seen = False
    for line, tool_line, named in zip(lines, tools, names, strict=True):
        role = "tool" if tool_line else speaker_of(line)[0]
        if role or named:
            index = turn.index + 1 if seen else 0
            current = current if tool_line else role or current
            turn = Turn(index, role or current, named, tool_doc or tool_line)
        seen = seen or bool(line.strip())
        out.append(turn)
    return out


def occurrences(
    content: str, meta: dict[str, Any] | None = None
) -> tuple[dict[str, list[tuple[Turn, list[int]]]], int]:
    """Each indexed term's turns and its positions in each (the first
    MAX_TERMS_PER_VERSION distinct terms, in text order), and the token count."""
    occ: dict[str, list[tuple[Turn, list[int]]]] = {}
    pos = 0
    for line, turn in zip(content.split("\n"), version_turns(content, meta), strict=True):
        for t in tokenize(line):
            groups = occ.get(t)
            if groups is not None:
                if groups[-1][0] is turn:  # lines of one turn share its Turn
                    groups[-1][1].append(pos)
                else:
                    groups.append((turn, [pos]))
            elif len(occ) < MAX_TERMS_PER_VERSION:
                occ[t] = [(turn, [pos])]
            pos += 1
    return occ, pos


def posting_values(
    content: str, meta: dict[str, Any] | None = None
) -> tuple[dict[str, bytes], int]:
    """Encoded posting values of a version's terms and its token count: what an
    append writes and a rebuild recomputes."""
    occ, length = occurrences(content, meta)
    return {t: encode(groups) for t, groups in occ.items()}, length


# ---- encoding


def _pack(out: bytearray, ints: list[int]) -> None:
    append = out.append
    for n in ints:
        while n >= 0x80:
            append((n & 0x7F) | 0x80)
            n >>= 7
        append(n)


def _unpack(raw: bytes, start: int, count: int | None = None) -> tuple[list[int], int]:
    """``count`` varints of ``raw`` from ``start`` (all to the end when None) and where
    they end."""
    out: list[int] = []
    n = shift = 0
    i = start
    end = len(raw)
    while i < end and (count is None or len(out) < count):
        b = raw[i]
        i += 1
        if b < 0x80:
            out.append(n | b << shift)
            n = shift = 0
        else:
            n |= (b & 0x7F) << shift
            shift += 7
    return out, i


def encode(groups: list[tuple[Turn, list[int]]]) -> bytes:
    """A layout-2 value of a term's turns and its positions in each (turns and
    positions increasing)."""
    names: dict[str, int] = {}
    ints: list[int] = []
    n = prev_turn = prev_pos = 0
    for turn, positions in groups:
        flags = _ROLE_CODE[turn.role] | turn.tool << 2
        if turn.speaker:
            flags |= (names.setdefault(turn.speaker, len(names)) + 1) << 3
        ints += (turn.index - prev_turn, flags, len(positions))
        for pos in positions:
            ints.append(pos - prev_pos)
            prev_pos = pos
        n += len(positions)
        prev_turn = turn.index
    out = bytearray((_TAG,))
    _pack(out, [n, len(names)])
    for name in names:
        b = name.encode()
        _pack(out, [len(b)])
        out += b
    _pack(out, ints)
    return bytes(out)


def tf(raw: bytes) -> int:
    """The term frequency of a value of either layout (without decoding the rest)."""
    if raw[0] == 0:
        return U32.unpack(raw)[0]
    return raw[1] if raw[1] < 0x80 else _unpack(raw, 1, 1)[0][0]


def decode(raw: bytes) -> Posting:
    """A value of either layout as a :class:`Posting`."""
    if raw[0] == 0:
        return Posting(U32.unpack(raw)[0])
    (n, count), i = _unpack(raw, 1, 2)
    names: list[str] = []
    for _ in range(count):
        (size,), i = _unpack(raw, i, 1)
        names.append(raw[i : i + size].decode())
        i += size
    ints = _unpack(raw, i)[0]
    groups: list[TurnHits] = []
    turn = pos = 0
    j = 0
    while j < len(ints):
        delta, flags, count = ints[j : j + 3]
        turn += delta
        deltas = ints[j + 3 : j + 3 + count]
        j += 3 + count
        positions = []
        for d in deltas:
            pos += d
            positions.append(pos)
        speaker = names[(flags >> 3) - 1] if flags >> 3 else None
        t = Turn(turn, ROLES[flags & 3], speaker, bool(flags & 4))
        groups.append(TurnHits(t, tuple(positions)))
    return Posting(n, tuple(groups))

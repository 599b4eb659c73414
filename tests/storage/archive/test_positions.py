"""Posting values: positions and turn structure derived from a version's text."""

from __future__ import annotations

from memoryd.storage.archive import keys, positions
from memoryd.storage.archive.positions import Posting, Turn, decode, encode, posting_values
from memoryd.storage.archive.postings import term_counts

DIALOGUE = "\n".join(
    [
        "Marta: I repaired the bicycle chain yesterday.",
        "Tomas: Did you need a new chain?",
        "The old one was rusty anyway.",
        "tool: chain_price = 12.50",
        "Marta: No, I cleaned the chain and oiled it.",
    ]
)


def turns_of(text: str, meta=None) -> list[tuple[int, str | None, str | None, bool]]:
    return [(t.index, t.role, t.speaker, t.tool) for t in positions.version_turns(text, meta)]


def test_named_dialogue_turns_speakers_and_a_tool_line():
    assert turns_of(DIALOGUE) == [
        (0, None, "marta", False),
        (1, None, "tomas", False),
        (1, None, "tomas", False),  # a line without a prefix continues the turn
        (2, "tool", None, True),
        (3, None, "marta", False),  # the tool output does not carry on
    ]


def test_roles_after_role_prefixes_and_named_speakers_after_roles():
    text = "user: Ana: I sold the piano.\nassistant: Ben: Why?\nuser: Ana: No room."
    assert turns_of(text) == [(0, "user", "ana", False), (1, "assistant", "ben", False),
                              (2, "user", "ana", False)]  # fmt: skip


def test_labels_in_prose_are_not_speakers():
    text = "The release notes follow.\nNote: the cache is rebuilt on start.\nMore prose here.\n"
    assert {t.speaker for t in positions.version_turns(text)} == {None}


def test_a_transcripts_tool_output_document_is_tool_output_throughout():
    text = "Traceback (most recent call last):\nValueError: bad chain"
    assert {t.tool for t in positions.version_turns(text, {"session_doc": "s-1"})} == {True}
    assert {t.tool for t in positions.version_turns(text, {"turns": 2})} == {False}


def test_postings_hold_positions_per_speakers_turn():
    values, length = posting_values(DIALOGUE)
    chain = decode(values["chain"])
    assert chain.tf == 3
    assert [(h.turn.speaker, h.turn.index, h.turn.tool) for h in chain.turns] == [
        ("marta", 0, False),
        ("tomas", 1, False),
        ("marta", 3, False),
    ]
    tokens = positions.tokenize(DIALOGUE)
    assert [tokens[p] for p in chain.positions] == ["chain"] * 3
    assert decode(values["chain_price"]).turns[0].turn.tool
    assert length == len(tokens)


def test_same_terms_and_length_as_term_counts():
    """Retirement and purge find a version's posting keys with term_counts: the
    values must be written under exactly those terms, also past the term cap."""
    many = " ".join(f"w{i}" for i in range(positions.MAX_TERMS_PER_VERSION + 50))
    for text in (DIALOGUE, many + "\nw3 w10049 w10050 extra", "", "ünïcode ✓ wörds\n\n"):
        values, length = posting_values(text)
        counts, n = term_counts(text)
        assert (set(values), length) == (set(counts), n)
        assert {t: decode(v).tf for t, v in values.items()} == counts


def test_encode_decode_round_trip_with_large_gaps_and_names():
    groups = [
        (Turn(0, "user", "ana"), [3, 200]),
        (Turn(7, "assistant", "bé"), [70_000]),
        (Turn(300, "tool", None, True), [2**31]),
    ]
    got = decode(encode(groups))
    assert got.tf == 4 and positions.tf(encode(groups)) == 4
    assert [(h.turn, h.positions) for h in got.turns] == [
        (Turn(0, "user", "ana"), (3, 200)),
        (Turn(7, "assistant", "bé"), (70_000,)),
        (Turn(300, "tool", None, True), (2**31,)),
    ]


def test_a_layout_1_value_reads_as_a_frequency_without_positions():
    old = keys.U32.pack(7)
    assert decode(old) == Posting(7) and positions.tf(old) == 7
    assert decode(old).positions == ()

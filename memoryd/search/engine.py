"""Project chunks as a source of the search pipeline (:mod:`memoryd.search.pipeline`).

``search(db, project, query)`` returns DESIGN.md's search JSON::

    {"status": "ok" | "abstained",
     "items": [{"path", "start_line", "end_line", "score", "excerpt"}, ...],
     "gap": str | None}

The pipeline analyzes the question and plans its focus terms on the project's
term statistics (cached per index generation); this source then:

1. finds lexical candidates: BM25 over the focus terms (postings, or one FTS5
   query of quoted phrases -- user text never reaches MATCH unescaped), each
   with the focus terms it holds; exact paths and identifiers add their chunks;
2. admits them through the gate (coverage on the asked speaker's lines for
   transcripts; for a question naming a speaker of ``Name:`` turns, on what
   that person said or what was said about them; named entities evidenced);
3. fuses by reciprocal rank (k = 60) the BM25 order, chunk and file coverage
   and the dense route's cosine over the head of the list;
4. folds copies of one chunk text at other paths into its item (``also_at``).

An item's score is its evidence (the share of the question's specificity it
holds) times its fused rank score (:func:`memoryd.search.pipeline.scored`).
Nothing admitted: a gap naming what evidence was missing, never a claim that
the fact does not exist. ``min_score`` (on the score, 0..1) can only drop
items the gate admitted; no argument disables the gate.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memoryd.search import gate as gate_mod
from memoryd.search import pipeline, semantic
from memoryd.search.fts_query import phrase
from memoryd.search.pipeline import NOT_ABSENCE, Found, Fusion, terms_list
from memoryd.search.stats import TermStats, term_stats
from memoryd.search.ties import by_content, chunk_info
from memoryd.storage import fts
from memoryd.storage.corpus import (
    chunks_of_files,
    file_texts,
    live_paths,
    project_id,
    read_costs,
)
from memoryd.text.dense import (
    Encoder,
    HashingEncoder,
    cosines,
    default_encoder,
    plain_vectors,
)
from memoryd.text.evidence import (
    asked_persons,
    focus_prefixes,
    multiword_names,
    other_sense,
    person_text,
    speaker_names,
    unsaid_names,
    without_persons,
)
from memoryd.text.evidence import held as _held
from memoryd.text.evidence import speaker_text as _speaker_text
from memoryd.text.terms import (
    CONTRAST_WORDS,
    Query,
    Term,
    stem,
    stems,
    words,
)

POOL = 200  # lexical candidates the gate looks at
# Posting entries a query reads whole; past it its commoner terms are only looked up on
# the candidates the rarer ones give (a monorepo's common words).
POSTINGS_BUDGET = 200_000
PERSON_PROBE = 10  # candidates read to tell whether a named person is a speaker
MAX_PHRASES = 63  # bits of the FTS5 auxiliary function's answer
IDENTIFIER_CHUNKS = 20  # chunks a named identifier adds (its best by BM25)
DENSE_HEAD = 10  # admitted candidates (at least) the dense route reorders
# Tokens of a batch of hashing vectors made in Python when numpy is not loaded (about
# 30 ms at most, numpy's import about 80): a one-shot search of a small project.
PLAIN_TOKENS = 50_000
EXCERPT_CHARS = 320
_FILE_CACHE = 512
_TOKEN_CACHE = 5_000  # chunk texts' (and paths') tokens kept per generation (about 10 MB)


@dataclass(slots=True)  # about two hundred made per query
class Candidate:
    rowid: int
    bm25_rank: int
    matched: set[str]
    exact: bool = False
    path: str = ""
    start_line: int = 0
    end_line: int = 0
    text: str | None = None
    cosine: float | None = None
    verdict: gate_mod.Verdict | None = None
    spoken: set[str] | None = None  # focus terms on the asked speaker's lines (transcripts)
    tokens: list[str] | None = None  # stems of text, when tokenized
    confirmed: bool = False  # its text was read for a word's other sense
    together: bool = False  # its text says focus terms together (gate: "said together")


def _lexical(db, pid: int, stats: TermStats, terms: Sequence, pool: int) -> list[Candidate]:
    terms = list(terms[:62])
    read, checked = _read_or_checked(stats, terms)
    if checked:
        found = _lexical_bounded(db, pid, stats, terms, read, checked, pool)
        if found is not None:
            return found
    top = stats.bm25_scored([t.all_stems for t in terms], pool) if terms else []
    if top is not None:
        held: dict[int, set[str]] = {}  # one (never mutated) set per combination
        for _, mask, _ in top:
            if mask not in held:
                held[mask] = {t.stem for i, t in enumerate(terms) if mask >> i & 1}
        top = by_content(db, stats, top, pool)
        return [Candidate(rowid, rank, held[mask]) for rank, (rowid, mask, _) in enumerate(top)]
    # No postings (another index layout): one FTS5 query, an auxiliary function
    # reporting which phrases (a term's forms the project holds) each row holds, as
    # bits of one 64-bit integer.
    phrases, owner = _phrases(stats, terms)
    if not phrases:
        return []
    rows = fts.ranked_with_phrases(db, pid, " OR ".join(phrases), pool)
    rows = by_content(db, stats, [(r, m, -rank) for r, m, rank in rows], pool)
    out = []
    for rank, (rowid, mask, _) in enumerate(rows):
        matched = {t.stem for i, t in enumerate(owner) if mask >> i & 1}
        out.append(Candidate(rowid, rank, matched))
    return out


def _phrases(stats: TermStats, terms: Sequence) -> tuple[list[str], list]:
    """FTS5 phrases of ``terms`` (each term's word and the forms the project holds)
    and, for each, the term it stands for."""
    phrases: list[str] = []
    owner: list[Term] = []
    for t in terms:
        for form in (t.word, *t.forms):
            if form != t.word and not stats.df(stem(form)):
                continue
            ph = phrase(form)
            if ph is not None and ph not in phrases and len(phrases) < MAX_PHRASES:
                phrases.append(ph)
                owner.append(t)
    return phrases, owner


def _read_or_checked(stats: TermStats, terms: list) -> tuple[list[int], list[int]]:
    """Which terms' postings are read whole (the rarest, within
    :data:`POSTINGS_BUDGET` entries; always at least one) and which are only checked
    on the candidates those give. In a small project every term is read."""
    df = {i: sum(stats.df(s) for s in t.all_stems) for i, t in enumerate(terms)}
    read, checked, total = [], [], 0
    for i in sorted(df, key=lambda i: (df[i], i)):
        if not read or total + df[i] <= POSTINGS_BUDGET:
            read.append(i)
            total += df[i]
        else:
            checked.append(i)
    return read, checked


def _lexical_bounded(
    db, pid: int, stats: TermStats, terms: list, read: list[int], checked: list[int], pool: int
) -> list[Candidate] | None:
    """Candidates of a query whose common terms would cost more than the budget to
    read: BM25 over the read terms picks ``pool`` chunks, their own tokens or FTS5
    tell which of the common terms each holds (:func:`_phrases_held`), and each held
    common term adds its BM25 at one occurrence in a chunk of average length (its idf).
    A chunk holding none of the read terms is no candidate (MaxScore's bound: the
    common terms alone score least). None when postings are unavailable."""
    top = stats.bm25_scored([terms[i].all_stems for i in read], pool)
    if top is None:
        return None
    phrases, owner = _phrases(stats, [terms[i] for i in checked])
    cands = [Candidate(rowid, 0, set()) for rowid, _, _ in top]
    held = _phrases_held(db, pid, stats, phrases, cands)
    idf = {t.stem: stats.idf(t.stem) for t in owner}
    scored = []
    for c, (_, mask, score) in zip(cands, top, strict=True):
        matched = {terms[read[i]].stem for i in range(len(read)) if mask >> i & 1}
        common = {t.stem for i, t in enumerate(owner) if held[c.rowid] >> i & 1}
        c.matched = matched | common
        scored.append((c.rowid, c, score + sum(idf[s] for s in common)))
    scored = by_content(db, stats, sorted(scored, key=lambda x: (-x[2], x[0])), pool)
    for rank, (_, c, _) in enumerate(scored):
        c.bm25_rank = rank
    return [c for _, c, _ in scored]


def _phrases_held(
    db, pid: int, stats: TermStats, phrases: list[str], cands: list[Candidate]
) -> dict[int, int]:
    """rowid -> bit mask of the ``phrases`` (FTS5 strings of :func:`phrase`) each
    candidate's row holds.

    An FTS5 lookup costs about 80 µs a candidate (a seek in every segment of the
    index), so the answer is read from the row's own tokens where they are cheap:
    a chunk's tokens are kept per generation by content hash, and a text not
    tokenized yet is read when another candidate shares it (copies of a file at
    several paths) or its file was read already. A phrase is held when its tokens
    follow each other in the chunk's text or in its path (the row's two columns),
    tokenized by the index's own tokenizer. Only the other candidates are looked up
    in FTS5."""
    if not phrases:
        return {c.rowid: 0 for c in cands}
    info = chunk_info(db, stats, [c.rowid for c in cands])
    known: OrderedDict[bytes, str] = stats.extra.setdefault("tokens", OrderedDict())  # type: ignore[assignment]
    files = stats.extra.get("files", {})
    unknown: dict[bytes, list[Candidate]] = {}
    for c in cands:
        if c.rowid in info and info[c.rowid][5] not in known:
            unknown.setdefault(info[c.rowid][5], []).append(c)
    read = [g[0] for g in unknown.values() if len(g) > 1 or info[g[0].rowid][1] in files]
    _load(db, stats, read)
    for c in read:
        known[info[c.rowid][5]] = _token_line(c.text or "")
    looked_up = [c.rowid for c in cands if c.rowid not in info or info[c.rowid][5] not in known]
    held = fts.phrases_held(db, pid, " OR ".join(phrases), looked_up) if looked_up else {}
    needles = [_token_line(ph[1:-1].replace('""', '"')) for ph in phrases]
    paths: dict[str, str] = stats.extra.setdefault("path_tokens", {})  # type: ignore[assignment]
    for c in cands:
        row = info.get(c.rowid)
        if row is None or row[5] not in known:
            held.setdefault(c.rowid, 0)
            continue
        body = known[row[5]]
        known.move_to_end(row[5])
        path = paths.get(row[2])
        if path is None:
            if len(paths) > _TOKEN_CACHE:
                paths.clear()
            path = paths[row[2]] = _token_line(row[2])
        held[c.rowid] = sum(1 << i for i, n in enumerate(needles) if n in body or n in path)
    while len(known) > _TOKEN_CACHE:
        known.popitem(last=False)
    return held


def _token_line(text: str) -> str:
    """The indexed tokens of ``text`` in order, each between spaces (a phrase of
    tokens is held exactly when its tokens, so written, are a substring). One string,
    which the garbage collector never visits."""
    return f" {' '.join(stems(text))} "


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(s: str) -> str:
    """``s`` with ASCII letters lowercased, others kept (as SQLite's LIKE folds case)."""
    return s.lower() if s.isascii() else s.translate(_ASCII_LOWER)


def _live_paths(db, pid: int, stats: TermStats) -> tuple[dict[str, int], dict[str, list]]:
    """The project's live files by path and by last path segment in ASCII lowercase
    (SQLite's LIKE folds ASCII only), read in one statement once per generation."""
    cached = stats.extra.get("paths")
    if cached is None:
        exact: dict[str, int] = {}
        by_name: dict[str, list[tuple[int, str]]] = {}
        for fid, path in live_paths(db, pid):
            exact[path] = fid
            low = _ascii_lower(path)
            by_name.setdefault(low[low.rfind("/") + 1 :], []).append((fid, low))
        cached = stats.extra["paths"] = (exact, by_name)
    return cached  # type: ignore[return-value]


def _named_files(db, pid: int, stats: TermStats, p: str) -> set[int]:
    """Live files whose path is ``p`` or ends with ``/p`` (ASCII case folded, as
    ``path LIKE '%/p'`` matched before): a dictionary lookup by the last segment
    instead of a scan of every path per query."""
    exact, by_name = _live_paths(db, pid, stats)
    low = _ascii_lower(p)
    tail = "/" + low
    out = {fid for fid, path in by_name.get(low[low.rfind("/") + 1 :], ()) if path.endswith(tail)}
    if p in exact:
        out.add(exact[p])
    return out


def _exact(db, pid: int, stats: TermStats, q: Query) -> tuple[set[int], list[int]]:
    """File ids named by path, and chunk rowids holding a named identifier."""
    file_ids: set[int] = set()
    for p in q.paths:
        file_ids |= _named_files(db, pid, stats, p.strip("./") if p.startswith("./") else p)
    rowids: list[int] = []
    for ident in q.identifiers:
        match = phrase(ident)
        if match is None:
            continue
        top = [(r, -rank) for r, rank in fts.ranked(db, pid, match, IDENTIFIER_CHUNKS)]
        rowids.extend(r for r, _ in by_content(db, stats, top, IDENTIFIER_CHUNKS))
    return file_ids, rowids


def _load(db, stats: TermStats, cands: list[Candidate]) -> None:
    """Fill path, lines and text of candidates (file texts cached per generation); a
    text held at several paths (copies, one content hash) is read from one of them.

    A cached file is a tuple of its lines, not a list: the cyclic garbage collector
    stops tracking a tuple of strings after its first collection, while it visits
    every item of a list in each full collection (several ms at 512 cached files,
    paid by whichever query triggers it)."""
    todo = [c for c in cands if c.text is None]
    if not todo:
        return
    files: OrderedDict[int, tuple[str, ...]] = stats.extra.setdefault("files", OrderedDict())  # type: ignore[assignment]
    info = chunk_info(db, stats, [c.rowid for c in todo])
    # One copy read per chunk text (by content hash): copies of a vendored file sit in
    # other blocks, each decompressed up to the file. A copy whose file is cached, else
    # the one whose read decompresses the fewest bytes.
    copies: dict[bytes, list[tuple]] = {}
    for c in todo:
        r = info.get(c.rowid)
        if r is not None:
            copies.setdefault(r[5], []).append(r)
    choose = {r[1] for rows in copies.values() if len(rows) > 1 for r in rows} - files.keys()
    cost = read_costs(db, choose) if choose else {}
    read = {
        h: min(rows, key=lambda r: (0 if r[1] in files else cost.get(r[1], 1), r[0]))
        for h, rows in copies.items()
    }
    need = {r[1] for r in read.values() if r[1] not in files}
    for fid, text in file_texts(db, need).items():
        files[fid] = tuple(text.split("\n"))
    for c in todo:
        r = info.get(c.rowid)
        if r is None:
            c.text = ""
            continue
        _, _, c.path, c.start_line, c.end_line, content = r
        _, fid, _, start, end, _ = read[content]
        lines = files[fid]
        files.move_to_end(fid)
        c.text = "\n".join(lines[start - 1 : end])
    while len(files) > _FILE_CACHE:
        files.popitem(last=False)


def _stems(c: Candidate) -> list[str]:
    """Indexed stems of the candidate's text, tokenized once per query."""
    if c.tokens is None:
        c.tokens = stems(c.text) if c.text else []
    return c.tokens


def _excerpt(text: str, focus: set[str], prefixes: Sequence[str], alias: dict[str, str]) -> str:
    """Up to three lines from the (first) line holding the most distinct focus terms.

    Only lines holding one of the focus terms' ``prefixes`` (:func:`focus_prefixes`)
    are tokenized to count the terms exactly.
    """
    lower = text.lower()
    if len(lower) != len(text):  # a letter whose lowercase is longer: keep offsets
        lower = "".join(ch.lower()[:1] for ch in text)
    starts: set[int] = set()
    for x in prefixes:
        at = lower.find(x)
        while at >= 0:
            start = lower.rfind("\n", 0, at) + 1
            starts.add(start)
            end = lower.find("\n", at)
            at = -1 if end < 0 else lower.find(x, end)
    best, best_score = -1, 0
    for start in sorted(starts):
        end = text.find("\n", start)
        toks = stems(text[start : min(len(text) if end < 0 else end, start + 2000)])
        score = len(focus.intersection([alias.get(s, s) for s in toks] if alias else toks))
        if score > best_score:
            best, best_score = start, score
            if score == len(focus):
                break
    if best < 0:
        stripped = text.lstrip()
        best = text.rfind("\n", 0, len(text) - len(stripped)) + 1 if stripped else 0
    out = "\n".join(text[best:].split("\n", 3)[:3]).strip()
    if len(out) > EXCERPT_CHARS:
        out = out[: EXCERPT_CHARS - 1].rstrip() + "…"
    return out


class ProjectSource:
    """Chunks of one project as a source of the search pipeline
    (:mod:`memoryd.search.pipeline`).

    ``encoder``: the dense route's encoder; None uses the deterministic offline
    :class:`~memoryd.text.dense.HashingEncoder`, False turns the dense route off
    (lexical only: no re-ranking, no dense floor, no stored codes). ``tuning`` is
    for measurement (the benchmark compares rule variants).
    """

    exact = True
    kind = "chunks"

    def __init__(
        self,
        db,
        project: str,
        *,
        encoder: Encoder | None | bool = None,
        tuning: gate_mod.Tuning | None = None,
    ) -> None:
        self.db, self.project = db, project
        self.where = f"project {project!r}"
        self.pid = project_id(db, project)
        self.enc: Encoder | None = default_encoder() if encoder is None else (encoder or None)
        self.tuning = tuning or gate_mod.DEFAULT
        self._stats: TermStats | None = None

    def stats(self, q: Query) -> TermStats:
        if self._stats is None:
            fts.prepare(self.db)
            self._stats = term_stats(self.db, self.pid)
        return self._stats

    def find(self, q: Query, p: gate_mod.Plan, limit: int) -> Found:
        return _find(self, q, p, limit)


def search(
    db,
    project: str,
    query: str,
    limit: int = 10,
    *,
    encoder: Encoder | None | bool = None,
    min_score: float | None = None,
    tuning: gate_mod.Tuning | None = None,
) -> dict:
    """Search ``project`` for evidence answering ``query``, or abstain (see
    :class:`ProjectSource` for the arguments; ``min_score``: :func:`pipeline.run`)."""
    pipeline.check(query, limit)
    tuning = tuning or gate_mod.DEFAULT
    source = ProjectSource(db, project, encoder=encoder, tuning=tuning)
    return pipeline.run(query, limit, [source], tuning, min_score=min_score)


def _find(src: ProjectSource, q: Query, p: gate_mod.Plan, limit: int) -> Found:
    """Candidates, admission (speakers, named entities), fusion and ``also_at``."""
    stats = src.stats(q)
    cands = _candidates(src, stats, q, p)
    if not cands:
        return Found(
            gap=f"no chunk of {src.where} holds any of {terms_list(t.word for t in p.focus)};"
            " the evidence may be phrased differently or not be stored here"
        )
    keep = max(4 * limit, 40)
    first = _lexically_admitted(p, q, cands, keep)
    # A question about a named speaker of transcripts is judged on what that person
    # said or what was said about them, without the name as a term. The probe reads
    # the admitted candidates' texts (read for the answer anyway), else the pool's.
    persons = _asked_persons(src.db, stats, q, first or cands)
    if persons:
        q = without_persons(q, persons, stats.df)
        p = gate_mod.plan(q, stats, src.tuning)
        if not p.focus:
            return Found(
                gap=f"the query names {terms_list(sorted(persons))} but asks nothing more"
                " specific about them; say what the evidence should contain"
            )
        cands = cands[: keep * 2]
        _load(src.db, stats, cands)
        for c in cands:
            c.matched = _held(p, stems(person_text(c.text or "", persons)))
    # texts of the pool's head that say focus terms together join the admitted
    if _said_together(src, stats, p, cands[:keep], persons) or persons:
        first = _lexically_admitted(p, q, cands, keep)
    admitted = _admitted(src, stats, q, p, cands, first, keep, limit)
    if admitted and not any(c.exact for c in admitted):
        missing = _missing_entities(src, stats, q, p, admitted)
        if missing:
            said = f" in what the {q.speaker} said" if q.speaker and src.tuning.speaker else ""
            return Found(
                gap=f"no evidence in {src.where} mentions {terms_list(missing)}{said}; what"
                f" was found is about other things, so it is not returned ({NOT_ABSENCE})"
            )
    if not admitted:
        best = max(cands, key=lambda c: gate_mod.coverage(p, c.matched)[::-1])
        held = [t.word for t in p.focus if t.stem in best.matched]
        lacking = [t.word for t in p.focus if t.stem not in best.matched]
        return Found(
            gap=f"insufficient evidence in {src.where}: no chunk holds enough of the"
            f" asked terms; the closest held {terms_list(held) or 'none'} but not"
            f" {terms_list(lacking)} ({NOT_ABSENCE})"
        )
    items, finish = _items(src, stats, q, p, cands, admitted, limit)
    return Found(items, finish=finish)


def _candidates(src: ProjectSource, stats: TermStats, q: Query, p: gate_mod.Plan) -> list:
    """BM25 candidates of the focus terms, then the chunks of named paths (their first
    chunk when no other chunk of the file is a candidate) and named identifiers."""
    db, pid = src.db, src.pid
    cands = _lexical(db, pid, stats, p.focus, POOL)
    by_row = {c.rowid: c for c in cands}
    file_ids, ident_rows = _exact(db, pid, stats, q) if (q.paths or q.identifiers) else (set(), [])
    for rowid in ident_rows:
        c = by_row.get(rowid)
        if c is None:
            c = by_row[rowid] = Candidate(rowid, len(cands), set())
            cands.append(c)
        c.exact = True
    if file_ids:
        in_files = chunks_of_files(db, file_ids)
        hit_files = {r[1] for r in in_files if r[0] in by_row}
        for rowid, fid, ordinal in in_files:
            c = by_row.get(rowid)
            if c is not None:
                c.exact = True
            elif ordinal == 0 and fid not in hit_files:
                c = by_row[rowid] = Candidate(rowid, len(cands), set(), exact=True)
                cands.append(c)
    # -- candidate source: semantic route (memoryd/search/semantic.py); not without dense --
    if src.enc is not None:
        src.tuning = semantic.route(db, pid, stats, q, p, cands, by_row, src.tuning, Candidate)
    return cands


def _admitted(
    src: ProjectSource,
    stats: TermStats,
    q: Query,
    p: gate_mod.Plan,
    cands: list[Candidate],
    first: list[Candidate],
    keep: int,
    limit: int,
) -> list[Candidate]:
    """The gate's verdicts on the lexically admitted candidates (who said the most
    specific term, an explicit contrast), then the dense floor for short queries.

    Text is read only where a rule needs it: who said what (transcripts), an explicit
    contrast (verification questions); the dense route and excerpts read their own
    candidates' text later."""
    speaker = q.speaker if src.tuning.speaker else None
    if speaker or q.verification:
        _load(src.db, stats, first)
    admitted: list[Candidate] = []
    focus_stems = set(p.focus_stems)
    # candidates share one (never mutated) set per combination of terms: one verdict
    # each, without the gate's key (a frozenset of the set's focus terms) per candidate
    verdicts: dict[tuple[int, bool, bool, bool], gate_mod.Verdict] = {}
    for c in first:
        if speaker and c.text:
            spoken = _speaker_text(c.text, speaker)
            if spoken is not None:
                c.spoken = _held(p, stems(spoken))
                # the asked speaker must have said the most specific term held
                top = max(c.matched & focus_stems, key=lambda s: p.weights[s], default=None)
                if top is not None and top not in c.spoken:
                    continue
        key = (id(c.matched), c.exact, _contrast(q, c), c.together)
        c.verdict = verdicts.get(key) or verdicts.setdefault(
            key, gate_mod.admit(p, c.matched, exact=key[1], contrast=key[2], together=key[3])
        )
        if c.verdict.admitted:
            admitted.append(c)
            if len(admitted) >= keep:
                break
    # Short queries: the dense floor may rescue pool members the lexical rules refused.
    if src.enc is not None and p.short and len(admitted) < limit:
        rest = [c for c in cands[:keep] if c.verdict is None or not c.verdict.admitted]
        _load(src.db, stats, [c for c in rest if c.cosine is None])  # none: no stored code
        _cosines(stats, src.enc, q, rest)
        for c in rest:
            c.verdict = gate_mod.admit(p, c.matched, cosine=c.cosine)
            if c.verdict.admitted:
                admitted.append(c)
    return _confirmed(src, stats, q, p, admitted, limit)


def _confirmed(
    src: ProjectSource,
    stats: TermStats,
    q: Query,
    p: gate_mod.Plan,
    ranked: list[Candidate],
    want: int,
) -> list[Candidate]:
    """``ranked`` without candidates admitted on a word's other sense (a name, "Bill",
    for a common word asked, "billing": :func:`other_sense`). Texts are read in order
    until ``want`` candidates pass; those after keep their place unread (the answer's
    items pass through here again before they are returned)."""
    out: list[Candidate] = []
    passed = i = 0
    while i < len(ranked) and passed < want:
        batch = ranked[i : i + want]
        i += len(batch)
        _load(src.db, stats, [c for c in batch if not c.confirmed])
        for c in batch:
            if not c.confirmed and not c.exact:
                c.confirmed = True
                names = other_sense(c.text or "", p, c.matched)
                if names:
                    c.matched = c.matched - names
                    c.verdict = gate_mod.admit(p, c.matched, contrast=_contrast(q, c))
                    if not c.verdict.admitted:
                        continue
            out.append(c)
            passed += 1
    return out + ranked[i:]


def _contrast(q: Query, c: Candidate) -> bool:
    return bool(q.verification and c.text and CONTRAST_WORDS.intersection(words(c.text)))


def _missing_entities(
    src: ProjectSource, stats: TermStats, q: Query, p: gate_mod.Plan, admitted: list[Candidate]
) -> list[str]:
    """Named entities of the question no admitted candidate holds (on the asked
    speaker's lines, in transcripts)."""
    if src.tuning.speaker and q.speaker:
        _load(src.db, stats, [c for c in admitted if c.text is None and _holds_entity(p, c)])
        for c in admitted:
            if c.spoken is None and c.text and _holds_entity(p, c):
                spoken = _speaker_text(c.text, q.speaker)
                if spoken is not None:
                    c.spoken = _held(p, stems(spoken))
    missing = gate_mod.missing_entities(
        p, [c.spoken if c.spoken is not None else c.matched for c in admitted]
    )
    return missing or _unsaid_names(src, stats, p, admitted)


def _unsaid_names(
    src: ProjectSource, stats: TermStats, p: gate_mod.Plan, admitted: list[Candidate]
) -> list[str]:
    """The question's names of several words no admitted candidate says in order
    (:func:`unsaid_names`); only candidates holding each such name's focus terms are
    read."""
    names = multiword_names(p)
    if not names:
        return []
    focus = set(p.focus_stems)
    wanted = [focus.intersection(name) for _, name in names]
    holding = [c for c in admitted if any(w <= c.matched for w in wanted)]
    _load(src.db, stats, holding)
    return unsaid_names(p, [c.text or "" for c in holding])


def _items(
    src: ProjectSource,
    stats: TermStats,
    q: Query,
    p: gate_mod.Plan,
    cands: list[Candidate],
    admitted: list[Candidate],
    limit: int,
) -> tuple[list[dict], Callable[[list[dict]], None]]:
    """Rank fusion (reciprocal rank, k = 60) of the BM25 order, the specificity-weighted
    coverage of the chunk and of its file among the candidates, and the dense route;
    exact matches first; copies of one text fold into ``also_at``."""
    db, tuning = src.db, src.tuning
    fusion = Fusion()
    fusion.add(admitted)
    if len(admitted) > 1:
        weighted = _Weighted(p)
        by_cov = sorted(admitted, key=lambda c: (-weighted(c.matched), c.bm25_rank))
        fusion.add(by_cov, tuning.w_coverage)
        if tuning.w_file > 0:
            file_cov = _file_coverage(db, stats, weighted, cands, admitted)
            by_file = sorted(admitted, key=lambda c: (-file_cov[c.rowid], c.bm25_rank))
            fusion.add(by_file, tuning.w_file)
        if src.enc is not None and tuning.w_dense > 0:
            # The dense route reorders the head of the list: the candidates that can
            # still reach the first ``limit`` places (each text is encoded once per
            # generation, but a cold encode is the costliest step of a query).
            head = sorted(admitted, key=lambda c: (not c.exact, -fusion[id(c)], c.bm25_rank))
            head = head[: max(limit, DENSE_HEAD)]
            _load(db, stats, head)
            _cosines(stats, src.enc, q, head)
            by_cos = sorted(head, key=lambda c: (-(c.cosine or 0.0), c.bm25_rank))
            fusion.add(by_cos, tuning.w_dense)
    ranked = sorted(admitted, key=lambda c: (not c.exact, -fusion[id(c)], c.bm25_rank))
    want = limit
    while True:  # copies of one text count once: read on until ``limit`` distinct pass
        ranked = _confirmed(src, stats, q, p, ranked, want)
        kept, also_at = _distinct(db, stats, ranked, limit)
        if want >= len(ranked) or all(c.confirmed or c.exact for c in kept):
            break
        want *= 2
    ranked = kept
    _load(db, stats, ranked)
    items = [
        _score(
            {
                "path": c.path,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "score": None,
                "excerpt": None,  # filled for the page only: see _excerpts
                **({"also_at": also_at[c.rowid]} if c.rowid in also_at else {}),
            },
            c,
            fusion,
        )
        for c in ranked
    ]
    return items, _excerpts(p, dict(zip(map(id, items), ranked, strict=True)))


def _score(item: dict, c: Candidate, fusion: Fusion) -> dict:
    """``item`` scored by the candidate's evidence and fused rank score
    (:func:`pipeline.scored`); a chunk of a path or identifier the question names, by
    full evidence and strength (such chunks come first)."""
    if c.exact:
        return pipeline.scored(item, 1.0, 1.0)
    assert c.verdict is not None  # admitted
    return pipeline.scored(item, gate_mod.evidence(c.verdict, c.cosine), fusion.score(id(c)))


def _excerpts(p: gate_mod.Plan, of: dict[int, Candidate]) -> Callable[[list[dict]], None]:
    """What fills the excerpts of the items that reach the page (the pipeline asks a
    source for half a page more than it returns, and an excerpt scans its chunk's
    text): ``of`` maps each item's id to its candidate."""

    def finish(page: list[dict]) -> None:
        prefixes = focus_prefixes(p.focus)
        focus_stems = set(p.focus_stems)
        for item in page:
            item["excerpt"] = _excerpt(of[id(item)].text or "", focus_stems, prefixes, p.alias)

    return finish


def _file_coverage(
    db, stats: TermStats, weighted: _Weighted, cands: list[Candidate], admitted: list[Candidate]
) -> dict[int, float]:
    """rowid -> specificity-weighted coverage of the focus terms its file's candidates hold."""
    info = chunk_info(db, stats, [c.rowid for c in cands])
    masks = {id(m): weighted.mask(m) for m in {id(c.matched): c.matched for c in cands}.values()}
    file_of: dict[int, int] = {}
    per_file: dict[int, int] = {}  # file id -> mask of the focus terms its candidates hold
    for c in cands:
        row = info.get(c.rowid)
        f = file_of[c.rowid] = row[1] if row else -c.rowid
        per_file[f] = per_file.get(f, 0) | masks[id(c.matched)]
    return {c.rowid: weighted.of_mask(per_file[file_of[c.rowid]]) for c in admitted}


class _Weighted:
    """Specificity-weighted coverage of term sets under one plan (the second value of
    :func:`gate.coverage`, equal to it): each set is reduced once to a bit mask of
    focus-term positions (by identity: candidates share one set per combination of
    terms), each mask weighed once, in the plan's order of terms."""

    def __init__(self, p: gate_mod.Plan) -> None:
        self.p = p
        self.bits: dict[str, int] = {}
        for i, s in enumerate(p.focus_stems):
            self.bits[s] = self.bits.get(s, 0) | 1 << i
        self.masks: dict[int, tuple[set[str], int]] = {}  # the set is kept: its id stays its own
        self.values: dict[int, float] = {}

    def mask(self, matched: set[str]) -> int:
        hit = self.masks.get(id(matched))
        if hit is None:
            m = 0
            for s in matched:
                m |= self.bits.get(s, 0)
            hit = self.masks[id(matched)] = (matched, m)
        return hit[1]

    def of_mask(self, m: int) -> float:
        value = self.values.get(m)
        if value is None:
            held = {s for i, s in enumerate(self.p.focus_stems) if m >> i & 1}
            value = self.values[m] = gate_mod.coverage(self.p, held)[1]
        return value

    def __call__(self, matched: set[str]) -> float:
        return self.of_mask(self.mask(matched))


def _distinct(
    db, stats: TermStats, ranked: list[Candidate], limit: int
) -> tuple[list[Candidate], dict[int, list[str]]]:
    """The first ``limit`` candidates with distinct text; a copy of a kept chunk's text
    (a vendored file at several paths) adds its path to the kept one's ``also_at``
    instead of taking a place of its own."""
    info = chunk_info(db, stats, [c.rowid for c in ranked])
    kept: dict[bytes, Candidate] = {}
    also_at: dict[int, list[str]] = {}
    for c in ranked:
        row = info.get(c.rowid)
        key = row[5] if row is not None else c.rowid
        first = kept.get(key)
        if first is None:
            if len(kept) < limit:
                kept[key] = c
        elif row is not None:
            also_at.setdefault(first.rowid, []).append(row[2])
    return list(kept.values()), also_at


def _lexically_admitted(
    p: gate_mod.Plan, q: Query, cands: list[Candidate], keep: int
) -> list[Candidate]:
    """Candidates the gate admits on the focus terms they hold (the contrast of a
    verification question is checked on the text later), at most ``2 * keep``."""
    ok: dict[int, bool] = {}  # candidates share one set per combination of terms
    for c in cands:
        if id(c.matched) not in ok:
            ok[id(c.matched)] = gate_mod.admit(p, c.matched, contrast=q.verification).admitted
    return [c for c in cands if c.exact or c.together or ok[id(c.matched)]][: keep * 2]


def _said_together(
    src: ProjectSource, stats: TermStats, p: gate_mod.Plan, head: list[Candidate], persons: set[str]
) -> bool:
    """Mark the candidates of ``head`` (the best of the pool) whose text says focus terms
    together (:func:`gate.said_together`; what the asked persons said or was said
    about them, when the question names speakers); whether any was marked. Only
    candidates the lexical rules refuse whose terms may be said together
    (:func:`gate.may_be_said_together`) are read."""
    may: dict[int, bool] = {}  # candidates share one set per combination of terms
    for c in head:
        if id(c.matched) not in may:
            may[id(c.matched)] = (
                gate_mod.may_be_said_together(p, c.matched)
                and not gate_mod.admit(p, c.matched).admitted
            )
    todo = [c for c in head if may[id(c.matched)]]
    if persons:
        _load(src.db, stats, todo)
        for c in todo:
            c.together = gate_mod.said_together(p, stems(person_text(c.text or "", persons)))
    else:
        lines = _token_lines(src.db, stats, todo)
        for c in todo:
            c.together = gate_mod.said_together(p, lines[c.rowid].split())
    return any(c.together for c in todo)


def _token_lines(db, stats: TermStats, cands: list[Candidate]) -> dict[int, str]:
    """rowid -> the candidate's token line (:func:`_token_line`), kept per generation
    by content hash with :func:`_phrases_held`'s (a text is read and tokenized once)."""
    info = chunk_info(db, stats, [c.rowid for c in cands])
    known: OrderedDict[bytes, str] = stats.extra.setdefault("tokens", OrderedDict())  # type: ignore[assignment]
    key = {c.rowid: info[c.rowid][5] if c.rowid in info else None for c in cands}
    _load(db, stats, [c for c in cands if key[c.rowid] not in known])
    out: dict[int, str] = {}
    for c in cands:
        k = key[c.rowid]
        line = known.get(k) if k is not None else None
        if line is None:
            line = _token_line(c.text or "")
            if k is not None:
                known[k] = line
        else:
            known.move_to_end(k)
        out[c.rowid] = line
    while len(known) > _TOKEN_CACHE:
        known.popitem(last=False)
    return out


def _asked_persons(db, stats: TermStats, q: Query, first: list[Candidate]) -> set[str]:
    """Names of the query that are named speakers (``Name: ...`` turns) of the best
    candidates: the question asks what that person said or did. Only queries naming
    something read texts for this, and only the first few candidates'."""
    if not q.entities or not first:
        return set()
    head = first[:PERSON_PROBE]
    _load(db, stats, head)
    names = [w for run in q.entities for w in run]
    texts = [c.text for c in head if c.text and _names_speaker(c.text.lower(), names)]
    return asked_persons(q, set().union(*(speaker_names(t) for t in texts)))


def _names_speaker(low: str, names: list[str]) -> bool:
    """A cheap first look (no pattern compiled per query): one of ``names`` (lowercase)
    starts a word followed by a colon (``Ana: ...``, ``**Ana**:``)."""
    for w in names:
        at = low.find(w)
        while at >= 0:
            end = at + len(w)
            starts = at == 0 or not low[at - 1].isalnum()
            if starts and low[end : end + 8].lstrip("* \t")[:1] == ":":
                return True
            at = low.find(w, end)
    return False


def _holds_entity(p: gate_mod.Plan, c: Candidate) -> bool:
    return any(t.stem in c.matched for t in p.entities)


def _encoded(enc: Encoder, texts: list[str], cands: list[Candidate]) -> list:
    """Vectors of ``texts`` then of ``cands``' texts. The hashing encoder takes them in
    one batch (its vectors do not depend on the batching, and each call has a fixed
    numpy cost of about a tenth of a millisecond) and the candidates' stems as they were
    tokenized for the query; another encoder, the query alone as before. Without
    numpy loaded, a batch of at most :data:`PLAIN_TOKENS` tokens is encoded in Python
    (the same vectors: :meth:`HashingEncoder.encode_plain`)."""
    if isinstance(enc, HashingEncoder):
        batch = [stems(t) for t in texts] + [_stems(c) for c in cands]
        if plain_vectors() and sum(map(len, batch)) <= PLAIN_TOKENS:
            return enc.encode_plain(batch)
        return enc.encode_stems(batch)
    out = enc.encode(texts) if texts else []
    return [*out, *(enc.encode([c.text or "" for c in cands]) if cands else [])]


def _cosines(stats: TermStats, enc: Encoder, q: Query, cands: Sequence[Candidate]) -> None:
    """Set ``cosine`` of each candidate that has none from a stored code (texts loaded);
    vectors cached per generation. All set: nothing is encoded, not even the query."""
    if all(c.cosine is not None for c in cands):
        return
    vectors: OrderedDict = stats.extra.setdefault("vectors", OrderedDict())  # type: ignore[assignment]
    qkey = (id(enc), "q", q.text)
    qv = vectors.get(qkey)
    todo = [c for c in cands if c.cosine is None and (id(enc), c.rowid) not in vectors]
    todo = list({c.rowid: c for c in todo}.values())
    if qv is None or todo:
        asked = [" ".join(t.word for t in q.terms) or q.text] if qv is None else []
        new = _encoded(enc, asked, todo)
        if qv is None:
            qv = vectors[qkey] = new.pop(0)
        for c, vec in zip(todo, new, strict=True):
            vectors[(id(enc), c.rowid)] = vec
        while len(vectors) > 20000:
            vectors.popitem(last=False)
    todo = [c for c in cands if c.cosine is None]
    coded = [vectors.get((id(enc), c.rowid)) for c in todo]
    sims = iter(cosines(qv, [vec for vec in coded if vec is not None]))
    for c, vec in zip(todo, coded, strict=True):
        c.cosine = next(sims) if vec is not None else 0.0

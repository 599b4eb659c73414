"""Memory refs anchored to the content they cite, checked where the content is now.

A record's ref ``path[:start[-end]]`` (also ``path#Lstart-Lend``) that names a live
file of its project when the record is stored gets an anchor in the same
transaction: the cited span's fingerprint (a hash of its normalized lines, each
line's short hash, which of the file's equal spans it is, the name of the
definition enclosing it, its rarest words by document frequency). A ref without
lines anchors the whole file. Normalizing drops blank lines and runs of
whitespace: a span re-indented or with a blank line added still reads the same.

Each anchor is marked, against the project as last ingested:

* ``verified``: the span is in the cited file, at the cited lines;
* ``moved``: the same span is elsewhere: other lines of the file, or another file
  (found through its rare words); the anchor gives the new path and lines;
* ``changed``: not found, but its enclosing definition is still in the file (a span
  outside any definition: one of its lines still is);
* ``stale``: none of these.

The mark is kept with the anchor together with the content hash of the file it was
found against: a read whose file still has that hash takes it as kept (one indexed
join for a page of records); only a file changed since makes a read look again.
An ingest checks the anchors of the files it changes in its own commit
(:func:`reanchor_in`): a batch moves the anchors whose span it finds again; the
commit that finishes the run marks every anchor still out of date (a span that
left its file may arrive in a later batch's). Each change of place or mark is a
history row of the record. A record whose anchors are all stale is not shown as
active: search and recall list it as needing review (:func:`split_review`).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from memoryd.base.lazy import lazy_module
from memoryd.storage import anchors as store
from memoryd.storage import records
from memoryd.storage.authority import savepoint
from memoryd.storage.corpus import file_texts, live_texts
from memoryd.text.lexicon import word_list
from memoryd.text.terms import STOPWORDS, stem, words

hashlib = lazy_module("hashlib")  # OpenSSL's: loaded by a digest, not by a search

MARKS = ("verified", "moved", "changed", "stale")
FOUND = ("verified", "moved")
RARE_TERMS = 3  # words of a span kept to find it in another file
MIN_TERM_CHARS = 3
CANDIDATE_FILES = 8  # other files a lost span is looked for in
CHUNKS_PER_TERM = 400
LINE_HASH_BYTES = 4
_REF = re.compile(
    r"^(?P<path>[^@\s][^@]*?)(?::(?P<a>\d+)(?:-(?P<b>\d+))?|#L(?P<la>\d+)(?:-L?(?P<lb>\d+))?)?$"
)
_TOKEN = re.compile(r"[A-Za-z_$][\w$]*|\S")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")


@dataclass(frozen=True)
class Ref:
    """A path ref: the file, and the cited lines (None: the whole file)."""

    path: str
    start: int | None = None
    end: int | None = None


def parse_ref(ref: str) -> Ref | None:
    """The path and lines a ref cites; None for what is no path (an archive locator
    has an ``@``) or lines that are no range."""
    m = _REF.match(ref.strip())
    if not m:
        return None
    path = m["path"].removeprefix("./")
    a, b = m["a"] or m["la"], m["b"] or m["lb"]
    if a is None:
        return Ref(path)
    start, end = int(a), int(b or a)
    return Ref(path, start, end) if 1 <= start <= end else None


# -- fingerprints ------------------------------------------------------------------


def normalized(line: str) -> str:
    """A line as compared: whitespace runs one space, none at either end."""
    return " ".join(line.split())


def _line_hash(norm: str) -> bytes:
    return hashlib.blake2b(norm.encode(), digest_size=LINE_HASH_BYTES).digest()


def _span_hash(norms: Iterable[str]) -> bytes:
    return hashlib.blake2b("\n".join(norms).encode(), digest_size=16).digest()


class Lines:
    """A file's non-blank lines: (1-based number, normalized text), with their hashes."""

    def __init__(self, text: str) -> None:
        raw = text.split("\n")  # the chunker's lines (its line numbers)
        self.raw = raw
        self.lines = [(i + 1, n) for i, line in enumerate(raw) if (n := normalized(line))]
        self.hashes = [_line_hash(n) for _, n in self.lines]
        self._index: dict[bytes, list[int]] | None = None

    def starts(self, hashes: list[bytes], span_hash: bytes) -> list[tuple[int, int]]:
        """(first, last line) of every place the span of these line hashes is, in order."""
        if not hashes:
            return []
        if self._index is None:
            self._index = {}
            for i, h in enumerate(self.hashes):
                self._index.setdefault(h, []).append(i)
        n, out = len(hashes), []
        for i in self._index.get(hashes[0], ()):
            if self.hashes[i : i + n] == hashes:
                found = self.lines[i : i + n]
                if _span_hash(s for _, s in found) == span_hash:
                    out.append((found[0][0], found[-1][0]))
        return out

    def holds_any(self, hashes: list[bytes]) -> bool:
        mine = set(self.hashes)
        return any(h in mine for h in hashes)

    def holds_most(self, hashes: list[bytes]) -> bool:
        """Whether at least half of these lines are among the file's."""
        mine = set(self.hashes)
        return 2 * sum(h in mine for h in hashes) >= len(hashes) > 0


@cache
def _keywords() -> tuple[frozenset[str], frozenset[str]]:
    return word_list("definition_keywords.txt"), word_list("definition_modifiers.txt")


def definition_name(line: str) -> str | None:
    """The name a line defines (``def name``, ``pub fn name``, ``class Name``), or None."""
    keywords, modifiers = _keywords()
    toks = [t for t in _TOKEN.findall(line) if t not in "()"]  # pub(crate), etc.
    for i, tok in enumerate(toks[:-1]):
        if tok in keywords and _IDENT.fullmatch(toks[i + 1]) and toks[i + 1] not in keywords:
            return toks[i + 1]
        if tok not in modifiers:
            return None
    return None


def enclosing(raw: list[str], first: int) -> str | None:
    """The name of the definition enclosing line ``first`` (1-based): that line's own
    when it defines one, else the nearest definition above it that is less indented
    than everything between (a less indented line that defines nothing narrows it)."""
    line = raw[first - 1]
    if name := definition_name(line):
        return name
    width = len(line) - len(line.lstrip())
    for above in reversed(raw[: first - 1]):
        if not above.strip():
            continue
        indent = len(above) - len(above.lstrip())
        if indent >= width:
            continue
        if name := definition_name(above):
            return name
        width = indent
        if width == 0:
            return None
    return None


def defines(lines: Lines, name: str) -> int | None:
    """The line defining ``name`` (the first such), or None."""
    return next((n for n, _ in lines.lines if definition_name(lines.raw[n - 1]) == name), None)


def rare_terms(conn: Any, pid: int, span: str, text: str) -> list[str]:
    """The span's ``RARE_TERMS`` words held by the fewest chunks of the project's index
    (a compact project keeps none stored: the fewest occurrences in its file), longer
    first on ties; words the index does not hold come last."""
    toks = [
        w
        for w in dict.fromkeys(words(span))
        if len(w) >= MIN_TERM_CHARS and not w.isdigit() and w not in STOPWORDS
    ]  # a stopword is indexed only inside identifiers: it would look rare
    stems = {w: stem(w) for w in toks}
    freqs = store.doc_freqs(conn, pid, sorted(set(stems.values())))
    if freqs:
        key = {w: freqs.get(stems[w]) or math.inf for w in toks}
    else:
        counts = Counter(words(text))
        key = {w: counts[w] for w in toks}
    return sorted(toks, key=lambda w: (key[w], -len(w), w))[:RARE_TERMS]


def fingerprint(conn: Any, pid: int, ref: Ref, text: str) -> dict | None:
    """The fingerprint columns of an anchor of ``ref`` in a file of this ``text`` (a ref
    without lines: of the whole file); None when its lines hold nothing (blank, or past
    the file's end): there is no code to follow."""
    lines = Lines(text)
    span = [(n, s) for n, s in lines.lines if ref.start is not None and ref.start <= n <= ref.end]
    if ref.start is not None and not span:
        return None
    if not span:
        return {"start_line": None, "end_line": None, "span_hash": None, "line_hashes": None,
                "occurrence": 0, "occurrences": 1, "symbol": None, "terms": []}  # fmt: skip
    hashes = [_line_hash(s) for _, s in span]
    span_hash = _span_hash(s for _, s in span)
    places = lines.starts(hashes, span_hash)
    first, last = span[0][0], span[-1][0]
    body = "\n".join(lines.raw[first - 1 : last])
    return {
        "start_line": first,
        "end_line": last,
        "span_hash": span_hash,
        "line_hashes": b"".join(hashes),
        "occurrence": places.index((first, last)),
        "occurrences": len(places),
        "symbol": enclosing(lines.raw, first),
        "terms": rare_terms(conn, pid, body, text),
    }


# -- finding a span again -------------------------------------------------------------


class Texts:
    """Files' texts and lines, each read once per check (a commit checks many anchors,
    often of one file)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.kept: dict[int, Lines] = {}

    def lines(self, file_id: int) -> Lines:
        if file_id not in self.kept:
            self.kept[file_id] = Lines(file_texts(self.conn, [file_id])[file_id])
        return self.kept[file_id]

    def keep(self, file_id: int, text: str) -> None:
        self.kept.setdefault(file_id, Lines(text))


def _hashes(a: dict) -> list[bytes]:
    data = a["line_hashes"] or b""
    return [data[i : i + LINE_HASH_BYTES] for i in range(0, len(data), LINE_HASH_BYTES)]


def _pick(places: list[tuple[int, int]], a: dict, same_file: bool) -> tuple[int, int]:
    """Which of a span's places is the cited one: the same of as many equal spans as
    when it was anchored, else the nearest to where it was (another file: the first)."""
    if len(places) == a["occurrences"]:
        return places[a["occurrence"]]
    if same_file and a["cur_start"] is not None:
        return min(places, key=lambda p: (abs(p[0] - a["cur_start"]), p[0]))
    return places[0]


def _place(a: dict, path: str, lines: tuple[int, int] | None, state: str, digest) -> dict:
    start, end = lines if lines else (a["cur_start"], a["cur_end"])
    if state in FOUND:
        cited = path == a["path"] and (start, end) == (a["start_line"], a["end_line"])
        state = "verified" if cited else "moved"
    return {"cur_path": path, "cur_start": start, "cur_end": end, "state": state,
            "checked_hash": digest}  # fmt: skip


def _files_with_terms(conn: Any, pid: int, terms: list[str], texts: Texts) -> Counter:
    """file (id, path, hash) -> how many of ``terms`` it holds: through the stored index,
    or (a compact project: small) by reading its live files."""
    held: Counter = Counter()
    if not terms:
        return held
    if store.stored_index(conn, pid):
        for term in terms:
            rowids = store.chunks_matching(conn, pid, f'"{term}"', CHUNKS_PER_TERM)
            held.update(store.files_of_chunks(conn, rowids))
        return held
    for fid, path, text in live_texts(conn, pid):
        found = set(words(text)).intersection(terms)
        if found:
            texts.keep(fid, text)
            held[(fid, path, store.live_file(conn, pid, path)[1])] = len(found)
    return held


def _elsewhere(conn: Any, a: dict, texts: Texts) -> list[tuple[int, str, bytes]]:
    """Other live files the span may have gone to, likeliest first: files with the
    anchored file's very content (renamed), then those holding most of its words."""
    pid, here = a["project_id"], a["cur_path"]
    renamed = store.live_with_hash(conn, pid, a["file_hash"])
    same = [(fid, path, a["file_hash"]) for fid, path in renamed]
    terms = list(dict.fromkeys([*a["terms"], *words(a["symbol"] or "")]))
    held = _files_with_terms(conn, pid, terms, texts)
    ranked = sorted(held, key=lambda f: (-held[f], f[1]))
    out = list(dict.fromkeys(f for f in [*same, *ranked] if f[1] != here))
    return out[:CANDIDATE_FILES]


def locate(conn: Any, a: dict, texts: Texts | None = None) -> dict:
    """Where the anchored span is in the project as it is now: its place columns."""
    texts = texts or Texts(conn)
    here = store.live_file(conn, a["project_id"], a["cur_path"])
    if a["span_hash"] is None:
        return _locate_file(conn, a, here)
    hashes = _hashes(a)
    if here:
        places = texts.lines(here[0]).starts(hashes, a["span_hash"])
        if places:
            return _place(a, a["cur_path"], _pick(places, a, True), "verified", here[1])
    others = _elsewhere(conn, a, texts)
    if moved := _moved_to(a, others, texts, hashes):
        return moved
    if here:
        return _changed(a, a["cur_path"], texts.lines(here[0]), hashes, here[1])
    for fid, path, digest in others:  # the file is gone: renamed, its span edited?
        lines = texts.lines(fid)
        if a["symbol"] and (line := defines(lines, a["symbol"])):
            return _place(a, path, (line, line), "changed", digest)
        if not a["symbol"] and lines.holds_most(hashes):
            return _place(a, path, None, "changed", digest)
    return _place(a, a["cur_path"], None, "stale", None)


def _moved_to(a: dict, others: list, texts: Texts, hashes: list[bytes]) -> dict | None:
    """The span's place in another file: the file the anchored one was renamed to
    (its very content), or the one other file holding it; None when several do (a
    line as common as an import is no evidence of where the cited code went)."""
    found = []
    for fid, path, digest in others:
        if places := texts.lines(fid).starts(hashes, a["span_hash"]):
            found.append((path, _pick(places, a, False), digest))
            if digest == a["file_hash"]:
                break
    renamed = found and found[-1][2] == a["file_hash"]
    if renamed or len(found) == 1:
        path, lines, digest = found[-1]
        return _place(a, path, lines, "verified", digest)
    return None


def _changed(a: dict, path: str, lines: Lines, hashes: list[bytes], digest: bytes) -> dict:
    """The span is not in its file: ``changed`` at its definition's line while the file
    still defines it (a span outside any definition: at its old lines while one of them
    is still there), else ``stale``."""
    if a["symbol"]:
        line = defines(lines, a["symbol"])
        return _place(
            a, path, (line, line) if line else None, "changed" if line else "stale", digest
        )
    return _place(a, path, None, "changed" if lines.holds_any(hashes) else "stale", digest)


def _locate_file(conn: Any, a: dict, here: tuple[int, bytes] | None) -> dict:
    """A whole-file anchor: the same file (verified; edited: changed), or its very
    content under another path (moved), or stale."""
    if here:
        same = here[1] == a["file_hash"]
        return _place(a, a["cur_path"], None, "verified" if same else "changed", here[1])
    for _, path in store.live_with_hash(conn, a["project_id"], a["file_hash"]):
        return _place(a, path, None, "moved", a["file_hash"])
    return _place(a, a["cur_path"], None, "stale", None)


def kept_place(a: dict) -> dict | None:
    """The anchor's kept place when its file is the one it was found against."""
    current = a["content_hash"] if a["live"] == 1 else None
    if current != a["checked_hash"]:
        return None
    return {k: a[k] for k in store.PLACE}


# -- writing anchors ------------------------------------------------------------------


def anchor_in(tx: Any, record: dict, targets: list[str] = ()) -> int:
    """Anchor each path ref of a just stored ``record`` that names a live file of its
    project (a ref to no such file gets none: a sweep says it is stale). A merge's
    replacement keeps its ``targets``' anchors as they are (fingerprints of what they
    cited, not of what those lines hold now). Returns the anchors written."""
    carried = [{**a, "record_id": record["id"]} for a in store.of_records(tx, list(targets))]
    store.insert_in(tx, carried)
    pid, rows, texts = record["project_id"], [], Texts(tx)
    known = {a["ref"] for a in carried}
    for ref in [r for r in dict.fromkeys(record["refs"]) if r not in known]:
        cited = parse_ref(ref)
        found = cited and store.live_file(tx, pid, cited.path)
        if not found:
            continue
        fid, digest = found
        text = "\n".join(texts.lines(fid).raw)
        fp = fingerprint(tx, pid, cited, text)
        if fp is None:
            continue
        rows.append({"record_id": record["id"], "project_id": pid, "ref": ref,
                     "path": cited.path, "file_hash": digest, **fp, "cur_path": cited.path,
                     "cur_start": fp["start_line"], "cur_end": fp["end_line"],
                     "state": "verified", "checked_hash": digest})  # fmt: skip
    return len(carried) + store.insert_in(tx, rows)


def _history(place: dict, a: dict) -> tuple[str, str] | None:
    """The history row (action, detail) of an anchor's new place, None if unchanged."""
    before = (a["cur_path"], a["cur_start"], a["cur_end"], a["state"])
    after = (place["cur_path"], place["cur_start"], place["cur_end"], place["state"])
    if before == after:
        return None
    if place["state"] not in FOUND:
        return f"ref_{place['state']}", f"{a['ref']}: the cited code is {place['state']}"
    where = place["cur_path"]
    if place["cur_start"] is not None:
        where += f":{place['cur_start']}-{place['cur_end']}"
    return f"ref_{place['state']}", f"{a['ref']} -> {where}"


def reanchor_in(tx: Any, pid: int, paths: list[str] | None, job_id: int | None) -> int:
    """:func:`reanchor` in a savepoint: a failure to follow cited code is logged and
    undone alone, never the ingest it rides on (the anchors stay as they were, and a
    read looks for their code itself). Returns anchors changed (0 on a failure)."""
    try:
        with savepoint(tx, "memoryd_reanchor"):
            return reanchor(tx, pid, paths, job_id)
    except Exception as exc:
        import logging  # here: only a failure logs (logging's import is not a search's)

        from memoryd.base import logs

        logs.event(
            "anchors_not_followed",
            f"cited code of project {pid} not followed: {type(exc).__name__}: {exc}",
            level=logging.WARNING,
            project_id=pid,
        )
        return 0


def reanchor(tx: Any, pid: int, paths: list[str] | None, job_id: int | None) -> int:
    """Check again the anchors of active records whose file changed: those now at
    ``paths`` (an ingest batch's files), moving only the spans found again (a span that
    left may arrive with a later batch); ``paths`` None: every anchor of the project
    still out of date, whatever it is now (the commit that finishes an ingest run).
    Each change is written with a history row of its record. Returns anchors changed."""
    final = paths is None
    anchors = store.outdated(tx, pid) if final else store.on_paths(tx, pid, paths)
    texts, now, changed = Texts(tx), time.time(), 0
    for a in anchors:
        if kept_place(a) is not None:
            continue
        place = locate(tx, a, texts)
        if not final and place["state"] not in FOUND:
            continue
        store.place_in(tx, a["id"], place)
        if row := _history(place, a):
            detail = f"{row[1]} (ingest job {job_id})" if job_id else row[1]
            records.add_history_in(tx, a["record_id"], row[0], None, detail, now)
            changed += 1
    return changed


# -- reading marks --------------------------------------------------------------------


def _mark(a: dict, place: dict) -> dict:
    lines = None if place["cur_start"] is None else [place["cur_start"], place["cur_end"]]
    return {"ref": a["ref"], "mark": place["state"], "path": place["cur_path"], "lines": lines}


def marks(conn: Any, record_ids: list[str]) -> dict[str, list[dict]]:
    """Each anchored ref of these records, marked (``{"ref", "mark", "path",
    "lines"}``: where the span is now). Refs with no anchor are left out."""
    return _marked(conn, store.of_records(conn, record_ids))


def project_marks(conn: Any, pid: int) -> dict[str, list[dict]]:
    """:func:`marks` of every active record of the project with an anchor."""
    return _marked(conn, store.project_anchors(conn, pid))


def _marked(conn: Any, found: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    texts: Texts | None = None
    for a in found:
        place = kept_place(a)
        if place is None:  # its file changed since the last ingest's check: look
            texts = texts or Texts(conn)
            place = locate(conn, a, texts)
        out.setdefault(a["record_id"], []).append(_mark(a, place))
    return out


def all_stale(refs: list[dict]) -> bool:
    return bool(refs) and all(r["mark"] == "stale" for r in refs)


def split_review(conn: Any, items: list[dict]) -> tuple[list[dict], list[dict]]:
    """Record items with their refs marked (``"refs"``), and apart those whose refs are
    all stale: not active evidence any more, but records for someone to review."""
    found = marks(conn, [i["id"] for i in items])
    kept, review = [], []
    for item in items:
        refs = found.get(item["id"], [])
        if all_stale(refs):
            review.append({"id": item["id"], "kind": item["kind"], "text": item["text"],
                           "status": "needs_review", "refs": refs})  # fmt: skip
        else:
            kept.append({**item, "refs": refs})
    return kept, review

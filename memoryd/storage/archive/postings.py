"""Derived postings and statistics over live versions, and the live versions holding
a term (:meth:`Postings.live_matches`).

Postings hold exact lowercase ``\\w+`` terms with their frequency, positions
and turn structure (speaker, role, turn, tool output: :mod:`.positions`);
per-project term and corpus statistics count live versions only. All of it
can be rebuilt from the canonical payloads
(:meth:`Postings.rebuild_postings`), which opening a primary does once for
an archive whose postings predate :data:`positions.LAYOUT`. BM25 scoring,
proximity, speakers, ranking and excerpts are search's
(:mod:`memoryd.search.archive_bm25`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson
from rocksdict import WriteBatch

from memoryd.storage.archive import codec, keys, positions
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.positions import MAX_TERMS_PER_VERSION, tokenize
from memoryd.storage.archive.records import (
    CorpusStats,
    Hit,
    check_project,
    make_locator,
    parse_locator,
)


def term_counts(text: str) -> tuple[dict[str, int], int]:
    """Term frequencies (first MAX_TERMS_PER_VERSION distinct terms) and token count."""
    tokens = tokenize(text)
    counts: dict[str, int] = {}
    for t in tokens:
        if t in counts:
            counts[t] += 1
        elif len(counts) < MAX_TERMS_PER_VERSION:
            counts[t] = 1
    return counts, len(tokens)


def _doc_ver(locator: str) -> tuple[bytes, int]:
    doc_id, ver = parse_locator(locator)
    return doc_id.encode(), ver


def _is_zero(raw: bytes) -> bool:
    v = orjson.loads(raw)
    return not v.get("versions") and not v.get("length")


class Postings:
    """Postings and statistics over live versions, and the live versions holding a term
    (scoring them is search's: :mod:`memoryd.search.archive_bm25`).

    Interface: reads (:meth:`projects`, :meth:`corpus_stats`, :meth:`term_stats`,
    :meth:`postings`, :meth:`read_postings`, :meth:`live_matches`), the statistics'
    journal (:meth:`df_journal_records`, :meth:`fold_df_journal`) and the derived
    layer's check and rebuild (:meth:`verify_postings`, :meth:`rebuild_postings`,
    :meth:`postings_layout`). Receives the core only.
    """

    def __init__(self, core: StoreCore) -> None:
        self._core = core

    def projects(self) -> list[str]:
        """Every project that ever archived a version (one corpus record each), sorted."""
        return sorted(
            keys.corpus_project(key).decode() for key, _ in self._core._prefix(keys.CORPUS)
        )

    def corpus_stats(self, project: str) -> CorpusStats:
        """Live versions and their total token count in ``project``."""
        return CorpusStats(*self._core.corpus_stats_raw(check_project(project)))

    def term_stats(self, project: str, terms: Iterable[str]) -> dict[str, int]:
        """Document frequency (live versions holding the term) of each exact term.

        A version past its deadline is counted until its segment expires (up to a
        segment's width after the retention clock passed it; search re-checks each
        hit's status): following the clock exactly would cost the wave per-version
        work (docs/decisions/retention-segments.md)."""
        p = check_project(project)
        terms = list(dict.fromkeys(terms))
        raws = self._core._db.get([keys.termstat(p, t.encode()) for t in terms]) if terms else []
        removed = self._core._journal_removals(p, terms) if terms else {}
        return {
            t: (keys.U64.unpack(r)[0] if r else 0) - removed.get(t, 0)
            for t, r in zip(terms, raws, strict=True)
        }

    def postings(
        self, project: str, term: str, segments: list[bytes] | None = None
    ) -> Iterator[tuple[str, int]]:
        """``(locator, tf)`` of every posting of ``term``: one multi-get of the term's
        statistic in each live segment of the project (``segments``: those, read
        once by a caller asking for many terms), then one seek per segment holding
        it. Retired versions waiting for their purge may be among them: filter with
        :meth:`~.ledgers.Ledgers.version_info`, or use :meth:`live_matches`."""
        p, t = check_project(project), term.encode()
        segs = self._core._live_segments(p) if segments is None else segments
        held = self._core._db.get(keys.term_in_segments(segs, t))  # one multi-get: bloom misses
        it = None  # one iterator for every segment's seek
        for seg, count in zip(segs, held, strict=True):
            if count is None:  # no live version of this segment holds the term
                continue
            it = it or self._core._db.iter()
            prefix = keys.seg_posting_prefix(seg, t)
            cut = len(prefix)
            it.seek(prefix)
            while it.valid() and (key := it.key()).startswith(prefix):
                yield make_locator(*keys.split_dv(key[cut:])), positions.tf(it.value())
                it.next()

    def read_postings(
        self, project: str, wanted: Sequence[tuple[str, str]]
    ) -> list[positions.Posting | None]:
        """The stored :class:`~.positions.Posting` (frequency, positions, turn
        structure) of each ``(locator, term)``, None where the version does not
        hold the term; one multi-get of the ledgers (a version's segment), one of the
        postings."""
        check_project(project)
        places = self._places(dict.fromkeys(loc for loc, _ in wanted))
        want = [
            keys.seg_posting(places[loc][0], t.encode(), places[loc][1])
            for loc, t in wanted
            if loc in places
        ]
        got = iter(self._core._db.get(want))
        return [positions.decode(r) if loc in places and (r := next(got)) else None
                for loc, _ in wanted]  # fmt: skip

    def _places(self, locators: Iterable[str]) -> dict[str, tuple[bytes, bytes]]:
        """``(segment, dv)`` of each locator whose ledger knows it (one multi-get)."""
        parsed = {loc: _doc_ver(loc) for loc in locators}
        docs = list(dict.fromkeys(doc for doc, _ in parsed.values()))
        ledgers = dict(zip(docs, self._core._db.get([keys.doc(d) for d in docs]), strict=True))
        out = {}
        for loc, (doc, ver) in parsed.items():
            raw = ledgers[doc]
            if raw is None:
                continue
            ledger = codec.decode_ledger(raw)
            if ver <= len(ledger["versions"]):
                out[loc] = (self._core._seg(ledger, ledger["versions"][ver - 1]), keys.dv(doc, ver))
        return out

    def live_matches(
        self,
        project: str,
        terms: Sequence[str],
        *,
        classes: Iterable[str] | None = None,
        session: str | None = None,
        created_after: dict[str, float | None] | None = None,
        max_postings_per_term: int = 50_000,
    ) -> list[Hit]:
        """Live versions of ``project`` holding any of the exact ``terms``, unscored
        (``score`` 0, ``matched`` their term frequencies), in no particular order;
        tombstoned ones never appear.

        ``created_after`` maps a class to the oldest creation time it may have
        (automatic-recall horizons; a class missing from the map or mapped to
        None is not limited; a class mapped to ``float('inf')`` is excluded).
        """
        segments = self._core._live_segments(check_project(project))
        wanted = None if classes is None else set(classes)
        matched: dict[str, dict[str, int]] = {}
        clock = self._core.clock()
        for term in dict.fromkeys(terms):
            for i, (loc, tf) in enumerate(self.postings(project, term, segments)):
                if i >= max_postings_per_term:
                    break
                matched.setdefault(loc, {})[term] = tf
        parsed = {loc: parse_locator(loc) for loc in matched}
        docs = list(dict.fromkeys(doc_id for doc_id, _ in parsed.values()))
        raws = self._core._db.get([keys.doc(d.encode()) for d in docs])  # one multi-get
        ledgers = {d: codec.decode_ledger(r) for d, r in zip(docs, raws, strict=True) if r}
        live = set(segments)
        hits: list[Hit] = []
        for loc, tfs in matched.items():
            doc_id, ver = parsed[loc]
            ledger = ledgers.get(doc_id)
            if ledger is None:
                continue
            v = ledger["versions"][ver - 1]
            if self._core._status(doc_id.encode(), ledger, ver, clock=clock, live=live) != "live":
                continue
            if wanted is not None and ledger["class"] not in wanted:
                continue
            if session is not None and ledger.get("session") != session:
                continue
            if created_after is not None:
                cutoff = created_after.get(ledger["class"])
                if cutoff is not None and v["created_at"] < cutoff:
                    continue
            hits.append(
                Hit(loc, doc_id, ver, ledger["project"], ledger["class"], ledger.get("session"),
                    v["created_at"], 0.0, dict(tfs), v["len"])
            )  # fmt: skip
        return hits

    def df_journal_records(self) -> int:
        """Journal records not yet folded into the term statistics."""
        return sum(1 for _ in self._core._prefix(keys.df_journal_prefix(), fill_cache=False))

    def fold_df_journal(self) -> tuple[int, int]:
        """Fold every journal record into the term statistics in one batch (a statistic
        reaching zero is deleted); returns (records folded, statistics deleted)."""
        self._core._need_primary()
        with self._core._lock:
            batch = Batch()
            folded = self._core._fold_into(batch)
            self._core._write(batch)
            return folded, batch.deleted

    # ---- derived rebuild

    def _derived_from_payloads(self) -> tuple[dict[bytes, bytes], dict[bytes, bytes]]:
        postings: dict[bytes, bytes] = {}
        derived: dict[bytes, bytes] = {}
        df: Counter[bytes] = Counter()
        corpus: dict[bytes, list[int]] = {}
        for key, raw in self._core._prefix(keys.DOC, fill_cache=False):
            doc = keys.doc_of(key)
            ledger = codec.decode_ledger(raw)
            project = ledger["project"].encode()
            for i, v in enumerate(ledger["versions"]):
                if not self._core._stored_live(ledger, v):
                    continue
                seg, dv = self._core._seg(ledger, v), keys.dv(doc, i + 1)
                record = codec.decode_payload(self._core._db[keys.seg_payload(seg, dv)])
                values, length = positions.posting_values(record["content"], record.get("meta"))
                postings[keys.seg_terms(seg, dv)] = keys.join_terms(list(values))
                for term, value in values.items():
                    postings[keys.seg_posting(seg, term.encode(), dv)] = value
                    df[keys.termstat(project, term.encode())] += 1
                    df[keys.seg_termstat(seg, term.encode())] += 1
                for key in (keys.corpus(project), keys.seg_corpus(seg)):
                    c = corpus.setdefault(key, [0, 0])
                    c[0] += 1
                    c[1] += length
        for k, n in df.items():
            derived[k] = keys.U64.pack(n)
        for k, (nv, nl) in corpus.items():
            derived[k] = orjson.dumps({"versions": nv, "length": nl})
        return postings, derived

    def verify_postings(self) -> dict[str, Any]:
        """Compare live postings and statistics with a rebuild from canonical payloads.

        Postings of tombstoned versions not yet purged are ignored. Returns
        ``{"ok": bool, "missing": n, "extra": n, "stats_mismatch": n}``.
        """
        want_p, want_d = self._derived_from_payloads()
        have_p = {}
        for seg, key, raw in self._core._segment_items(keys.SEG_POSTING):
            if self._live(keys.parse_seg_posting(key, seg)[1]):
                have_p[key] = raw
        for seg, key, raw in self._core._segment_items(keys.SEG_TERMS):
            if self._live(keys.seg_version(key, seg)):
                have_p[key] = raw
        have_d = self._effective_termstats()
        corpus = list(self._core._prefix(keys.CORPUS, fill_cache=False))
        corpus += [(k, v) for _, k, v in self._core._segment_items(keys.SEG_CORPUS)]
        have_d.update((k, orjson.dumps(orjson.loads(v))) for k, v in corpus if not _is_zero(v))
        have_d.update((k, v) for _, k, v in self._core._segment_items(keys.SEG_TERMSTAT))
        missing = sum(1 for k, v in want_p.items() if have_p.get(k) != v)
        extra = sum(1 for k in have_p if k not in want_p)
        mism = sum(1 for k in set(want_d) | set(have_d) if want_d.get(k) != have_d.get(k))
        return {
            "ok": not (missing or extra or mism),
            "missing": missing,
            "extra": extra,
            "stats_mismatch": mism,
        }

    def _live(self, dv: bytes) -> bool:
        """The version's keys count (its ledger says live; its segment is live)."""
        doc_id, ver = keys.split_dv(dv)
        ledger = self._core._ledger(doc_id.encode())
        return bool(ledger) and self._core._stored_live(ledger, ledger["versions"][ver - 1])

    def _effective_termstats(self) -> dict[bytes, bytes]:
        """Every stored term statistic with the journal's removals applied (none at zero)."""
        stats = {
            k: keys.U64.unpack(v)[0]
            for k, v in self._core._prefix(keys.TERMSTAT, fill_cache=False)
            if not k.startswith(keys.df_journal_prefix()) and k != keys.DF_JOURNAL_SEQ
        }
        for _, project, counts in self._core._journal():
            for term, n in counts.items():
                stat = keys.termstat(project, term.encode())
                stats[stat] = stats.get(stat, 0) - n
        return {k: keys.U64.pack(n) for k, n in stats.items() if n > 0}

    def rebuild_postings(self) -> dict[str, int]:
        """Drop and rebuild postings, term lists and statistics from the live canonical
        payloads.

        Postings of versions waiting for purge are dropped too (purge skips
        absent keys). The archive's postings layout is recorded last, so a
        crash before the end leaves a rebuild for the next open. Returns counts
        of what was written.
        """
        self._core._need_primary()
        with self._core._lock:
            postings, derived = self._derived_from_payloads()
            wb = WriteBatch(raw_mode=True)
            for fam in (keys.TERMSTAT, keys.CORPUS):
                wb.delete_range(fam, keys.prefix_end(fam))
            for seg in self._core._live_segments():
                for fam in (keys.SEG_CORPUS, keys.SEG_TERMS, keys.SEG_POSTING, keys.SEG_TERMSTAT):
                    start = keys.seg_family(seg, fam)
                    wb.delete_range(start, keys.prefix_end(start))
            self._core._db.write(wb, self._core._wopt)
            fmt = {**(self._core._get_json(keys.FORMAT) or {}), "postings_layout": positions.LAYOUT}
            items = [*postings.items(), *derived.items(), (keys.FORMAT, orjson.dumps(fmt))]
            for i in range(0, len(items), 50_000):
                wb = WriteBatch(raw_mode=True)
                for k, v in items[i : i + 50_000]:
                    wb.put(k, v)
                self._core._db.write(wb, self._core._wopt)
            return {"postings": len(postings), "statistics": len(derived)}

    def postings_layout(self) -> int:
        """The layout of this archive's posting values (1: frequency only)."""
        return int((self._core._get_json(keys.FORMAT) or {}).get("postings_layout", 1))

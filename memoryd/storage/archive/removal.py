"""What removing a version from the derived layer needs, kept off the per-term paths.

* :func:`version_removal`: **the one place** that says which records of a
  version go when it is purged one by one (superseded, forgotten, a derived
  document following its sources, a held version past its deadline): its
  posting terms and its own keys (term list, member record, payload), all
  under its segment. The term list (``Z seg L dv``, written with the
  postings) answers in one read of a few bytes. (A version whose whole
  segment expires is not purged one by one: the segment goes by one range
  delete.)
* The **document-frequency journal**: retiring a version does not
  read-modify-write the statistic of every term it held. Each write batch
  that retires versions adds one record per project, ``T 0 project 0 seq``
  -> the terms of every version it removed (newline-separated, a term once
  per version); the statistic a reader sees is the stored one minus the
  journal (:meth:`DfJournalMixin._journal_removals`).
  :meth:`DfJournalMixin.fold_df_journal` folds the journal into the
  statistics in one batch: a retiring batch (a wave, a superseding append, a
  forget) folds once the journal holds :data:`DF_JOURNAL_FOLD_RECORDS`
  records, and maintenance folds whatever is left when its waves find nothing
  more due, so many waves' removals of a common term cost one update. A
  record commits with its retirement and a fold deletes the records it
  applied in its own batch: a crash at any point leaves the sum exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from memoryd.storage.archive import keys
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.postings import MAX_TERMS_PER_VERSION, tokenize

#: A wave folds the journal into the term statistics once it holds this many records.
DF_JOURNAL_FOLD_RECORDS = 32

#: Most decoded journal records a reader keeps (of every project).
JOURNAL_CACHE_RECORDS = 4 * DF_JOURNAL_FOLD_RECORDS


def version_terms(content: str) -> list[str]:
    """The distinct terms a version's postings are keyed by, in text order (the first
    MAX_TERMS_PER_VERSION, as appends index them)."""
    terms = list(dict.fromkeys(tokenize(content)))
    return terms[:MAX_TERMS_PER_VERSION] if len(terms) > MAX_TERMS_PER_VERSION else terms


def version_removal(
    store: StoreCore, seg: bytes, dv: bytes, batch: Batch | None = None
) -> tuple[list[bytes], list[bytes]]:
    """``(terms, own keys)`` of version ``dv`` in segment ``seg``: the terms its
    postings are keyed by and its own keys (none: already purged). The payload
    comes last: a purge in chunks deletes it with the version's queue entry."""
    listed = store._get(keys.seg_terms(seg, dv), batch)
    if listed is None:
        return [], []
    own = [keys.seg_terms(seg, dv), keys.seg_member(seg, dv), keys.seg_payload(seg, dv)]
    return keys.split_terms(listed), own


class DfJournalMixin(StoreCore):
    """The document-frequency journal: removals recorded per batch, folded later."""

    def _journal_removals(self, project: bytes, terms: Iterable[str]) -> Counter[str]:
        """Versions of each term removed by journal records not yet folded."""
        cache = self._journal_cache
        prefix = keys.df_journal_prefix(project)
        seen: dict[bytes, Counter[str]] = {}
        out: Counter[str] = Counter()
        wanted = list(terms)
        for key, raw in self._prefix(prefix):
            counts = cache.get(key)
            if counts is None:
                counts = _journal_counts(raw)
            seen[key] = counts
            for t in wanted:
                n = counts.get(t)
                if n:
                    out[t] += n
        # records are immutable; the project's folded ones drop out, other projects' stay
        kept = {k: v for k, v in cache.items() if not k.startswith(prefix)}
        if len(kept) + len(seen) > JOURNAL_CACHE_RECORDS:
            kept = {}
        self._journal_cache = {**kept, **seen}
        return out

    def _journal(self) -> Iterator[tuple[bytes, bytes, Counter[str]]]:
        """Every journal record: ``(key, project, removals)``."""
        for key, raw in self._prefix(keys.df_journal_prefix(), fill_cache=False):
            yield key, keys.df_journal_project(key), _journal_counts(raw)

    def df_journal_records(self) -> int:
        """Journal records not yet folded into the term statistics."""
        return sum(1 for _ in self._prefix(keys.df_journal_prefix(), fill_cache=False))

    def fold_df_journal(self) -> tuple[int, int]:
        """Fold every journal record into the term statistics in one batch (a statistic
        reaching zero is deleted); returns (records folded, statistics deleted)."""
        self._need_primary()
        with self._lock:
            batch = Batch()
            folded = self._fold_into(batch)
            self._write(batch)
            return folded, batch.deleted

    def _fold_into(self, batch: Batch) -> int:
        """The journal's removals as statistic changes of ``batch``, its records deleted."""
        removed: dict[bytes, list[bytes]] = {}
        folded = 0
        for key, raw in self._prefix(keys.df_journal_prefix(), fill_cache=False):
            if raw:  # terms stay bytes: the statistics' keys are built from them
                removed.setdefault(keys.df_journal_project(key), []).extend(raw.split(b"\n"))
            batch.wb.delete(key)
            folded += 1
        if folded:  # the file holding the emptied statistics ends on this key, not a term
            batch.put(keys.DF_JOURNAL_SEQ, keys.U64.pack(self._get_u64(keys.DF_JOURNAL_SEQ)))
        for project, terms in removed.items():
            counts = Counter(terms)
            counts.update(batch.folded.get(project, ()))
            batch.folded[project] = counts
        return folded

    def _fold_if_long(self, batch: Batch) -> None:
        """Fold in ``batch`` when the journal reached :data:`DF_JOURNAL_FOLD_RECORDS`."""
        start = keys.df_journal_prefix()
        for i, _ in enumerate(self._scan(start, keys.prefix_end(start), fill_cache=False)):
            if i + 1 >= DF_JOURNAL_FOLD_RECORDS:
                self._fold_into(batch)
                return


def _terms(raw: bytes) -> list[str]:
    return raw.decode().split("\n")


def _journal_counts(raw: bytes) -> Counter[str]:
    return Counter(_terms(raw)) if raw else Counter()

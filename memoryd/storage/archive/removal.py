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
  journal (:meth:`~.core.StoreCore._journal_removals`).
  :meth:`~.postings.Postings.fold_df_journal` folds the journal into the
  statistics in one batch: a retiring batch (a wave, a superseding append, a
  forget) folds once the journal holds :data:`~.core.DF_JOURNAL_FOLD_RECORDS`
  records, and maintenance folds whatever is left when its waves find nothing
  more due, so many waves' removals of a common term cost one update. A
  record commits with its retirement and a fold deletes the records it
  applied in its own batch: a crash at any point leaves the sum exact.
"""

from __future__ import annotations

from memoryd.storage.archive import keys
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.positions import MAX_TERMS_PER_VERSION, tokenize


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

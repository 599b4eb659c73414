"""Archive codes: sign codes of each live version's exchanges.

A transcript's evidence is usually one exchange (a turn and its answer), so a
version is coded per group of :data:`GROUP_LINES` lines: group ``g`` covers
lines ``g * GROUP_LINES`` to ``(g + 1) * GROUP_LINES``, and the version's codes
(32 bytes a group at 256 dimensions) are one value ``C project 0 dv``. The
store never loads a model: its owner (the retention worker, or a command run
without a supervisor) gives it a :class:`Coder` of the configured encoder, and
an append writes the codes in the same WriteBatch as the version; retiring a
version deletes them in the batch that retires it (a tombstoned version is out
of search at once, and nothing derived from it waits for the purge). The
encoder that made every code is recorded in ``M vectors``: appending or
searching with another one raises :class:`EncoderChanged` until
:meth:`Vectors.rebuild_vectors` recomputes them from the live payloads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import orjson
from rocksdict import WriteBatch

from memoryd.base.errors import EncoderChanged
from memoryd.base.lazy import lazy_module
from memoryd.storage.archive import codec, keys
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.records import make_locator
from memoryd.storage.vectors import configured
from memoryd.text.dense import Encoder, pack

np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)

GROUP_LINES = 2  # an exchange: a turn and its answer
REBUILD_BATCH = 2000  # versions a rebuild writes per WriteBatch


def line_groups(content: str) -> list[str]:
    """The texts a version's codes are made of, in line order."""
    lines = content.split("\n")
    return ["\n".join(lines[i : i + GROUP_LINES]) for i in range(0, len(lines), GROUP_LINES)]


class Coder:
    """The configured encoder as the archive uses it: a version's codes and the name
    they are recorded under."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.meta = {"encoder": encoder.name, "dim": encoder.dim, "group_lines": GROUP_LINES}

    def codes(self, content: str) -> bytes:
        return pack(np.asarray(self.encoder.encode(line_groups(content))))


def coder_for(config) -> Coder | None:
    """The coder of the configured encoder (None: ``hashing`` stores no codes)."""
    enc = configured(config)
    return None if enc is None else Coder(enc)


def _refuse(stored: str, configured: str) -> EncoderChanged:
    return EncoderChanged(
        f"the archive's vectors were made by encoder {stored!r} but the configured encoder"
        f" is {configured!r}; run `memoryd rebuild` to recompute them (or set the encoder back)"
    )


class Vectors:
    """Codes of live versions: written with the version, deleted with its retirement.

    Interface: :attr:`coder` (set by the owner), the recorded encoder
    (:meth:`vectors_meta`, :meth:`check_vectors`), reads (:meth:`version_codes`,
    :meth:`sequence`) and the check and rebuild (:meth:`verify_vectors`,
    :meth:`vectors_digest`, :meth:`rebuild_vectors`). Receives the core only.
    """

    def __init__(self, core: StoreCore) -> None:
        self._core = core

    coder: Coder | None = None  # set by the owner; None: the encoder stores no codes

    def vectors_meta(self) -> dict[str, Any] | None:
        """The encoder, dimension and group size of the stored codes (None: none)."""
        return self._core._get_json(keys.VECTORS_META)

    def check_vectors(self, name: str | None) -> None:
        """Refuse to mix: ``name`` (None: an encoder that stores nothing) must be the
        encoder of the stored codes, if any."""
        meta = self.vectors_meta()
        if meta is not None and meta["encoder"] != name:
            raise _refuse(meta["encoder"], name or "hashing")

    def _codes(self, content: str, batch: Batch | None = None) -> bytes | None:
        """A new version's codes (None: the encoder stores none); the first write of
        codes records the encoder (in ``batch``)."""
        coder = self.coder
        self.check_vectors(coder.meta["encoder"] if coder else None)
        if coder is None:
            return None
        if batch is not None and self.vectors_meta() is None:
            batch.put(keys.VECTORS_META, orjson.dumps(coder.meta))  # (again per version)
        return coder.codes(content)

    @staticmethod
    def _drop_codes(batch: Batch, seg: bytes, dv: bytes) -> None:
        """A retired version's codes go in the batch that retires it (not counted as a
        purged key: it may have none)."""
        batch.wb.delete(keys.seg_codes(seg, dv))

    def sequence(self) -> int:
        """The store's last write's sequence number (a secondary's as of its catch-up):
        what a reader caching codes compares to know nothing was written since."""
        return self._core._db.latest_sequence_number()

    def version_codes(self, project: str) -> Iterator[tuple[str, bytes]]:
        """(locator, codes) of the project's coded versions whose keys are in the store,
        segment by segment (a version past its deadline is among them until its segment
        goes: readers check :meth:`~.ledgers.Ledgers.version_info`)."""
        for seg, key, value in self._core._segment_items(keys.SEG_CODES, project.encode()):
            yield make_locator(*keys.split_dv(keys.seg_version(key, seg))), value

    def _expected_codes(self) -> Iterator[tuple[bytes, bytes]]:
        """(key, codes) of every live version, made by the coder from its payload."""
        assert self.coder is not None
        for key, raw in self._core._prefix(keys.DOC, fill_cache=False):
            doc = keys.doc_of(key)
            ledger = codec.decode_ledger(raw)
            for i, v in enumerate(ledger["versions"]):
                if self._core._stored_live(ledger, v):
                    seg, dv = self._core._seg(ledger, v), keys.dv(doc, i + 1)
                    content = codec.decode_payload(self._core._db[keys.seg_payload(seg, dv)])[
                        "content"
                    ]
                    yield keys.seg_codes(seg, dv), self.coder.codes(content)

    def rebuild_vectors(self) -> int:
        """Drop every code and recompute the live versions' with the coder (which
        becomes the recorded encoder; none stored without a coder). Returns versions
        coded. The encoder is recorded last: a crash before leaves no claim."""
        self._core._need_primary()
        with self._core._lock:
            wb = WriteBatch(raw_mode=True)
            wb.delete(keys.VECTORS_META)
            for seg in self._core._live_segments():
                start = keys.seg_family(seg, keys.SEG_CODES)
                wb.delete_range(start, keys.prefix_end(start))
            self._core._db.write(wb, self._core._wopt)
            if self.coder is None:
                return 0
            count = 0
            wb = WriteBatch(raw_mode=True)
            for key, codes in self._expected_codes():
                wb.put(key, codes)
                count += 1
                if count % REBUILD_BATCH == 0:
                    self._core._db.write(wb, self._core._wopt)
                    wb = WriteBatch(raw_mode=True)
            wb.put(keys.VECTORS_META, orjson.dumps(self.coder.meta))
            self._core._db.write(wb, self._core._wopt)
            return count

    def vectors_digest(self) -> str:
        """The recorded encoder and every stored code, hashed in key order."""
        h = hashlib.sha256(repr(self.vectors_meta()).encode())
        for _, key, value in self._core._segment_items(keys.SEG_CODES):
            h.update(key + b"\0" + hashlib.sha256(value).digest())
        return h.hexdigest()

    def verify_vectors(self) -> dict[str, Any]:
        """Compare the stored codes with the coder's codes of the live payloads (writes
        nothing): ``{"equal", "live", "rebuilt"}`` digests."""
        h = hashlib.sha256(repr(self.coder.meta if self.coder else None).encode())
        for key, codes in sorted(self._expected_codes() if self.coder else ()):
            h.update(key + b"\0" + hashlib.sha256(codes).digest())
        live, rebuilt = self.vectors_digest(), h.hexdigest()
        return {"equal": live == rebuilt, "live": live, "rebuilt": rebuilt}

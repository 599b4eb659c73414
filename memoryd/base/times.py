"""Moments as JSON shows them: ISO 8601 strings in UTC.

A module of its own (standard library only) so that logging and the CLI can format
times without importing the stores.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_iso(ts: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string to the millisecond, as every JSON time
    is shown (``None`` stays ``None``).

    A time no calendar can show (stored before input was range-checked, e.g.
    milliseconds taken for seconds) reads as ``None`` instead of failing the read.
    """
    if ts is None:
        return None
    try:
        return (
            datetime.fromtimestamp(ts, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
    except (OverflowError, ValueError, OSError):
        return None


def iso_time(ts: float | None) -> str | None:
    """The queue's convention for a moment: milliseconds, and 0 (or None) means never."""
    if not ts:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

"""Retention classes and their windows, as configuration.

| class        | default age | automatic recall horizon |
|--------------|-------------|--------------------------|
| ephemeral    | 14 days     | 7 days                   |
| conversation | 90 days     | 30 days                  |
| derived      | 30 days     | 30 days                  |
| durable      | never       | never automatic          |

``active`` evidence is no class: a lease (active-context or retrieval) protects a
version of any class while it is held, and the version then keeps its class's age.
Versions an older memoryd stored in class ``active`` never expire and are never
automatic candidates, as before (docs/decisions/active-class.md).

Eligibility always counts from the source's creation time, never from last
access: nothing a search or recall does moves a deadline. A class whose age
is 0 days never expires.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from memoryd.storage.archive import CLASSES, BadArchiveInput

DAY = 86400.0

#: Classes whose age and horizon come from configuration.
EXPIRING_CLASSES = ("ephemeral", "conversation", "derived")

DEFAULT_AGES_DAYS = {"ephemeral": 14, "conversation": 90, "derived": 30}
DEFAULT_RECALL_DAYS = {"ephemeral": 7, "conversation": 30, "derived": 30}


@dataclass(frozen=True)
class RetentionPolicy:
    """Ages and automatic-recall horizons per class (days; 0 or absent: never)."""

    ages_days: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_AGES_DAYS))
    recall_days: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RECALL_DAYS))

    def __post_init__(self) -> None:
        for table in (self.ages_days, self.recall_days):
            for cls, days in table.items():
                if cls not in EXPIRING_CLASSES:
                    raise BadArchiveInput(
                        f"class {cls!r} has no configurable window "
                        f"(configurable: {', '.join(EXPIRING_CLASSES)})"
                    )
                if days < 0:
                    raise BadArchiveInput(f"days for {cls!r} must be >= 0, got {days}")

    @classmethod
    def from_config(cls, config: Any) -> RetentionPolicy:
        """From a :class:`memoryd.base.config.Config` (``retention_<class>_days`` and
        ``retention_<class>_recall_days``)."""
        return cls(
            ages_days={c: getattr(config, f"retention_{c}_days") for c in EXPIRING_CLASSES},
            recall_days={
                c: getattr(config, f"retention_{c}_recall_days") for c in EXPIRING_CLASSES
            },
        )

    @staticmethod
    def _check(cls_: str) -> None:
        if cls_ not in CLASSES:
            raise BadArchiveInput(f"class {cls_!r} is not one of {', '.join(CLASSES)}")

    def age_seconds(self, cls_: str) -> float | None:
        """How long a version of ``cls_`` lives after its source was created (None: forever)."""
        self._check(cls_)
        days = self.ages_days.get(cls_, 0)
        return days * DAY if days else None

    def expires_at(self, cls_: str, created_at: float) -> float | None:
        """The deadline of a version created at ``created_at`` (None: never expires)."""
        age = self.age_seconds(cls_)
        return None if age is None else created_at + age

    def is_due(self, cls_: str, created_at: float, now: float) -> bool:
        deadline = self.expires_at(cls_, created_at)
        return deadline is not None and deadline <= now

    def recall_eligible(self, cls_: str, created_at: float, now: float) -> bool:
        """May this version be inserted into a prompt unasked? (Explicit search ignores this.)"""
        self._check(cls_)
        days = self.recall_days.get(cls_, 0)
        if cls_ not in EXPIRING_CLASSES or not days:
            return False  # durable and active evidence is never an automatic candidate
        return created_at > now - days * DAY

    def recall_cutoffs(self, now: float) -> dict[str, float]:
        """``created_after`` for :func:`memoryd.search.archive_bm25.search` in
        automatic-recall mode: the oldest creation time per class (``inf`` excludes the class)."""
        out = {}
        for cls_ in CLASSES:
            days = self.recall_days.get(cls_, 0) if cls_ in EXPIRING_CLASSES else 0
            out[cls_] = now - days * DAY if days else float("inf")
        return out

    def fingerprint(self) -> str:
        """Changes whenever an age changes (the maintenance tick then re-derives deadlines)."""
        text = ",".join(f"{c}={self.ages_days.get(c, 0)}" for c in EXPIRING_CLASSES)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def as_dict(self) -> dict[str, Any]:
        return {
            c: {
                "age_days": self.ages_days.get(c, 0) if c in EXPIRING_CLASSES else 0,
                "recall_days": self.recall_days.get(c, 0) if c in EXPIRING_CLASSES else 0,
            }
            for c in CLASSES
        }

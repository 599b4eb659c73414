"""Operator logs: one line per event that matters, on stderr, as text or JSON lines.

Every line has a time (ISO 8601 UTC), a level, the pid and an event name; JSON
lines add the event's fields (sizes in ``_bytes``, pids, counts) so a log
shipper can filter without parsing prose. The supervisor and its workers
configure it from ``log_format`` and ``log_level``; a library caller that
configures nothing sees warnings and errors only (Python's last-resort handler).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson

from memoryd.base.times import utc_iso

LOGGER = logging.getLogger("memoryd")


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return (
            f"{utc_iso(record.created)} {record.levelname.lower():<7} "
            f"memoryd[{record.process}] {record.getMessage()}"
        )


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": utc_iso(record.created),
            "level": record.levelname.lower(),
            "pid": record.process,
            "event": getattr(record, "event", "message"),
            "message": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        return orjson.dumps(line, default=str).decode()


def configure(log_format: str = "text", level: str = "info") -> None:
    """Send memoryd's log lines to stderr in ``log_format`` from ``level`` up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    LOGGER.handlers[:] = [handler]
    LOGGER.setLevel(level.upper())
    LOGGER.propagate = False


def event(name: str, message: str, *, level: int = logging.INFO, **fields: Any) -> None:
    """Log one event: ``name`` for machines, ``message`` for people, ``fields`` for both."""
    LOGGER.log(level, message, extra={"event": name, "fields": fields})

"""Every default in one place, and how the effective configuration is built.

Strength, weakest first: the defaults below, ``$MEMORYD_HOME/memoryd.toml``,
``MEMORYD_<NAME>`` environment variables, command-line flags.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.errors import ConfigError

MiB = 1024 * 1024

AUTHORITY_FILE = "authority.db"
ARCHIVE_DIR = "archive"  # the RocksDB evidence archive, inside the home
ARCHIVE_WAIT_SECONDS = 120.0  # a CLI archive command waits this long for its job
ARCHIVE_POLL_SECONDS = 0.02
SPOOL_DIR = "spool"  # archive content handed to the retention worker as files
CONFIG_FILE = "memoryd.toml"
PROGRESS_DIR = "progress"  # scan progress files (files discovered so far), per run
SUPERVISOR_LOCK_FILE = "supervisor.lock"
SUPERVISOR_STATE_FILE = "supervisor.json"
# ids of the jobs whose results the supervisor is committing (poison-job evidence)
SUPERVISOR_APPLYING_FILE = "supervisor.applying"


# Chunking and compression of ingested text (format constants, not tunables:
# changing them changes chunk ids).
CHUNK_TARGET_LINES = 40  # start looking for a natural boundary here
CHUNK_MAX_LINES = 80
CHUNK_MAX_CHARS = 4096
COMPRESSION_LEVEL = 6
# A zstd dictionary per project, trained by the first scan that finds enough new
# files (a body's frame names its dictionary, so older bodies stay decodable).
ZSTD_DICT_BYTES = 64 * 1024
ZSTD_DICT_MIN_FILES = 32  # fewer new files: no dictionary yet (bodies compress alone)
ZSTD_DICT_SAMPLES = 128  # files read for training, spread evenly over the new ones
ZSTD_DICT_SAMPLE_BYTES = 32 * 1024  # each sample is at most this prefix of its file
PAGE_SIZE = 2048  # of a new authority (SQLite's default 4096 packs compressed bodies worse)
BINARY_SNIFF_BYTES = 8192  # a NUL byte in this prefix marks a binary, as git decides


@dataclass(frozen=True)
class Setting:
    default: Any
    help: str


SETTINGS: dict[str, Setting] = {
    # SQLite authority
    "busy_timeout_ms": Setting(100, "SQLite busy timeout per statement (short: retries are whole)"),
    "write_retry_seconds": Setting(30.0, "give up retrying a busy write transaction after this"),
    "cache_kib": Setting(65536, "SQLite page cache per connection, KiB (FTS merges need room)"),
    "journal_size_limit": Setting(64 * MiB, "WAL size SQLite shrinks back to after a reset"),
    # queue
    "max_attempts": Setting(5, "attempts before a job is dead-lettered"),
    "lease_seconds": Setting(60.0, "lease length of a claimed job; running jobs are renewed"),
    "retry_backoff_base": Setting(1.0, "first retry delay in seconds; doubles per attempt"),
    "retry_backoff_max": Setting(300.0, "cap on one retry delay in seconds"),
    "jobs_keep_seconds": Setting(7 * 86400.0, "done jobs older than this are purged"),
    "jobs_purge_batch": Setting(1000, "most job rows one purge step looks at (bounded deletes)"),
    "enqueue_chunk_rows": Setting(
        10_000, "bulk enqueues (jobs add --count) commit in chunks of this many rows"
    ),
    # supervisor
    "workers": Setting(2, "job worker processes"),
    "claim_batch_max": Setting(512, "most jobs claimed in one loop turn"),
    "dispatch_target_seconds": Setting(0.02, "estimated work handed to a worker at once"),
    "poll_seconds": Setting(0.05, "idle wait between looks at the queue"),
    "shutdown_grace_seconds": Setting(10.0, "SIGTERM: how long in-flight jobs may finish"),
    "job_timeout_seconds": Setting(
        600.0, "a job running longer gets its worker killed and the attempt charged"
    ),
    "supervisor_death_cap": Setting(
        3, "supervisor deaths while applying a job's result before it is dead-lettered"
    ),
    # ingestion
    "max_file_bytes": Setting(2 * MiB, "files larger than this are skipped"),
    "ingest_batch_files": Setting(256, "most files in one ingest.batch job"),
    "ingest_batch_bytes": Setting(8 * MiB, "most source bytes in one ingest.batch job"),
    "ingest_batch_target_bytes": Setting(
        2 * MiB, "source bytes a batch aims for (smaller batches spread over workers)"
    ),
    "scan_progress_seconds": Setting(0.5, "a scan reports the files it found this often"),
    "progress_line_seconds": Setting(
        10.0, "ingest --wait prints a plain progress line this often when not on a terminal"
    ),
    # maintenance
    "wal_checkpoint_bytes": Setting(1 * MiB, "checkpoint (TRUNCATE) once the WAL is this large"),
    "maintenance_period_seconds": Setting(30.0, "checkpoint a non-empty WAL at least this often"),
    "wal_pause_bytes": Setting(8 * MiB, "pause claims when a pinned reader keeps the WAL this big"),
    # retention (evidence archive; 0 days = the class never expires)
    "retention_ephemeral_days": Setting(14, "age (days from source creation), ephemeral"),
    "retention_conversation_days": Setting(90, "age (days) of conversation sources"),
    "retention_derived_days": Setting(30, "age (days) of derived evidence"),
    "retention_ephemeral_recall_days": Setting(7, "automatic-recall horizon of ephemeral, days"),
    "retention_conversation_recall_days": Setting(30, "automatic-recall horizon, conversation"),
    "retention_derived_recall_days": Setting(30, "automatic-recall horizon of derived, days"),
    "retention_tick_seconds": Setting(60.0, "period of the archive maintenance tick"),
    "retention_max_expired_protections": Setting(1000, "lapsed lease records cleaned per tick"),
    "retention_max_retrieval_leases": Setting(1000, "lapsed retrieval leases cleaned per tick"),
    "retention_max_hints": Setting(1000, "old access (hint/exposure) records cleaned per tick"),
    "retention_waves_per_tick": Setting(4, "retention waves per maintenance tick"),
    "retention_wave_documents": Setting(256, "most documents one retention wave retires"),
    "retention_purge_batch_keys": Setting(4096, "most keys one purge WriteBatch deletes"),
    "retention_compaction_deleted_keys": Setting(10_000, "flush after this many deleted keys"),
    "retention_compaction_reclaimable_bytes": Setting(
        256 * MiB, "flush once RocksDB reports this much reclaimable SST data"
    ),
    "retention_retrieval_lease_seconds": Setting(300.0, "lease a search takes on its results"),
    "retention_active_lease_seconds": Setting(600.0, "active-context lease length per heartbeat"),
    "retention_access_bucket_seconds": Setting(86400, "at most one access record per doc per this"),
    "retention_access_keep_days": Setting(30, "access records older than this are cleaned"),
    "retention_disk_low_bytes": Setting(2048 * MiB, "disk-low mode below this free space (0: off)"),
    "retention_disk_reserve_bytes": Setting(64 * MiB, "free space archival writes never consume"),
    "archive_spool_keep_seconds": Setting(
        86400.0, "an archive add's spool file nobody took is deleted after this"
    ),
}


@dataclass
class Config:
    """Effective settings plus where each value came from."""

    values: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)


def default_home() -> Path:
    """``$MEMORYD_HOME``, else ``$XDG_DATA_HOME/memoryd``, else ``~/.local/share/memoryd``."""
    if env := os.environ.get("MEMORYD_HOME"):
        return Path(env)
    if xdg := os.environ.get("XDG_DATA_HOME"):
        return Path(xdg) / "memoryd"
    return Path.home() / ".local" / "share" / "memoryd"


def _coerce(name: str, raw: Any, origin: str) -> Any:
    kind = type(SETTINGS[name].default)
    try:
        if kind is bool and isinstance(raw, str):
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes")
        if kind is int and isinstance(raw, float) and not raw.is_integer():
            raise ValueError(raw)
        return kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{origin}: {name} must be {kind.__name__}, got {raw!r}") from None


def load_config(home: Path, overrides: dict[str, Any] | None = None) -> Config:
    """Build the effective configuration for ``home``."""
    values = {name: s.default for name, s in SETTINGS.items()}
    sources = dict.fromkeys(SETTINGS, "default")
    path = home / CONFIG_FILE
    if path.is_file():
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from None
        for name, raw in table.items():
            if name not in SETTINGS:
                raise ConfigError(f"{path}: unknown setting {name!r}")
            values[name], sources[name] = _coerce(name, raw, str(path)), str(path)
    for name in SETTINGS:
        env = f"MEMORYD_{name.upper()}"
        if env in os.environ:
            values[name], sources[name] = _coerce(name, os.environ[env], env), env
    for name, raw in (overrides or {}).items():
        if raw is not None:
            values[name], sources[name] = _coerce(name, raw, "flag"), "flag"
    return Config(values, sources)

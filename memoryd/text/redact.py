"""Remove secrets and ``<private>`` spans from text an agent's hooks hand over.

What a hook captures is written to the spool, then the archive: a secret in it
would outlive the session in both. So before anything is written, every string of
an event goes through :func:`redact`:

- ``<private>…</private>`` spans (the user's own marking, any case, across lines;
  an unclosed one runs to the end of the text) are replaced by ``[private]``;
- credential formats and ``KEY=value`` assignments of secret-looking names
  (``secret_patterns.txt``, a rule a line) by ``[redacted:RULE]``;
- high-entropy tokens (long runs of letters, digits and ``+/_-=`` mixing cases and
  digits whose characters carry more than :data:`ENTROPY_BITS` bits each, the mark
  of generated keys; hex digests and words do not reach it) by
  ``[redacted:entropy]``.

A tool reading a secret file (the names ingest skips: ``.env*``, keys,
credentials) keeps none of its output (:func:`secret_file`).

Only ``re``, ``math`` and ``fnmatch`` are imported: a hook process pays for this.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from collections import Counter
from functools import cache

PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
PRIVATE_MARK = "[private]"
#: Token candidates for the entropy rule: long runs of key-like characters.
_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{24,}")
ENTROPY_BITS = 4.2
#: File names whose content is a secret (ingest's secret-file rules, by name).
SECRET_FILES = (
    ".env", ".env.*", "*.env", ".envrc", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.gpg",
    "credentials", "credentials.*", "*credentials*.json", "service-account*.json",
    ".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd",
    "secrets.*", "*.secret", "*.secrets",
)  # fmt: skip


@cache
def rules() -> tuple[tuple[str, re.Pattern], ...]:
    """The rules of ``secret_patterns.txt`` (read once a process)."""
    path = os.path.join(os.path.dirname(__file__), "secret_patterns.txt")
    found = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, pattern = line.rstrip("\n").split("\t", 1)
                found.append((name, re.compile(pattern)))
    return tuple(found)


def redact(text: str) -> str:
    """``text`` without private spans, secrets or high-entropy tokens."""
    if "<" in text:
        text = PRIVATE.sub(PRIVATE_MARK, text)
    for name, pattern in rules():
        text = pattern.sub(lambda m, n=name: _replacement(m, n), text)
    return _TOKEN.sub(_entropy_replacement, text)


def _replacement(match: re.Match, name: str) -> str:
    mark = f"[redacted:{name}]"
    if "value" not in match.re.groupindex or match.group("value") is None:
        return mark
    start, end = match.span("value")
    whole = match.group(0)
    base = match.start()
    return whole[: start - base] + mark + whole[end - base :]


def _entropy_replacement(match: re.Match) -> str:
    token = match.group(0)
    return "[redacted:entropy]" if looks_generated(token) else token


def looks_generated(token: str) -> bool:
    """A token mixing upper case, lower case and digits whose characters carry more
    than :data:`ENTROPY_BITS` bits each (Shannon, over the token itself)."""
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
        return False
    if not any(c.isdigit() for c in token):
        return False
    counts = Counter(token)
    n = len(token)
    bits = -sum(k / n * math.log2(k / n) for k in counts.values())
    return bits > ENTROPY_BITS


def secret_file(path: str) -> bool:
    """Whether a file of this name holds secrets (ingest's rules, by name)."""
    name = os.path.basename(path)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_FILES)


def redact_value(value: object) -> object:
    """``value`` (JSON: strings, lists, objects) with every string redacted, keys too."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, dict):
        return {redact(str(k)): redact_value(v) for k, v in value.items()}
    return value

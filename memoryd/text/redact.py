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

Nothing of ``re`` is imported: a hook process pays for every import, and ``re``'s
and the rules' compilation are most of a hook's own CPU. The patterns come compiled
from :mod:`memoryd.text.precompiled` (compiled by ``re`` once per interpreter and
rules, kept beside this module's bytecode), on first use.
"""

import os
import sys

from memoryd.text import precompiled

TYPE_CHECKING = False  # typing's import is one more a hook would pay for
if TYPE_CHECKING:
    from re import Match, Pattern

PRIVATE = r"(?is)<private>.*?(?:</private>|\Z)"
PRIVATE_MARK = "[private]"
#: Token candidates for the entropy rule: long runs of key-like characters.
TOKEN = r"[A-Za-z0-9+/_=-]{24,}"
ENTROPY_BITS = 4.2
#: File names whose content is a secret (ingest's secret-file rules, by name).
SECRET_FILES = (
    ".env", ".env.*", "*.env", ".envrc", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.gpg",
    "credentials", "credentials.*", "*credentials*.json", "service-account*.json",
    ".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd",
    "secrets.*", "*.secret", "*.secrets",
)  # fmt: skip
RULES_FILE = os.path.join(os.path.dirname(__file__), "secret_patterns.txt")
#: The compiled patterns' cache, per interpreter (beside this module's bytecode).
CACHE_FILE = os.path.join(os.path.dirname(__file__), "__pycache__",
                          f"secret_patterns.{sys.implementation.cache_tag}.sre")  # fmt: skip


class Patterns:
    """The compiled patterns: private spans, entropy tokens, secret file names (the
    globs as one pattern) and the named rules, in the rules file's order."""

    def __init__(self, rules: tuple[tuple[str, str], ...]) -> None:
        names = [name for name, _ in rules]
        spec = (PRIVATE, TOKEN, SECRET_FILES, rules)
        compiled = precompiled.load(spec, lambda: _sources(rules), CACHE_FILE)
        self.private, self.token, self.secret_files, *found = compiled
        self.rules: tuple[tuple[str, Pattern], ...] = tuple(zip(names, found, strict=True))


def _sources(rules: tuple[tuple[str, str], ...]) -> list[tuple[str, int]]:
    """The patterns to compile, as :class:`Patterns` takes them in order (the secret
    file globs as ``fnmatch`` translates them, one alternative each)."""
    import fnmatch

    files = "|".join(fnmatch.translate(glob) for glob in SECRET_FILES)
    return [(PRIVATE, 0), (TOKEN, 0), (files, 0), *((pattern, 0) for _, pattern in rules)]


_patterns: list[Patterns] = []


def patterns() -> Patterns:
    """The compiled patterns (built once a process, on first use)."""
    if not _patterns:
        _patterns.append(Patterns(read_rules()))
    return _patterns[0]


def read_rules() -> tuple[tuple[str, str], ...]:
    """``secret_patterns.txt``'s rules: (name, pattern), a rule a line."""
    found = []
    with open(RULES_FILE, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, pattern = line.rstrip("\n").split("\t", 1)
                found.append((name, pattern))
    return tuple(found)


def redact(text: str) -> str:
    """``text`` without private spans, secrets or high-entropy tokens."""
    found = patterns()
    if "<" in text:
        text = found.private.sub(PRIVATE_MARK, text)
    for name, pattern in found.rules:
        text = pattern.sub(lambda m, n=name: _replacement(m, n), text)
    return found.token.sub(_entropy_replacement, text)


def _replacement(match: "Match", name: str) -> str:
    mark = f"[redacted:{name}]"
    if "value" not in match.re.groupindex or match.group("value") is None:
        return mark
    start, end = match.span("value")
    whole = match.group(0)
    base = match.start()
    return whole[: start - base] + mark + whole[end - base :]


def _entropy_replacement(match: "Match") -> str:
    token = match.group(0)
    return "[redacted:entropy]" if looks_generated(token) else token


def looks_generated(token: str) -> bool:
    """A token mixing upper case, lower case and digits whose characters carry more
    than :data:`ENTROPY_BITS` bits each (Shannon, over the token itself)."""
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
        return False
    if not any(c.isdigit() for c in token):
        return False
    from math import log2  # here: most hooks meet no such token, and pay no import

    counts: dict[str, int] = {}
    for c in token:
        counts[c] = counts.get(c, 0) + 1
    n = len(token)
    bits = -sum(k / n * log2(k / n) for k in counts.values())
    return bits > ENTROPY_BITS


def secret_file(path: str) -> bool:
    """Whether a file of this name holds secrets (ingest's rules, by name)."""
    return patterns().secret_files.match(os.path.basename(path)) is not None


def redact_value(value: object) -> object:
    """``value`` (JSON: strings, lists, objects) with every string redacted, keys too."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, dict):
        return {redact(str(k)): redact_value(v) for k, v in value.items()}
    return value

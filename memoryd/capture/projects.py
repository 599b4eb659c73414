"""Which project a directory belongs to: the ingested project whose root holds it
(the deepest), else an archive-only project named after the directory."""

from __future__ import annotations

import os
import re

_UNSAFE = re.compile(r"[/@\x00]+")


def project_for_dir(cwd: str, roots: dict[str, str]) -> str:
    """``roots``: project name -> its root directory. The project whose root is
    ``cwd`` or holds it (the deepest root wins); else ``cwd``'s own name, made a
    valid archive project name."""
    path = os.path.normpath(cwd or "/")
    best, depth = None, -1
    for name, root in roots.items():
        root = os.path.normpath(root)
        if (path == root or path.startswith(root.rstrip("/") + "/")) and len(root) > depth:
            best, depth = name, len(root)
    if best is not None:
        return best
    return _UNSAFE.sub("-", os.path.basename(path)).strip("-")[:200] or "root"

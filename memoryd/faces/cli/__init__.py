"""The ``memoryd`` command (:mod:`.main`), its ``memory`` group (:mod:`.memory`).

``memoryd hook EVENT`` runs on every prompt and tool call of an agent, so the
``memoryd`` script's first import (this package) hands it to the hook's own module
before :mod:`.main` imports click, rich and the API (a quarter of a second)."""

import sys as _sys

if _sys.argv[1:2] == ["hook"] and _sys.argv[0].endswith("memoryd"):
    from memoryd.faces.hooks.event import run as _hook

    _hook(_sys.argv[2:])

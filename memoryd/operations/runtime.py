"""The extensions every supervisor memoryd starts runs with.

Each supervisor started by ``memoryd run``, ``Memoryd.run`` (the drains the API
runs in-process, ``ingest --wait``'s) or ``diagnose`` has its control socket (its
requests answered here, by API instances: :mod:`memoryd.operations.control_requests`)
and records the dashboard's samples in its group commits
(:mod:`memoryd.workers.sampler`). The runtime knows neither by name: they are
handed to :class:`~memoryd.workers.supervisor.Supervisor` as extensions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.base.config import Config
from memoryd.operations.control_requests import ControlRequests
from memoryd.workers.control import ControlServer
from memoryd.workers.extensions import Extension
from memoryd.workers.sampler import Sampler


def extensions(home: Path, config: Config, new_api: Callable[[Path], Any]) -> list[Extension]:
    """The control socket and the dashboard's sampler of a supervisor of ``home``;
    ``new_api(home)`` makes the API instances that answer the socket's requests
    (:class:`~memoryd.operations.api.Memoryd`, passed in: this module sits below it)."""
    return [ControlServer(home, config, ControlRequests(home, config, new_api)), Sampler(config)]

"""The MCP ``archive_add`` tool with history past its class age."""

from __future__ import annotations

from pathlib import Path

import anyio
import orjson
import pytest

from tests.agent.test_mcp import call, connect, fails

pytestmark = pytest.mark.slow


def test_history_is_refused_unless_imported(project_home: Path) -> None:
    line = orjson.dumps(
        {
            "role": "user",
            "content": "The 1990 deploy ran from the tape drive.",
            "timestamp": "1990-01-01T00:00:00Z",
        }  # fmt: skip
    ).decode()

    async def scenario() -> None:
        async with connect(project_home) as s:
            error = await fails(s, "archive_add", transcript=line, session="tape")
            assert "PAST_CLASS_AGE" in error and "imported" in error
            added = await call(s, "archive_add", transcript=line, session="tape", imported=True)
            assert added["created"] == [True] and added["status"] == ["live"]
            assert added["would_have_expired_at"] == ["1990-04-01T00:00:00.000Z"]

    anyio.run(scenario)

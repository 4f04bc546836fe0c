"""Plain helpers the test files share: the CLI in a subprocess, ingesting into a store, reading
rows back, and an MCP client over stdio. Fixtures live in conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

    from causantic.ingest.pipeline import IngestReport

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def run_cli(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m causantic ARGS` from this checkout, text output captured."""
    return subprocess.run(
        [PYTHON, "-m", "causantic", *args], capture_output=True, text=True, cwd=cwd,
        timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )


def ingest(db: Path, *paths: Path, home: Path | None = None) -> IngestReport:
    """Ingest transcripts into the database at ``db`` through the normal pipeline.

    ``home`` replaces the environment (as ``HOME``) for fixtures built outside one test's
    private home; without it the test's own environment is read."""
    from causantic.config import load_settings
    from causantic.ingest.run import run_ingest

    env = None if home is None else {"HOME": str(home)}
    return run_ingest(load_settings(db=db, env=env), list(paths))


def rows(db: Path, sql: str, *args: object) -> list[tuple]:
    """Every row a query returns, read through a read-only store."""
    from causantic.store import open_store

    with open_store(db, readonly=True) as store:
        return [tuple(r) for r in store.conn.execute(sql, args)]


def count(db: Path, sql: str, *args: object) -> int:
    """The single number a `SELECT count(...)` query returns."""
    return int(rows(db, sql, *args)[0][0])


@asynccontextmanager
async def mcp_client(args: list[str], log: Path, command: str = PYTHON, cwd: Path | None = None,
                     env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """A real MCP client session over stdio with ``command ARGS`` (not yet initialized); the
    server's stderr goes to ``log``."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args, env=env,
                                   cwd=None if cwd is None else str(cwd))
    with open(log, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                yield session

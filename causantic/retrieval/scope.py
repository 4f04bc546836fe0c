"""`[memory] scope = "project"`: a Claude Code session sees only its own project's memory.

For people whose projects must not mix (one client's work never shown in another's
session). The MCP server then answers for one project, the one of the folder Claude Code
started it in: a tool's `project` may be left out or name that project (by any of its
names, or a path inside it); naming another is refused with a message that names no other
project. Sessions, memories and lessons of other projects are out of reach the same way.
Memories remembered for every project (no project) stay shared: they are the user's own.
The hooks already brief and recall for the session's project; the lesson hook then offers
only the project's own lessons.
"""

from __future__ import annotations

import apsw

from causantic.errors import UsageError
from causantic.retrieval.projects import project_at, resolve_project
from causantic.store.projects import has_chunks
from causantic.transcripts.project import project_for_cwd


class OwnProject:
    """The one project a session may see (the project of ``cwd``), and its checks."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd

    def name(self, conn: apsw.Connection | None) -> str:
        """The project as memory knows it (a new folder's own name when it has none, and
        without a database (``conn`` None) the name ingest will give it)."""
        return project_at(conn, self.cwd) if conn is not None else project_for_cwd(self.cwd).name

    def project(self, conn: apsw.Connection, asked: str | None, *, new_ok: bool = False) -> str:
        """The project a tool answers for: ours, whatever ``asked`` says, unless it names
        another one, which is refused. ``new_ok``: ours may have no chunks yet (remembering,
        listing memories); otherwise that is said here, since the usual "no such project"
        message lists the projects memory holds.

        Raises
        ------
        UsageError : ``asked`` is not this project (or no project at all), or this project
            has nothing in memory yet and ``new_ok`` is off.
        """
        here = self.name(conn)
        if not (asked is None or asked.strip() in ("", ".", here)):
            try:
                named = resolve_project(conn, asked)
            except UsageError:  # its "closest names" would list other projects
                named = None
            if named != here:
                raise UsageError(self.refusal(here))
        if not new_ok and not has_chunks(conn, here):
            raise UsageError(f'memory holds nothing of this project ("{here}") yet: its '
                             "sessions are read as they end")
        return here

    def memory(self, conn: apsw.Connection, memory_id: str) -> None:
        """Refuse a memory of another project (ours and shared ones pass; an unknown id is
        left to the tool, whose message names no project).

        Raises
        ------
        UsageError : the memory belongs to another project.
        """
        # deferred: only for the memory tools
        from causantic.store import memories as sql

        here = self.name(conn)
        for found in sql.resolve_ids(conn, memory_id):
            row = sql.get(conn, found)
            if row is not None and row.project not in ("", here):
                raise UsageError(self.refusal(here))

    @staticmethod
    def refusal(here: str) -> str:
        """What a tool says when asked about another project."""
        return (f'this session sees only the memory of its own project "{here}" '
                '([memory] scope = "project" in config.toml)')

"""`[memory] scope`: what a Claude Code session sees of memory beyond its own work.

`scope = "project"`: a Claude Code session sees only its own project's memory.

For people whose projects must not mix (one client's work never shown in another's
session). The MCP server then answers for one project, the one of the folder Claude Code
started it in: a tool's `project` may be left out or name that project (by any of its
names, or a path inside it); naming another is refused with a message that names no other
project. Sessions, memories and lessons of other projects are out of reach the same way.
Memories remembered for every project (no project) stay shared: they are the user's own.
The hooks already brief and recall for the session's project; the lesson hook then offers
only the project's own lessons.

`scope = "worktree"`: the same, and within the project, nothing worked in its *other* linked
worktrees (`narrow_to_worktree`): for parallel sessions on separate branches, each in its own
`git worktree`, whose unmerged work should not leak into one another. A session sees its own
worktree's memory and the main checkout's; work done in a worktree since removed (merged or
dropped) is seen again. The filter is on the connection (`store.visibility`), so every tool
and hook reads through it.
"""

from __future__ import annotations

import os

import apsw

from causantic.errors import UsageError
from causantic.retrieval.projects import project_at, resolve_project
from causantic.store.projects import has_chunks
from causantic.store.visibility import (
    hidden_sessions,
    hide_sessions,
    is_hidden,
    linked_worktree_sessions,
)
from causantic.transcripts.project import checkout_for_cwd, project_for_cwd


def other_worktrees(conn: apsw.Connection, project: str, cwd: str) -> list[str]:
    """The sessions of ``project`` worked in its other linked worktrees: those that still
    exist on this machine and are not the one ``cwd`` is in. Sessions of the main checkout, of
    this worktree and of worktrees since removed (merged or dropped) are not among them."""
    mine = checkout_for_cwd(cwd)
    return [sid for checkout, ids in linked_worktree_sessions(conn, project).items()
            if checkout != mine and os.path.isdir(checkout) for sid in ids]


def narrow_to_worktree(conn: apsw.Connection, project: str, cwd: str) -> list[str]:
    """Hide `other_worktrees` from everything ``conn`` reads; returns their ids."""
    hidden = other_worktrees(conn, project, cwd)
    hide_sessions(conn, hidden)
    return hidden


def hidden_session_note(conn: apsw.Connection, prefix: str) -> str | None:
    """Why a session named by id is not found, when it is another worktree's work that
    `narrow_to_worktree` left out of this connection (None otherwise): the shell's
    `list-sessions` does list it, so "no such session" would send the reader looking."""
    if not prefix or not is_hidden(conn, prefix):
        return None
    return (f'Session "{prefix}" is work of another worktree, which this session does not see '
            '([memory] scope = "worktree": its own worktree and the main checkout only).')


class OwnProject:
    """The one project a session may see (the project of ``cwd``), and its checks. With
    ``worktree``, also only its own worktree of it (`narrow`)."""

    def __init__(self, cwd: str, worktree: bool = False) -> None:
        self.cwd = cwd
        self.worktree = worktree

    def narrow(self, conn: apsw.Connection) -> None:
        """Under scope "worktree", leave the project's other linked worktrees out of what
        ``conn`` reads (`narrow_to_worktree`); a no-op under "project"."""
        if self.worktree:
            narrow_to_worktree(conn, self.name(conn), self.cwd)

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
                raise UsageError(self.refusal(here, self.worktree))
        if not new_ok and not has_chunks(conn, here):
            if hidden_sessions(conn):  # narrowed: the project's work is all in other worktrees
                raise UsageError(f'memory holds nothing this worktree may see of project '
                                 f'"{here}" yet: only work of its other worktrees, left out by '
                                 '[memory] scope = "worktree"; its own sessions are read as '
                                 'they end')
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
        hidden = set(other_worktrees(conn, here, self.cwd)) if self.worktree else set()
        for found in sql.resolve_ids(conn, memory_id):
            row = sql.get(conn, found)
            if row is not None and (row.project not in ("", here) or row.session_id in hidden):
                raise UsageError(self.refusal(here, self.worktree))

    @staticmethod
    def refusal(here: str, worktree: bool = False) -> str:
        """What a tool says when asked about another project (or another worktree's memory)."""
        if worktree:
            return (f'this session sees only the memory of its own worktree of project "{here}" '
                    '([memory] scope = "worktree" in config.toml)')
        return (f'this session sees only the memory of its own project "{here}" '
                '([memory] scope = "project" in config.toml)')

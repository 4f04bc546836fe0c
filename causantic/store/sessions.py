"""The sessions table: one row per Claude Code session, merged across ingests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from causantic.errors import UsageError
from causantic.store.sql import execute_in


@dataclass(frozen=True)
class SessionRow:
    id: str
    project: str
    project_path: str | None
    cwd: str | None
    git_branch: str | None
    title: str | None
    start_time: str | None
    end_time: str | None
    continued: bool
    forked_from: str | None
    checkout: str | None = None  # the working-tree folder of cwd (a worktree's own folder)


_COLUMNS = (
    "id, project, project_path, cwd, git_branch, title, start_time, end_time, continued, forked_from,"
    " checkout"
)


def upsert_session(conn: apsw.Connection, row: SessionRow) -> None:
    """Insert or merge: the first project, cwd and checkout stay; times widen; newer
    branch/title win."""
    conn.execute(
        f"INSERT INTO sessions({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT(id) DO UPDATE SET"
        " project = CASE WHEN sessions.project = 'unknown' THEN excluded.project"
        "                ELSE sessions.project END,"
        " project_path = coalesce(nullif(sessions.project_path, ''), excluded.project_path),"
        " cwd = coalesce(sessions.cwd, excluded.cwd),"
        " git_branch = coalesce(excluded.git_branch, sessions.git_branch),"
        " title = coalesce(excluded.title, sessions.title),"
        " start_time = CASE WHEN sessions.start_time IS NULL OR excluded.start_time < sessions.start_time"
        "                   THEN coalesce(excluded.start_time, sessions.start_time) ELSE sessions.start_time END,"
        " end_time = CASE WHEN sessions.end_time IS NULL OR excluded.end_time > sessions.end_time"
        "                 THEN coalesce(excluded.end_time, sessions.end_time) ELSE sessions.end_time END,"
        " continued = max(sessions.continued, excluded.continued),"
        " forked_from = coalesce(sessions.forked_from, excluded.forked_from),"
        " checkout = coalesce(sessions.checkout, excluded.checkout)",
        (
            row.id,
            row.project,
            row.project_path,
            row.cwd,
            row.git_branch,
            row.title,
            row.start_time,
            row.end_time,
            int(row.continued),
            row.forked_from,
            row.checkout,
        ),
    )


def get_session(conn: apsw.Connection, session_id: str) -> SessionRow | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return _row(row) if row else None


def project_sessions(conn: apsw.Connection, project: str) -> list[SessionRow]:
    """Sessions of a project that hold at least one chunk, oldest first."""
    return [
        _row(r)
        for r in conn.execute(
            f"SELECT {_COLUMNS} FROM sessions s WHERE project = ?"
            " AND EXISTS (SELECT 1 FROM chunks c WHERE c.session_id = s.id)"
            " ORDER BY start_time, id",
            (project,),
        )
    ]


def file_session_starts(conn: apsw.Connection, file_id: int, before: int) -> dict[str, str | None]:
    """Start times of the main sessions with chunks stored from a file before an offset."""
    return dict(
        conn.execute(
            "SELECT s.id, s.start_time FROM sessions s WHERE s.id IN (SELECT DISTINCT session_id"
            " FROM chunks WHERE file_id = ? AND offset < ? AND agent_id = '')",
            (file_id, before),
        )
    )


def delete_sessions(conn: apsw.Connection, session_ids: Sequence[str]) -> None:
    """Delete these session rows (after their chunks: `forget` of whole sessions); `main.`
    as in `chunks.delete_rowids`."""
    execute_in(conn, "DELETE FROM main.sessions WHERE id IN ({marks})", session_ids)


def session_cwd(conn: apsw.Connection, session_id: str) -> str | None:
    """The folder the session ran in, or None when unknown."""
    found = conn.execute("SELECT cwd FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return found[0] if found else None


def _row(r: tuple) -> SessionRow:
    # mypy cannot tell that r[:8] fills exactly the first eight fields
    return SessionRow(*r[:8], bool(r[8]), r[9], r[10])  # type: ignore[call-arg]


def ids_with_prefix(
    conn: apsw.Connection, prefix: str, project: str | None = None, limit: int = 4
) -> list[str]:
    """Up to ``limit`` stored session ids (of ``project`` if given) that start with ``prefix``."""
    sql = "SELECT DISTINCT session_id FROM chunks WHERE substr(session_id, 1, ?) = ?"
    args: list[object] = [len(prefix), prefix]
    if project is not None:
        sql += " AND project = ?"
        args.append(project)
    return [r[0] for r in conn.execute(sql + " LIMIT ?", (*args, limit))]


#: Listings show this many characters of a session id; a shorter prefix is refused.
MIN_PREFIX = 8


def resolve_prefix(conn: apsw.Connection, prefix: str, project: str | None = None) -> str | None:
    """The stored session whose id is ``prefix`` or starts with it, or None when none does.

    Raises UsageError for a prefix under MIN_PREFIX characters that is no whole id, or one
    that several sessions start with.
    """
    prefix = prefix.strip()
    found = ids_with_prefix(conn, prefix, project)
    if prefix in found:
        return prefix
    if len(prefix) < MIN_PREFIX:
        raise UsageError(
            f"session {prefix!r} is too short; give at least {MIN_PREFIX} characters of its id"
        )
    if len(found) > 1:
        raise UsageError(f"session prefix {prefix!r} matches several sessions "
                         f"({', '.join(found[:3])}); give more of the id")
    return found[0] if found else None

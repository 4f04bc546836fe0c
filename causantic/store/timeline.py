"""A project's chunks and sessions read back in time order: reconstruct's and the briefing's SQL.

Light imports only (no dataclasses): the session-start hook runs these. Times are the stored
ISO strings; `since`/`until` bound a chunk's end and start time.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterator

import apsw

from causantic.store.hits import COLUMNS, Hit

# Named tuples, not dataclasses: the session-start hook reads them.
SessionSpan = namedtuple("SessionSpan", ["first", "last", "git_branch", "title"])
SessionSpan.__doc__ = "A session's first chunk start, last chunk end, branch and title."
EarlierSession = namedtuple("EarlierSession", ["id", "start_time", "title"])
EarlierSession.__doc__ = "A session that started before another one (from the sessions table)."

_NEWEST_FIRST = "ORDER BY start_time DESC, session_id DESC, agent_id DESC, offset DESC, part DESC"


def _time_filter(sql: str, args: list[object], since: str | None, until: str | None
                 ) -> tuple[str, list[object]]:
    if since:
        sql += " AND end_time >= ?"
        args.append(since)
    if until:
        sql += " AND start_time < ?"
        args.append(until)
    return sql, args


def session_in_project(conn: apsw.Connection, project: str, prefix: str) -> str | None:
    """A session of `project` whose id starts with `prefix` (any one), or None."""
    row = conn.execute(
        "SELECT session_id FROM chunks WHERE project = ? AND substr(session_id, 1, ?) = ?"
        " LIMIT 1", (project, len(prefix), prefix),
    ).fetchone()
    return row[0] if row else None


def session_start(conn: apsw.Connection, session_id: str | None) -> str | None:
    """The start time of the session's first chunk, or None."""
    return conn.execute(
        "SELECT min(start_time) FROM chunks WHERE session_id = ?", (session_id,)
    ).get  # an aggregate: one value


def start_range(conn: apsw.Connection, project: str | None) -> tuple[str, str] | None:
    """The oldest and newest chunk start times of `project` (of every project when None),
    or None when it has no chunks. Two index lookups (one aggregate each, so SQLite reads
    one end of the time index)."""
    where, args = ("WHERE project = ?", (project,)) if project else ("", ())
    row: tuple = conn.execute(  # scalar subqueries: always one row
        f"SELECT (SELECT min(start_time) FROM chunks {where}),"
        f" (SELECT max(start_time) FROM chunks {where})", args * 2).fetchone() or (None, None)
    return None if row[0] is None else (row[0], row[1])


def first_holding(conn: apsw.Connection, periods: list[tuple[str, str]], project: str | None
                  ) -> tuple[str, str] | None:
    """The first of `periods` (``[start, end)`` stored times) in which a chunk of `project`
    (of any project when None) starts, or None; one index lookup per period tried."""
    sql = "SELECT 1 FROM chunks WHERE start_time >= ? AND start_time < ?"
    if project:
        sql += " AND project = ?"
    for start, end in periods:
        if conn.execute(sql + " LIMIT 1", (start, end, project) if project else (start, end)
                        ).fetchone():
            return start, end
    return None


def latest_session_before(conn: apsw.Connection, project: str, other_than: str,
                          started_before: str | None) -> str | None:
    """The session of `project` (not `other_than`) with the latest chunk starting before
    `started_before` (any time when None)."""
    sql = "SELECT session_id FROM chunks WHERE project = ? AND session_id != ?"
    args: list[object] = [project, other_than]
    if started_before is not None:
        sql += " AND start_time < ?"
        args.append(started_before)
    row = conn.execute(sql + " ORDER BY start_time DESC LIMIT 1", args).fetchone()
    return row[0] if row else None


def newest_session(conn: apsw.Connection, project: str, *, exclude: str | None,
                   since: str | None, until: str | None) -> str | None:
    """The session holding the project's newest chunk in the time range, skipping sessions
    whose id starts with `exclude`."""
    sql = "SELECT session_id FROM chunks WHERE project = ?"
    args: list[object] = [project]
    if exclude:
        sql += " AND substr(session_id, 1, ?) != ?"
        args += [len(exclude), exclude]
    sql, args = _time_filter(sql, args, since, until)
    row = conn.execute(sql + " ORDER BY start_time DESC LIMIT 1", args).fetchone()
    return row[0] if row else None


def newest_chunks(conn: apsw.Connection, project: str, *, session: str | None, main_only: bool,
                  since: str | None, until: str | None) -> Iterator[Hit]:
    """The project's (or one session's) chunks newest first as `Hit`s (sources "timeline"),
    read lazily; `main_only` skips sub-agent chunks."""
    sql = f"SELECT {COLUMNS} FROM chunks WHERE project = ?"
    args: list[object] = [project]
    if session:
        sql += " AND session_id = ?"
        args.append(session)
    if main_only:
        sql += " AND agent_id = ''"
    sql, args = _time_filter(sql, args, since, until)
    for row in conn.execute(f"{sql} {_NEWEST_FIRST}", args):
        yield Hit(row[0], row[1], row[2], row[3], row[4], row[5], 0.0, ("timeline",), row[6],
                  row[7])


def count_chunks(conn: apsw.Connection, project: str, *, session: str | None,
                 since: str | None, until: str | None) -> int:
    """How many chunks `newest_chunks` would read (main and sub-agent)."""
    sql = "SELECT count(*) FROM chunks WHERE project = ?"
    args: list[object] = [project]
    if session:
        sql += " AND session_id = ?"
        args.append(session)
    sql, args = _time_filter(sql, args, since, until)
    return int(conn.execute(sql, args).get)


def newest_session_in(conn: apsw.Connection, project: str, checkout: str, *,
                      exclude: str | None, since: str | None, until: str | None) -> str | None:
    """The project's latest-ending session with chunks that worked in the working tree
    `checkout` and overlaps the time range, skipping sessions whose id starts with
    `exclude`. From the sessions table: a checkout last used long ago costs no walk through
    the project's newer chunks."""
    sql = ("SELECT s.id FROM sessions s WHERE s.project = ? AND s.checkout = ?"
           " AND EXISTS (SELECT 1 FROM chunks c WHERE c.session_id = s.id)")
    args: list[object] = [project, checkout]
    if exclude:
        sql += " AND substr(s.id, 1, ?) != ?"
        args += [len(exclude), exclude]
    sql, args = _time_filter(sql, args, since, until)  # the session's own times
    row = conn.execute(sql + " ORDER BY s.end_time DESC LIMIT 1", args).fetchone()
    return row[0] if row else None


def checkout_of(conn: apsw.Connection, session_id: str) -> str | None:
    """The working tree the session worked in (`sessions.checkout`), or None if unknown."""
    row = conn.execute("SELECT checkout FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return row[0] if row else None


def session_span(conn: apsw.Connection, session_id: str) -> SessionSpan:
    """When the session's chunks start and end, and its branch and title (None if unknown)."""
    row: tuple = conn.execute(
        "SELECT min(c.start_time), max(c.end_time), s.git_branch, s.title FROM chunks c"
        " LEFT JOIN sessions s ON s.id = c.session_id WHERE c.session_id = ?",
        (session_id,),
    ).fetchone() or (None, None, None, None)  # an aggregate: always one row
    return SessionSpan(*row)


def earlier_sessions(conn: apsw.Connection, project: str, before: str, exclude: str,
                     limit: int = 2) -> list[EarlierSession]:
    """The project's sessions with chunks that started before `before`, newest first."""
    return [EarlierSession(*row) for row in conn.execute(
        # the sessions table's index, not a scan of the project's chunks
        "SELECT s.id, s.start_time, s.title FROM sessions s"
        " WHERE s.project = ? AND s.start_time < ? AND s.id != ?"
        " AND EXISTS (SELECT 1 FROM chunks c WHERE c.session_id = s.id)"
        f" ORDER BY s.start_time DESC LIMIT {int(limit)}",
        (project, before, exclude),
    )]


def first_prompt(conn: apsw.Connection, session_id: str) -> str | None:
    """What the session set out to do: the first main-stream prompt that is no slash command."""
    row = conn.execute(
        "SELECT json_extract(meta, '$.prompt') FROM chunks WHERE session_id = ?"
        " AND agent_id = '' AND kind = 'turn' AND json_extract(meta, '$.prompt') IS NOT NULL"
        " AND json_extract(meta, '$.prompt') NOT LIKE '/%'"
        " ORDER BY offset, part LIMIT 1",
        (session_id,),
    ).fetchone()
    return row[0] if row else None

"""Sessions a connection does not see (`[memory] scope = "worktree"`, `retrieval.scope`).

`hide_sessions` shadows each table that holds a session's memory with a TEMP view of the same
name that leaves those sessions out. SQLite resolves an unqualified name in the temp schema
first, so every query of this connection (search, chains, timelines, briefings, lessons,
memories, topics) reads the narrowed rows with no change to its SQL, and a code path
added later cannot forget the filter. The views are simple enough for SQLite to flatten: the
tables' indexes are used as before. Full-text and vector indexes hand back row ids that are
then read through these views, so hidden rows drop out there too. Nothing is written: TEMP
objects live in the connection alone (a read-only one too) and end with it. A write through a
narrowed connection to a shadowed table fails ("cannot modify chunks because it is a view"),
except the few a narrowed `forget` makes, which name the `main.` table (it deletes only what
its narrowed reads selected), and `VACUUM`, which needs every table whole (`show_all`).
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

from causantic.store.sql import table_exists

_HIDDEN = "SELECT id FROM temp.hidden_sessions"
#: Each shadowed table -> which of its rows stay. A row of one session's memory stays unless
#: that session is hidden; a topic stays unless one of its chunks is hidden (its name and
#: terms may come from that work, as `scope = "project"` hides a topic shared with another
#: project).
SHADOWED = {
    "chunks": f"session_id NOT IN ({_HIDDEN})",
    "sessions": f"id NOT IN ({_HIDDEN})",
    "session_state": f"session_id NOT IN ({_HIDDEN})",
    "lessons": f"session_id NOT IN ({_HIDDEN})",
    "memories": f"session_id IS NULL OR session_id NOT IN ({_HIDDEN})",
    "topics": ("id NOT IN (SELECT m.topic_id FROM main.topic_members m JOIN main.chunks c"
               f" ON c.rowid = m.chunk_rowid WHERE c.session_id IN ({_HIDDEN}))"),
}


def hide_sessions(conn: apsw.Connection, session_ids: Iterable[str]) -> int:
    """Leave these sessions out of everything this connection reads; returns how many.
    Calling it again adds to the hidden set."""
    ids = sorted(set(session_ids))
    if not ids:
        return 0
    with conn:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS hidden_sessions"
                     "(id TEXT PRIMARY KEY) WITHOUT ROWID")
        conn.executemany("INSERT OR IGNORE INTO temp.hidden_sessions VALUES (?)",
                         [(i,) for i in ids])
        for table, kept in SHADOWED.items():
            if table_exists(conn, table):  # a read-only store of an older schema
                conn.execute(f"CREATE TEMP VIEW IF NOT EXISTS {table} AS"
                             f" SELECT * FROM main.{table} WHERE {kept}")
    return len(ids)


def show_all(conn: apsw.Connection) -> None:
    """Undo `hide_sessions`: this connection reads every table whole again."""
    with conn:
        for table in SHADOWED:
            conn.execute(f"DROP VIEW IF EXISTS temp.{table}")
        conn.execute("DROP TABLE IF EXISTS temp.hidden_sessions")


def hidden_sessions(conn: apsw.Connection) -> list[str]:
    """The sessions `hide_sessions` left out of this connection ([] when none)."""
    try:
        return [r[0] for r in conn.execute("SELECT id FROM temp.hidden_sessions ORDER BY id")]
    except apsw.SQLError:  # never narrowed: no such table
        return []


def is_hidden(conn: apsw.Connection, prefix: str) -> bool:
    """Whether a session `hide_sessions` left out of this connection has an id starting with
    `prefix`."""
    try:
        return conn.execute("SELECT 1 FROM temp.hidden_sessions WHERE id >= ? AND id < ?"
                            " || char(1114111) LIMIT 1", (prefix, prefix)).fetchone() is not None
    except apsw.SQLError:  # never narrowed: no such table
        return False


def linked_worktree_sessions(conn: apsw.Connection, project: str) -> dict[str, list[str]]:
    """The project's sessions worked in a linked worktree, by that worktree's folder: those
    whose checkout is known and is not the folder the project is named from (its main
    checkout)."""
    out: dict[str, list[str]] = {}
    for sid, checkout in conn.execute(
            "SELECT id, checkout FROM main.sessions WHERE project = ? AND checkout IS NOT NULL"
            " AND checkout != '' AND checkout != coalesce(project_path, '')", (project,)):
        out.setdefault(checkout, []).append(sid)
    return out

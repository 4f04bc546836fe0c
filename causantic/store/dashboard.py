"""Read-only queries behind `causantic dashboard`: growth, lanes, one session's graph, and
whatever rows the optional tables (memories, lessons) hold. Nothing here writes."""

from __future__ import annotations

import json

import apsw

from causantic.store.sql import select_in, table_exists

#: Most rows an optional table's view shows (newest first by rowid).
OPTIONAL_ROWS = 200


def weekly_growth(conn: apsw.Connection) -> list[dict[str, object]]:
    """Per ISO week (Monday's date) of chunk start times: new sessions, chunks, redactions."""
    rows = conn.execute(
        "WITH firsts AS (SELECT session_id, min(start_time) AS t FROM chunks GROUP BY session_id)"
        " SELECT week, sum(sessions), sum(chunks), sum(redactions) FROM ("
        "  SELECT date(substr(start_time, 1, 10), '-6 days', 'weekday 1') AS week,"
        "         0 AS sessions, 1 AS chunks, redactions FROM chunks"
        "  UNION ALL SELECT date(substr(t, 1, 10), '-6 days', 'weekday 1'), 1, 0, 0 FROM firsts"
        " ) WHERE week IS NOT NULL GROUP BY week ORDER BY week"
    ).fetchall()
    return [{"week": w, "sessions": s, "chunks": c, "redactions": r} for w, s, c, r in rows]


def redactions_by_project(conn: apsw.Connection) -> dict[str, int]:
    """Secrets redacted per project (projects without any left out)."""
    return dict(conn.execute(
        "SELECT project, sum(redactions) FROM chunks GROUP BY project HAVING sum(redactions) > 0"
        " ORDER BY 2 DESC"
    ))


def session_lanes(conn: apsw.Connection, project: str | None = None) -> list[dict[str, object]]:
    """Every session with chunks, grouped by project: id, title, span, chunk count."""
    rows = conn.execute(
        "SELECT c.project, c.session_id, min(c.start_time), max(c.end_time), count(*),"
        " sum(c.agent_id != ''), s.title, s.git_branch FROM chunks c"
        " LEFT JOIN sessions s ON s.id = c.session_id"
        " WHERE (:project IS NULL OR c.project = :project)"
        " GROUP BY c.project, c.session_id ORDER BY c.project, min(c.start_time)",
        {"project": project},
    ).fetchall()
    return [
        {"project": p, "session_id": sid, "start_time": start, "end_time": end, "chunks": n,
         "subagent_chunks": sub, "title": title, "git_branch": branch}
        for p, sid, start, end, n, sub, title, branch in rows
    ]


def session_graph(conn: apsw.Connection, session_id: str) -> dict[str, object]:
    """A session's chunks in stream order and every edge touching them (other sessions' ends
    of `continues` edges are listed by id, project and time)."""
    chunks = [
        {"id": cid, "agent_id": agent, "turn": turn, "part": part, "kind": kind,
         "start_time": start, "end_time": end, "tokens": tokens, "redactions": red,
         "text": text}
        for cid, agent, turn, part, kind, start, end, tokens, red, text in conn.execute(
            "SELECT id, agent_id, turn, part, kind, start_time, end_time, tokens, redactions, text"
            " FROM chunks WHERE session_id = ? ORDER BY start_time, agent_id, offset, part",
            (session_id,),
        )
    ]
    edges = [
        {"src": s, "dst": d, "kind": k, "weight": w}
        for s, d, k, w in conn.execute(
            "SELECT src, dst, kind, weight FROM edges WHERE src IN"
            " (SELECT id FROM chunks WHERE session_id = :s) OR dst IN"
            " (SELECT id FROM chunks WHERE session_id = :s) ORDER BY kind, src, dst",
            {"s": session_id},
        )
    ]
    ids = {c["id"] for c in chunks}
    outside = sorted(({e["src"] for e in edges} | {e["dst"] for e in edges}) - ids)
    others = [
        {"id": cid, "session_id": sid, "project": proj, "start_time": start}
        for cid, sid, proj, start in select_in(
            conn, "SELECT id, session_id, project, start_time FROM chunks WHERE id IN ({marks})",
            outside,
        )
    ]
    row = conn.execute("SELECT project, title, git_branch, cwd FROM sessions WHERE id = ?",
                       (session_id,)).fetchone()
    info = dict(zip(("project", "title", "git_branch", "cwd"), row, strict=True)) if row else {}
    return {"session_id": session_id, **info, "chunks": chunks, "edges": edges,
            "linked": others}


def optional_table(conn: apsw.Connection, name: str) -> dict[str, object]:
    """The newest rows of a table another feature may add; `available` False when absent.

    Column names and values are returned as they are (BLOBs as their size), so the view
    works whatever the table's schema turns out to be.
    """
    if not table_exists(conn, name):
        return {"table": name, "available": False, "columns": [], "rows": [], "total": 0}
    quoted = '"' + name.replace('"', '""') + '"'
    try:
        cursor = conn.execute(f"SELECT * FROM {quoted} ORDER BY rowid DESC LIMIT {OPTIONAL_ROWS}")
    except apsw.SQLError:  # a WITHOUT ROWID table
        cursor = conn.execute(f"SELECT * FROM {quoted} LIMIT {OPTIONAL_ROWS}")
    rows = cursor.fetchall()
    cols = [r[1] for r in conn.execute(f"PRAGMA table_info({quoted})")]
    total = conn.execute(f"SELECT count(*) FROM {quoted}").get
    return {"table": name, "available": True, "columns": cols, "total": total,
            "rows": [[f"<{len(v)} bytes>" if isinstance(v, bytes) else v for v in r]
                     for r in rows]}


def chunk_meta(conn: apsw.Connection, chunk_id: str) -> dict[str, object] | None:
    """One chunk's full text and metadata."""
    row = conn.execute(
        "SELECT id, session_id, project, agent_id, kind, start_time, end_time, tokens, text, meta"
        " FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    if row is None:
        return None
    keys = ("id", "session_id", "project", "agent_id", "kind", "start_time", "end_time",
            "tokens", "text")
    return {**dict(zip(keys, row[:9], strict=True)), "meta": json.loads(row[9] or "{}")}

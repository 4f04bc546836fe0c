"""The chunks table: inserting, replacing a file's tail, reading streams back."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import apsw

from causantic.chunk import Chunk
from causantic.store.counts import existing_ids
from causantic.store.sql import execute_in, select_in


@dataclass(frozen=True)
class StreamChunk:
    """The columns the linker needs to order and gate a stream."""

    id: str
    agent_id: str
    offset: int
    part: int
    start_time: str
    end_time: str
    kind: str
    meta: str


def insert_chunks(
    conn: apsw.Connection, chunks: Sequence[Chunk], projects: dict[str, str], file_id: int | None
) -> int:
    """Insert chunks not already stored (same id) and not forgotten; return how many were new."""
    if not chunks:
        return 0
    forgotten = forgotten_keys(conn, "chunk", [c.id for c in chunks])
    forgotten_sessions = forgotten_keys(conn, "session", list({c.session_id for c in chunks}))
    rows = [
        c for c in chunks if c.id not in forgotten and c.session_id not in forgotten_sessions
    ]
    present = existing_ids(conn, [c.id for c in rows])
    if present and file_id is not None:
        # Chunks imported from an export have no file: the transcript that holds them adopts
        # them, so a later re-read of its tail replaces them like any other chunk of it.
        conn.executemany("UPDATE chunks SET file_id = ? WHERE id = ? AND file_id IS NULL",
                         [(file_id, cid) for cid in present])
    rows = [c for c in rows if c.id not in present]
    conn.executemany(
        "INSERT OR IGNORE INTO chunks(id, session_id, project, agent_id, file_id, offset, part,"
        " turn, kind, start_time, end_time, text, tokens, redactions, meta)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                c.id,
                c.session_id,
                projects.get(c.session_id, "unknown"),
                c.agent_id,
                file_id,
                c.offset,
                c.part,
                c.turn,
                c.kind,
                c.start_time,
                c.end_time,
                c.text,
                c.tokens,
                c.redactions,
                c.meta_json(),
            )
            for c in rows
        ],
    )
    return len({c.id for c in rows})


def adopt_project(conn: apsw.Connection, session_id: str, project: str) -> int:
    """Give a session's chunks stored under project 'unknown' (read before anything named the
    session's folder) the project it now has; return how many changed. Their vectors and
    topic memberships are dropped by the update triggers, so the next embed files them under
    the new project."""
    conn.execute("UPDATE chunks SET project = ? WHERE session_id = ? AND project = 'unknown'",
                 (project, session_id))
    return conn.changes()


def delete_from(conn: apsw.Connection, file_id: int, offset: int) -> int:
    """Delete the chunks read from a file at or after a byte offset (edges cascade).

    Their vectors go in the same transaction (call this inside one): see
    `causantic.store.vectors.drop_chunk_vectors`.
    """
    rowids = [
        r[0]
        for r in conn.execute(
            "SELECT rowid FROM chunks WHERE file_id = ? AND offset >= ?", (file_id, offset)
        )
    ]
    if rowids:
        # deferred: heavy: pulls numpy, only needed here
        from causantic.store.vectors import drop_chunk_vectors

        drop_chunk_vectors(conn, rowids)
        conn.execute("DELETE FROM chunks WHERE file_id = ? AND offset >= ?", (file_id, offset))
    return len(rowids)


class SelectedChunk(NamedTuple):
    """A chunk picked by `select_chunks` (what `forget` previews and deletes)."""

    rowid: int
    id: str
    session_id: str
    project: str
    start_time: str
    text: str


def select_chunks(
    conn: apsw.Connection,
    project: str | None = None,
    session_id: str | None = None,
    after: str | None = None,
    before: str | None = None,
) -> list[SelectedChunk]:
    """The chunks meeting every given criterion (start time at or after `after`, before
    `before`), oldest first; with no criterion, every chunk."""
    sql = "SELECT rowid, id, session_id, project, start_time, text FROM chunks WHERE 1"
    args: list[object] = []
    for clause, value in (("project = ?", project), ("session_id = ?", session_id),
                          ("start_time >= ?", after), ("start_time < ?", before)):
        if value:
            sql += f" AND {clause}"
            args.append(value)
    sql += " ORDER BY start_time, rowid"
    return [SelectedChunk(*row) for row in conn.execute(sql, args)]


def delete_rowids(conn: apsw.Connection, rowids: Sequence[int]) -> None:
    """Delete these chunks (FTS entries, edges, memberships and states go by trigger or
    cascade; drop their vectors first, in the same transaction). `main.`: a connection
    narrowed to a worktree (`store.visibility`) forgets what it sees, through its views."""
    execute_in(conn, "DELETE FROM main.chunks WHERE rowid IN ({marks})", rowids)


def session_chunks(conn: apsw.Connection, session_id: str) -> list[StreamChunk]:
    """All chunks of a session (every stream), ordered by stream then position."""
    return [
        StreamChunk(*row)
        for row in conn.execute(
            "SELECT id, agent_id, offset, part, start_time, end_time, kind, meta FROM chunks"
            " WHERE session_id = ? ORDER BY agent_id, offset, part",
            (session_id,),
        )
    ]


def forgotten_keys(conn: apsw.Connection, scope: str, keys: Iterable[str]) -> set[str]:
    """Which of these keys (chunk or session ids) have a tombstone in `scope`."""
    return {
        row[0]
        for row in select_in(
            conn, "SELECT key FROM forgotten WHERE scope = ? AND key IN ({marks})", keys, before=(scope,)
        )
    }


# -- reading chunks back: counts, positions, summaries -------------------------------------


class ChunkPosition(NamedTuple):
    """Where a chunk sits: its session, stream (agent), turn, byte offset and part."""

    session_id: str
    agent_id: str
    turn: int
    offset: int
    part: int


class ChainNode(NamedTuple):
    """The columns the chain walk needs of a chunk."""

    id: str
    tokens: int
    session_id: str
    agent_id: str
    text: str


class ProjectSummary(NamedTuple):
    """A project with chunks: sessions, chunks, first start and last end."""

    project: str
    sessions: int
    chunks: int
    first: str
    last: str


class SessionSummary(NamedTuple):
    """A session of a project as its chunks and sessions row tell it."""

    session_id: str
    project: str
    start_time: str
    end_time: str
    chunks: int
    tokens: int
    title: str | None
    git_branch: str | None
    checkout: str | None  # the working tree it worked in (a linked worktree's folder)
    opening: str | None = None  # an untitled session's first prompt (`list_sessions`)

    def as_dict(self) -> dict[str, object]:
        """The JSON of `list-sessions` (the fields in this order)."""
        return dict(self._asdict())


def positions(conn: apsw.Connection, chunk_ids: Iterable[str]) -> dict[str, ChunkPosition]:
    """chunk id -> its position, for the chunks that are stored."""
    return {
        cid: ChunkPosition(sid, agent, turn, offset, part)
        for cid, sid, agent, turn, offset, part in select_in(
            conn, "SELECT id, session_id, agent_id, turn, offset, part FROM chunks"
            " WHERE id IN ({marks})", chunk_ids,
        )
    }


def turn_texts(conn: apsw.Connection, keys: Sequence[tuple[str, str, int]]
               ) -> Iterator[tuple[str, str, int, str, str]]:
    """(session, agent, turn, chunk id, text) of the chunks of these (session, agent, turn)
    turns, in stream order within each statement; one statement per `keys` given (the caller
    batches: every key binds three values)."""
    where = " OR ".join("(session_id = ? AND agent_id = ? AND turn = ?)" for _ in keys)
    yield from conn.execute(
        "SELECT session_id, agent_id, turn, id, text FROM chunks"
        f" WHERE {where} ORDER BY session_id, agent_id, offset, part",
        [v for k in keys for v in k],
    )


def chain_nodes(conn: apsw.Connection, chunk_ids: Sequence[str]) -> Iterator[ChainNode]:
    """The chain walk's columns of these chunks (those stored)."""
    for row in select_in(
        conn, "SELECT id, tokens, session_id, agent_id, text FROM chunks WHERE id IN ({marks})",
        chunk_ids,
    ):
        yield ChainNode(*row)


def stream_end(conn: apsw.Connection, session_id: str, first: bool, agent_id: str = "") -> str | None:
    """The first (or last) chunk of a session's stream (the main one by default), or None."""
    order = "ASC" if first else "DESC"
    row = conn.execute(
        f"SELECT id FROM chunks WHERE session_id = ? AND agent_id = ?"
        f" ORDER BY offset {order}, part {order} LIMIT 1",
        (session_id, agent_id),
    ).fetchone()
    return row[0] if row else None


def project_summaries(conn: apsw.Connection) -> list[ProjectSummary]:
    """Projects with at least one chunk, most recently active first."""
    return [
        ProjectSummary(*row)
        for row in conn.execute(
            "SELECT project, count(DISTINCT session_id), count(*), min(start_time), max(end_time)"
            " FROM chunks GROUP BY project ORDER BY max(end_time) DESC"
        )
    ]


def session_summaries(conn: apsw.Connection, project: str, *, ended_since: str | None,
                      limit: int) -> list[SessionSummary]:
    """A project's sessions, last active first; only those active at or after `ended_since`."""
    sql = (
        "SELECT c.session_id, c.project, min(c.start_time), max(c.end_time), count(*),"
        " sum(c.tokens), s.title, s.git_branch, s.checkout FROM chunks c LEFT JOIN sessions s"
        " ON s.id = c.session_id WHERE c.project = ?"
    )
    args: list[object] = [project]
    if ended_since is not None:
        sql += " AND c.end_time >= ?"
        args.append(ended_since)
    sql += " GROUP BY c.session_id ORDER BY max(c.end_time) DESC LIMIT ?"
    args.append(limit)
    return [SessionSummary(*row) for row in conn.execute(sql, args)]

"""The chunks table: inserting, replacing a file's tail, reading streams back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from causantic.chunk import Chunk
from causantic.store.sql import select_in


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
        from causantic.store.vectors import drop_chunk_vectors

        drop_chunk_vectors(conn, rowids)
        conn.execute("DELETE FROM chunks WHERE file_id = ? AND offset >= ?", (file_id, offset))
    return len(rowids)


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


def existing_ids(conn: apsw.Connection, ids: Sequence[str]) -> set[str]:
    """Which of these chunk ids are already stored."""
    return {r[0] for r in select_in(conn, "SELECT id FROM chunks WHERE id IN ({marks})", ids)}


def forgotten_keys(conn: apsw.Connection, scope: str, keys: Iterable[str]) -> set[str]:
    """Which of these keys (chunk or session ids) have a tombstone in `scope`."""
    return {
        row[0]
        for row in select_in(
            conn, "SELECT key FROM forgotten WHERE scope = ? AND key IN ({marks})", keys, before=(scope,)
        )
    }

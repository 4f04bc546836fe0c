"""Counts of everything stored, for `causantic stats` (DESIGN.md section 4)."""

from __future__ import annotations

from typing import Any, NamedTuple

import apsw

from causantic.store.schema import schema_version
from causantic.store.sql import table_exists


class StoredCounts(NamedTuple):
    """What memory holds; `clusters` counts non-empty topics, `vectors` chunks with vectors,
    `token_bits` those of them that also have the token rerank's bits."""

    sessions: int
    chunks: int
    edges: int
    vectors: int
    token_bits: int
    clusters: int
    projects: int
    subagent_chunks: int
    redactions: int
    files: int
    bad_lines: int
    forgotten: int
    first: str | None
    last: str | None
    edge_kinds: dict[str, int]
    schema_version: int
    bytes: int  # the database's size: pages times page size (its WAL's committed pages included)


def stored_counts(conn: apsw.Connection, project: str | None = None) -> StoredCounts:
    """Count sessions, chunks, edges, vectors (any model), topics, files and tombstones.

    With ``project``, what that project holds: its chunks and sessions, the edges leaving its
    chunks, their vectors, the topics they belong to and the transcript files of its
    sessions. Tombstones carry no project and the file's size is all projects', so both read
    0 then.
    """
    args: tuple[str, ...] = () if project is None else (project,)
    mine = "" if project is None else " WHERE c.project = ?"

    def one(sql: str) -> Any:
        # an aggregate or PRAGMA: one value; a query held to the project has one "?"
        return conn.execute(sql, args if "?" in sql else ()).get

    def per_chunk(table: str, key: str = "t.chunk_rowid = c.rowid") -> str:
        """``table`` (as t), held to the project's chunks when there is one."""
        return f"{table} t" if project is None else f"{table} t JOIN chunks c ON {key}{mine}"

    files = "files" if project is None else (
        "files WHERE session_id IN (SELECT id FROM sessions WHERE project = ?)")
    edges = per_chunk("edges", key="c.id = t.src")
    return StoredCounts(
        sessions=one(f"SELECT count(DISTINCT session_id) FROM chunks c{mine}"),
        chunks=one(f"SELECT count(*) FROM chunks c{mine}"),
        edges=one(f"SELECT count(*) FROM {edges}"),
        vectors=(int(one(f"SELECT count(*) FROM {per_chunk('chunk_vectors_meta')}"))
                 if table_exists(conn, "chunk_vectors_meta") else 0),
        token_bits=(int(one(f"SELECT count(*) FROM {per_chunk('chunk_token_bits')}"))
                    if table_exists(conn, "chunk_token_bits") else 0),
        clusters=(one(f"SELECT count(DISTINCT topic_id) FROM {per_chunk('topic_members')}")
                  if table_exists(conn, "topic_members") else 0),
        projects=one(f"SELECT count(DISTINCT project) FROM chunks c{mine}"),
        subagent_chunks=one("SELECT count(*) FROM chunks c WHERE agent_id != ''"
                            + ("" if project is None else " AND c.project = ?")),
        redactions=one(f"SELECT coalesce(sum(redactions), 0) FROM chunks c{mine}"),
        files=one(f"SELECT count(*) FROM {files}"),
        bad_lines=one(f"SELECT coalesce(sum(bad_lines), 0) FROM {files}"),
        forgotten=one("SELECT count(*) FROM forgotten") if project is None else 0,
        first=one(f"SELECT min(start_time) FROM chunks c{mine}"),
        last=one(f"SELECT max(end_time) FROM chunks c{mine}"),
        edge_kinds=dict(conn.execute(f"SELECT t.kind, count(*) FROM {edges} GROUP BY t.kind", args)),
        schema_version=schema_version(conn),
        bytes=(int(one("PRAGMA page_count")) * int(one("PRAGMA page_size"))
               if project is None else 0),
    )

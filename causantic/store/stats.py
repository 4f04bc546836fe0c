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


def stored_counts(conn: apsw.Connection) -> StoredCounts:
    """Count sessions, chunks, edges, vectors (any model), topics, files and tombstones."""
    def one(sql: str) -> Any:
        return conn.execute(sql).get  # an aggregate or PRAGMA: one value

    return StoredCounts(
        sessions=one("SELECT count(DISTINCT session_id) FROM chunks"),
        chunks=one("SELECT count(*) FROM chunks"),
        edges=one("SELECT count(*) FROM edges"),
        vectors=(int(one("SELECT count(*) FROM chunk_vectors_meta"))
                 if table_exists(conn, "chunk_vectors_meta") else 0),
        token_bits=(int(one("SELECT count(*) FROM chunk_token_bits"))
                    if table_exists(conn, "chunk_token_bits") else 0),
        clusters=(one("SELECT count(DISTINCT topic_id) FROM topic_members")
                  if table_exists(conn, "topic_members") else 0),
        projects=one("SELECT count(DISTINCT project) FROM chunks"),
        subagent_chunks=one("SELECT count(*) FROM chunks WHERE agent_id != ''"),
        redactions=one("SELECT coalesce(sum(redactions), 0) FROM chunks"),
        files=one("SELECT count(*) FROM files"),
        bad_lines=one("SELECT coalesce(sum(bad_lines), 0) FROM files"),
        forgotten=one("SELECT count(*) FROM forgotten"),
        first=one("SELECT min(start_time) FROM chunks"),
        last=one("SELECT max(end_time) FROM chunks"),
        edge_kinds=dict(conn.execute("SELECT kind, count(*) FROM edges GROUP BY kind")),
        schema_version=schema_version(conn),
        bytes=int(one("PRAGMA page_count")) * int(one("PRAGMA page_size")),
    )

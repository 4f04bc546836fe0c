"""SQL for `causantic export` / `import`: which tables travel, how rows are read and merged.

Table-driven: `TABLES` lists, in dependency order, every table holding what cannot be rebuilt
from the transcripts (or is expensive to). A table added by a later migration (memories,
feedback, lessons) travels by adding one `Table(...)` line; a table missing from the store
(an older schema, a branch not merged) is skipped on export and on import.

Invariants:
- Rows are written with `INSERT OR IGNORE` on the table's own key, so an existing row always
  wins and importing twice changes nothing. Chunk ids are content hashes, so the same chunk
  coming from two machines is one row.
- Local row ids never travel: a column that holds a `chunks.rowid` (`chunk_ref`) is written
  as the chunk's id and mapped back on import. `chunks.file_id` (a checkpoint) is not
  exported: imported chunks have none until an ingest of the same transcript adopts them
  (`store.chunks.insert_chunks`).
- A row whose reference is missing in the target (an edge to a chunk filtered out, a member
  of a topic not imported) is skipped and counted, never an error.
- A chunk the target has forgotten (chunk or session tombstone) is not brought back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import apsw

#: Rows of a chunk filter: `:project` and `:since` are NULL when not filtering.
_CHUNK = "(:project IS NULL OR {p}project = :project) AND (:since IS NULL OR {p}end_time >= :since)"
_FILTERED_CHUNKS = "SELECT {col} FROM chunks WHERE " + _CHUNK.format(p="")
_UNFILTERED = ":project IS NULL AND :since IS NULL"
#: Memories of the project (and those that apply to every project, project ''), seen since.
_MEMORY = ("(:project IS NULL OR project IN (:project, '')) AND (:since IS NULL OR "
           "last_seen_at >= :since)")


@dataclass(frozen=True)
class Table:
    """One exported table.

    name : the SQLite table.
    key : the columns that identify a row (its primary key or unique key).
    where : the export filter (named parameters `:project`, `:since`; NULL = no filter).
    skip : columns never exported (local ids, checkpoints).
    chunk_ref : a column holding a `chunks.rowid`; exported as `chunk_id`.
    guard : an SQL condition over the row's named values; the row is imported only if true.
    """

    name: str
    key: tuple[str, ...]
    where: str = "1"
    skip: tuple[str, ...] = ()
    chunk_ref: str | None = None
    guard: str = "1"


TABLES: tuple[Table, ...] = (
    Table("sessions", ("id",), where=_CHUNK.format(p="")),
    Table("chunks", ("id",), where=_CHUNK.format(p=""), skip=("rowid", "file_id"),
          guard="NOT EXISTS (SELECT 1 FROM forgotten WHERE (scope = 'chunk' AND key = :id)"
                " OR (scope = 'session' AND key = :session_id))"),
    # Edges whose two ends are both exported; EXISTS probes the chunks.id index per edge
    # (`src IN (SELECT ...)` was planned as a scan per edge: 15 s at 10,000 chunks).
    Table("edges", ("src", "dst", "kind"),
          where=f"EXISTS (SELECT 1 FROM chunks c WHERE c.id = t.src AND {_CHUNK.format(p='c.')})"
                f" AND EXISTS (SELECT 1 FROM chunks c WHERE c.id = t.dst"
                f" AND {_CHUNK.format(p='c.')})"),
    Table("session_state", ("session_id",), where=_CHUNK.format(p="")),
    Table("forgotten", ("scope", "key")),
    Table("topics", ("id",),
          where=f"{_UNFILTERED} OR id IN (SELECT topic_id FROM topic_members WHERE chunk_rowid IN"
                f" ({_FILTERED_CHUNKS.format(col='rowid')}))"),
    Table("topic_build", ("id",)),
    Table("topic_members", ("chunk_rowid",), chunk_ref="chunk_rowid",
          where=f"chunk_rowid IN ({_FILTERED_CHUNKS.format(col='rowid')})"),
    # Explicit memory: the memories (their helpful/harmful counts included), what they cite
    # and the feedback history. Vectors are recomputed by `embed`; marks are local progress.
    Table("memories", ("id",), where=_MEMORY, skip=("rowid",),
          guard="NOT EXISTS (SELECT 1 FROM forgotten WHERE scope = 'memory' AND key = :id)"),
    Table("memory_citations", ("memory_id", "chunk_id"),
          where=f"memory_id IN (SELECT id FROM memories WHERE {_MEMORY})"),
    Table("memory_feedback", ("memory_id", "created_at", "helpful"), skip=("id",),
          where=f"memory_id IN (SELECT id FROM memories WHERE {_MEMORY})",
          guard="NOT EXISTS (SELECT 1 FROM memory_feedback WHERE memory_id = :memory_id"
                " AND created_at = :created_at AND helpful = :helpful AND reason IS :reason)"),
)

VECTORS_META = "chunk_vectors_meta"


def columns(conn: apsw.Connection, table: str) -> list[str]:
    """The table's columns in declaration order."""
    return [r[1] for r in conn.execute(f"PRAGMA table_info({_ident(table)})")]


def read_rows(
    conn: apsw.Connection, table: Table, *, project: str | None, since: str | None
) -> Iterator[dict[str, object]]:
    """The exported rows of one table, in key order (values as SQLite returns them)."""
    cols = [c for c in columns(conn, table.name) if c not in table.skip]
    select = ", ".join(
        f"(SELECT id FROM chunks WHERE rowid = t.{c}) AS chunk_id" if c == table.chunk_ref
        else f"t.{_ident(c)}" for c in cols
    )
    names = ["chunk_id" if c == table.chunk_ref else c for c in cols]
    order = ", ".join(f"t.{_ident(k)}" for k in table.key)
    sql = f"SELECT {select} FROM {_ident(table.name)} t WHERE {table.where} ORDER BY {order}"
    for row in conn.execute(sql, {"project": project, "since": since}):
        yield dict(zip(names, row, strict=True))


@dataclass
class Merge:
    """What merging one table's rows did (or would do)."""

    added: int = 0
    present: int = 0  # already there (or forgotten there): the existing row was kept
    skipped: int = 0  # a reference it needs is missing in the target

    def as_dict(self) -> dict[str, int]:
        return {"added": self.added, "present": self.present, "skipped": self.skipped}


class Merger:
    """Inserts one table's rows into the target (call inside the caller's transaction)."""

    def __init__(self, conn: apsw.Connection, table: Table) -> None:
        self.conn = conn
        self.table = table
        self.target_columns = set(columns(conn, table.name))
        self.result = Merge()

    def add(self, row: Mapping[str, object]) -> None:
        values = dict(row)
        if self.table.chunk_ref:
            found = self.conn.execute(
                "SELECT rowid FROM chunks WHERE id = ?", (values.pop("chunk_id", None),)
            ).fetchone()
            if found is None:
                self.result.skipped += 1
                return
            values[self.table.chunk_ref] = found[0]
        cols = [c for c in values if c in self.target_columns and c not in self.table.skip]
        params = {f"v{i}": values[c] for i, c in enumerate(cols)}
        guard_params = {c: values.get(c) for c in _named(self.table.guard)}
        sql = (
            f"INSERT OR IGNORE INTO {_ident(self.table.name)}"
            f"({', '.join(_ident(c) for c in cols)}) SELECT {', '.join(':' + p for p in params)}"
            f" WHERE {self.table.guard}"
        )
        try:
            self.conn.execute(sql, {**params, **guard_params})
        except apsw.ConstraintError:  # a foreign key: what it points to is not in the target
            self.result.skipped += 1
            return
        if self.conn.changes():
            self.result.added += 1
        else:
            self.result.present += 1


def vector_rows(
    conn: apsw.Connection, *, project: str | None, since: str | None
) -> Iterator[tuple[str, str, str, str, list[bytes], bytes | None]]:
    """(chunk id, project, model id, embedded_at, window vectors, token bits or None) of every
    embedded exported chunk. Needs sqlite-vec loaded on `conn`."""
    # deferred: heavy: pulls numpy, only needed here
    from causantic.store.vectors import VEC_TABLE, WINDOW_SLOTS

    sql = (
        f"SELECT c.id, c.project, m.model_id, m.embedded_at, m.chunk_rowid, m.windows,"
        f" t.bits FROM chunks c JOIN {VECTORS_META} m ON m.chunk_rowid = c.rowid"
        " LEFT JOIN chunk_token_bits t ON t.chunk_rowid = m.chunk_rowid"
        f" WHERE {_CHUNK.format(p='c.')} ORDER BY c.id"
    )
    rows: list[tuple] = conn.execute(sql, {"project": project, "since": since}).fetchall()
    for cid, proj, model, when, rowid, windows, token_bits in rows:
        base = rowid * WINDOW_SLOTS
        vectors = [  # every window row of a stored chunk exists (written in one transaction)
            conn.execute(f"SELECT embedding FROM {VEC_TABLE} WHERE rowid = ?", (base + w,))
            .fetchone()[0]  # type: ignore[index]
            for w in range(windows)
        ]
        yield cid, proj, model, when, vectors, token_bits


def chunk_for_vectors(conn: apsw.Connection, chunk_id: str) -> tuple[int, str, str | None] | None:
    """(rowid, project, model id of its stored vectors or None) of a chunk, or None."""
    row = conn.execute(
        f"SELECT c.rowid, c.project, m.model_id FROM chunks c LEFT JOIN {VECTORS_META} m"
        " ON m.chunk_rowid = c.rowid WHERE c.id = ?",
        (chunk_id,),
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def set_embedded_at(conn: apsw.Connection, rowid: int, when: str) -> None:
    """Keep the original embedding time of an imported vector."""
    conn.execute(f"UPDATE {VECTORS_META} SET embedded_at = ? WHERE chunk_rowid = ?", (when, rowid))


@contextmanager
def read_snapshot(conn: apsw.Connection) -> Iterator[None]:
    """One read transaction around the block: every read inside sees the same snapshot."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def topic_name(conn: apsw.Connection, topic_id: object) -> str | None:
    """The name of the topic with this id in the target, or None when there is none."""
    found = conn.execute("SELECT name FROM topics WHERE id = ?", (topic_id,)).fetchone()
    return None if found is None else found[0]


def _named(sql: str) -> list[str]:

    return re.findall(r":([A-Za-z_]\w*)", sql)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def copy_database(source: Path, target: Path) -> None:
    """Copy a database file with SQLite's backup API (a consistent snapshot, WAL included)."""
    src = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
    dst = apsw.Connection(str(target))
    try:
        with dst.backup("main", src, "main") as b:
            while not b.done:
                b.step(1000)
    finally:
        dst.close()
        src.close()


def mark_source(conn: apsw.Connection, path_prefix: str, source: str) -> int:
    """Record `source` in the meta of chunks read from files under `path_prefix` (those not
    marked yet); return how many were marked."""
    conn.execute(
        "UPDATE chunks SET meta = json_set(meta, '$.source', ?) WHERE file_id IN"
        " (SELECT id FROM files WHERE substr(path, 1, length(?)) = ?)"
        " AND json_extract(meta, '$.source') IS NULL",
        (source, path_prefix, path_prefix),
    )
    return conn.changes()

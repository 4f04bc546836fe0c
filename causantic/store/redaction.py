"""SQL of `causantic redact --rescan`: stored texts read in batches and written back.

Every function reads or writes one small batch, so the caller keeps write transactions short
(other processes read and ingest meanwhile). A write is compare-and-set on the old value: a
row another process changed in between is left alone (it was written by a current redactor).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import apsw

from causantic.store.db import BUSY_TIMEOUT_MS
from causantic.store.sql import table_exists
from causantic.store.visibility import show_all

META = "redaction_meta"


def rules_version(conn: apsw.Connection) -> int:
    """The redaction rules the stored text went through (0: older than any recorded)."""
    if not table_exists(conn, META):
        return 0
    row = conn.execute(f"SELECT value FROM {META} WHERE key = 'rules'").fetchone()
    return int(row[0]) if row and str(row[0]).isdigit() else 0


def set_rules_version(conn: apsw.Connection, version: int) -> None:
    conn.execute(
        f"INSERT INTO {META}(key, value) VALUES ('rules', ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (str(version),),
    )


def chunk_batch(conn: apsw.Connection, after: int, limit: int) -> list[tuple[int, str, str, str]]:
    """(rowid, session_id, text, meta) of the next chunks after a rowid."""
    return [
        (int(r[0]), r[1], r[2], r[3])
        for r in conn.execute(
            "SELECT rowid, session_id, text, meta FROM chunks WHERE rowid > ? ORDER BY rowid"
            " LIMIT ?",
            (after, limit),
        )
    ]


def update_chunk(
    conn: apsw.Connection, rowid: int, old_text: str, text: str, meta: str, added: int
) -> bool:
    """Write a chunk's redacted text and meta if its text is still ``old_text``.

    The text triggers update the FTS index and drop the chunk's vector meta and topic
    membership; the caller drops its vec0 rows in the same transaction.
    """
    before = conn.total_changes()
    conn.execute(
        "UPDATE chunks SET text = ?, meta = ?, redactions = redactions + ?"
        " WHERE rowid = ? AND text = ?",
        (text, meta, added, rowid, old_text),
    )
    return conn.total_changes() > before


def update_chunk_meta(conn: apsw.Connection, rowid: int, old_meta: str, meta: str) -> bool:
    """Write a chunk's redacted meta (text unchanged: its vector stays valid)."""
    before = conn.total_changes()
    conn.execute(
        "UPDATE chunks SET meta = ? WHERE rowid = ? AND meta = ?", (meta, rowid, old_meta)
    )
    return conn.total_changes() > before


_SESSION_TEXT = ("title", "cwd", "git_branch", "project_path")


def session_rows(conn: apsw.Connection) -> list[tuple[str, ...]]:
    """(id, title, cwd, git_branch, project_path) of every session."""
    return [tuple(r) for r in conn.execute(f"SELECT id, {', '.join(_SESSION_TEXT)} FROM sessions")]


def update_session(conn: apsw.Connection, old: Sequence[str | None], new: Sequence[str | None]) -> None:
    """Write a session's redacted texts; ``old``/``new`` are rows of `session_rows`."""
    sets = ", ".join(f"{c} = ?" for c in _SESSION_TEXT)
    conn.execute(
        f"UPDATE sessions SET {sets} WHERE id = ?"
        + "".join(f" AND {c} IS ?" for c in _SESSION_TEXT),
        (*new[1:], old[0], *old[1:]),
    )


def state_rows(conn: apsw.Connection) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in conn.execute("SELECT session_id, state FROM session_state")]


def update_state(conn: apsw.Connection, session_id: str, old: str, new: str) -> None:
    conn.execute(
        "UPDATE session_state SET state = ? WHERE session_id = ? AND state = ?",
        (new, session_id, old),
    )


def topic_rows(conn: apsw.Connection) -> list[tuple[int, str, str]]:
    return [(int(r[0]), r[1], r[2]) for r in conn.execute("SELECT id, name, terms FROM topics")]


def update_topic(conn: apsw.Connection, topic_id: int, old: tuple[str, str], new: tuple[str, str]) -> None:
    conn.execute(
        "UPDATE topics SET name = ?, terms = ? WHERE id = ? AND name = ? AND terms = ?",
        (*new, topic_id, *old),
    )


def forgotten_reasons(conn: apsw.Connection) -> list[tuple[str, str, str]]:
    return [
        (r[0], r[1], r[2])
        for r in conn.execute("SELECT scope, key, reason FROM forgotten WHERE reason IS NOT NULL")
    ]


def update_reason(conn: apsw.Connection, scope: str, key: str, old: str, new: str) -> None:
    conn.execute(
        "UPDATE forgotten SET reason = ? WHERE scope = ? AND key = ? AND reason = ?",
        (new, scope, key, old),
    )


def memory_rows(conn: apsw.Connection) -> list[tuple[int, str, str]]:
    """(rowid, text, meta) of every remembered observation (none before explicit memory)."""
    if not table_exists(conn, "memories"):
        return []
    return list(conn.execute("SELECT rowid, text, meta FROM memories"))


def update_memory(conn: apsw.Connection, rowid: int, old: tuple[str, str],
                  new: tuple[str, str]) -> None:
    """New text and meta (triggers refresh its FTS row and drop its vector)."""
    conn.execute("UPDATE memories SET text = ?, meta = ? WHERE rowid = ? AND text = ? AND meta = ?",
                 (*new, rowid, *old))


def feedback_reasons(conn: apsw.Connection) -> list[tuple[int, str]]:
    """(id, reason) of the feedback given on memories, where a reason was given."""
    if not table_exists(conn, "memory_feedback"):
        return []
    return list(conn.execute("SELECT id, reason FROM memory_feedback WHERE reason != ''"))


def update_feedback_reason(conn: apsw.Connection, feedback_id: int, old: str, new: str) -> None:
    conn.execute("UPDATE memory_feedback SET reason = ? WHERE id = ? AND reason = ?",
                 (new, feedback_id, old))


def secure_delete_on(conn: apsw.Connection) -> None:
    """SQLite's secure_delete for this connection: deleted content is overwritten with zeros."""
    conn.execute("PRAGMA secure_delete = ON")


def fts_secure_delete(conn: apsw.Connection, on: bool) -> None:
    """FTS5's secure-delete: a deleted row's terms leave the index itself, not only its
    tombstone, so an old token cannot be read back from the index pages."""
    for fts in _fts_tables(conn):
        conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('secure-delete', ?)", (int(on),))


def fts_optimize(conn: apsw.Connection) -> None:
    """Merge the FTS index into one segment, dropping entries of rows deleted before
    secure-delete was on (an incremental re-read replaces chunks; their old terms stay in the
    older segments until a merge)."""
    for fts in _fts_tables(conn):
        conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")


def _fts_tables(conn: apsw.Connection) -> list[str]:
    """The full-text indexes that hold stored text: chunks, and memories and lessons if any."""
    return [name for name in ("chunks_fts", "memories_fts", "lessons_fts") if table_exists(conn, name)]


@contextmanager
def for_good(conn: apsw.Connection, notes: list[str], *, skip: bool = False) -> Iterator[None]:
    """Deletes made inside leave nothing behind in the file (`forget`).

    SQLite overwrites deleted content with zeros and the full-text indexes drop a deleted
    row's terms (not only mark them); then the file is rewritten from its live rows
    (`VACUUM`: a page a delete turned from a leaf into an interior page keeps old rows in
    its unused part) and the WAL, which still holds the old pages, is emptied. VACUUM takes
    about 8 s per GB and needs room for a copy; when another process is writing, or the disk
    is full, it is skipped and ``notes`` says so (the deletes stand).
    ``skip``: nothing will be deleted (a preview), so do none of it.
    """
    if skip:
        yield
        return
    secure_delete_on(conn)
    with conn:
        fts_secure_delete(conn, True)
    try:
        yield
    finally:
        try:
            with conn:  # left on if this cannot write: later deletes are only slower
                fts_secure_delete(conn, False)
            vacuum(conn)
        except (apsw.BusyError, apsw.FullError) as exc:  # the deletes stand either way
            why = ("another process was writing" if isinstance(exc, apsw.BusyError)
                   else "the disk has no room for a rewritten copy")
            notes.append(f"{why}, so the file was not rewritten: parts of the forgotten text "
                         "may stay in its unused space until `causantic redact --rescan` "
                         "rewrites it")
        if checkpoint(conn)[0]:
            notes.append("another process kept the WAL open; the old pages leave it at its "
                         "next checkpoint")


def vacuum(conn: apsw.Connection) -> None:
    """Rewrite the file from its live rows: text deleted before secure_delete was on can
    linger in unused parts of pages (a leaf page reused as an interior page keeps it).
    A connection narrowed to a worktree sees every table again first: VACUUM refuses TEMP
    views named like the tables it rebuilds."""
    show_all(conn)
    conn.execute("VACUUM")


def checkpoint(conn: apsw.Connection, wait_ms: int = 1000) -> tuple[int, int, int]:
    """Copy the WAL into the database file and empty it (busy, pages in WAL, pages copied).

    A reader in the middle of a transaction keeps it from finishing; waiting for it at most
    ``wait_ms`` is enough, the next checkpoint of any process finishes the job.
    """

    conn.set_busy_timeout(wait_ms)
    try:
        row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    return (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)

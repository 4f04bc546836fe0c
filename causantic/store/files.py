"""Per-file checkpoints: what was read from each transcript file, and where to resume."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

from causantic.store.sql import select_in


@dataclass(frozen=True)
class Checkpoint:
    """The stored state of one transcript file."""

    id: int
    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    head_hash: str
    complete_offset: int
    resume_offset: int
    resume_state: dict[str, Any] = field(default_factory=dict)

    def same_stat(self, dev: int, ino: int, size: int, mtime_ns: int) -> bool:
        return (self.dev, self.ino, self.size, self.mtime_ns) == (dev, ino, size, mtime_ns)


def ingested_sizes(conn: apsw.Connection) -> dict[str, int]:
    """Every transcript file read so far -> its size when last read."""
    return dict(conn.execute("SELECT path, size FROM files"))


def session_paths(conn: apsw.Connection, session_ids: Sequence[str]) -> list[str]:
    """The main transcript files read for these sessions (sub-agent files left out)."""
    return sorted(p for (p,) in select_in(
        conn, "SELECT path FROM files WHERE kind = 'session' AND session_id IN ({marks})",
        list(session_ids)))


def get_checkpoint(conn: apsw.Connection, path: str) -> Checkpoint | None:
    row = conn.execute(
        "SELECT id, path, dev, ino, size, mtime_ns, head_hash, complete_offset, resume_offset,"
        " resume_state FROM files WHERE path = ?",
        (path,),
    ).fetchone()
    if row is None:
        return None
    # mypy cannot tell that row[:9] fills exactly the first nine fields
    return Checkpoint(*row[:9], resume_state=json.loads(row[9] or "{}"))  # type: ignore[misc]


def ensure_file(conn: apsw.Connection, path: str, kind: str, session_id: str, agent_id: str) -> int:
    """The id of the files row for `path`, created if missing."""
    conn.execute(
        "INSERT INTO files(path, kind, session_id, agent_id) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(path) DO NOTHING",
        (path, kind, session_id, agent_id),
    )
    return int(conn.execute("SELECT id FROM files WHERE path = ?", (path,)).get)


def save_checkpoint(
    conn: apsw.Connection,
    file_id: int,
    *,
    dev: int,
    ino: int,
    size: int,
    mtime_ns: int,
    head_hash: str,
    complete_offset: int,
    resume_offset: int,
    resume_state: dict[str, Any],
    bad_lines: int,
    recount: bool = False,
    session_id: str,
) -> None:
    """Record what was read. `bad_lines` adds to the file's count, or replaces it when the
    file was read from its start (`recount`). A file's session is the first one it names (its name's, if
    that is a session id)."""
    conn.execute(
        "UPDATE files SET dev=?, ino=?, size=?, mtime_ns=?, head_hash=?, complete_offset=?,"
        " resume_offset=?, resume_state=?, bad_lines=?+(CASE WHEN ? THEN 0 ELSE bad_lines END),"
        " session_id=CASE WHEN coalesce(session_id, '') = '' OR ? THEN coalesce(?, session_id)"
        " ELSE session_id END,"
        " ingested_at=strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id=?",
        (
            dev,
            ino,
            size,
            mtime_ns,
            head_hash,
            complete_offset,
            resume_offset,
            json.dumps(resume_state, sort_keys=True),
            bad_lines,
            int(recount),
            int(recount),
            session_id or None,
            file_id,
        ),
    )

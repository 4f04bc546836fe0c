"""The forgotten table: tombstones that keep a re-ingest from bringing forgotten data back.

Scope `session` names a whole session id, scope `chunk` a chunk's content-hash id.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

SCOPES = ("session", "chunk")


def add_tombstones(conn: apsw.Connection, scope: str, keys: Iterable[tuple[str, str]]) -> None:
    """Record (key, reason) pairs as forgotten in `scope`; an existing tombstone stays."""
    if scope not in SCOPES:
        raise ValueError(f"unknown tombstone scope {scope!r}")
    conn.executemany(
        f"INSERT OR IGNORE INTO forgotten(scope, key, reason) VALUES ('{scope}', ?, ?)", keys)

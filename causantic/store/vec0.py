"""The vec0 table's name, its rowid layout and loading sqlite-vec on a connection.

Shared by `store.vectors` (which re-exports them) and `store.vector_index`, below both so the
two do not import each other.
"""

from __future__ import annotations

import apsw

from causantic.store import sql
from causantic.store.db import vec_extension_path

VEC_TABLE = "chunk_vectors"
#: vec0 rowids reserved per chunk (the embedder caps windows at 8 by default).
WINDOW_SLOTS = 16


def ensure_vec(conn: apsw.Connection) -> bool:
    """Make sure sqlite-vec is loaded on this connection; False if it cannot be.

    Works on a bare connection (for callers that have no `Store`), without importing the
    `sqlite_vec` Python module (which imports numpy).
    """
    try:
        conn.execute("SELECT vec_version()").fetchone()
        return True
    except apsw.SQLError:
        pass
    path = vec_extension_path()
    if path is None:
        return False
    try:
        conn.enable_load_extension(True)
        conn.load_extension(path)
        return True
    except apsw.Error:
        return False
    finally:
        try:
            conn.enable_load_extension(False)
        except apsw.Error:
            pass


def vec_version(conn: apsw.Connection) -> str:
    """The loaded sqlite-vec's version (`ensure_vec` first)."""
    return str(conn.execute("SELECT vec_version()").get)


def table_exists(conn: apsw.Connection, name: str = VEC_TABLE) -> bool:
    """Whether the vec0 table (or another table `name`) exists."""
    return sql.table_exists(conn, name)

"""The shared batched-IN helper and table_exists (causantic/store/sql.py)."""

import apsw

from causantic.store import sql


def _conn() -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, tag TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, "odd" if i % 2 else "even") for i in range(1, 1201)])
    return conn


def test_select_in_covers_every_batch_and_binds_params_around_the_list():
    conn = _conn()
    ids = list(range(1, 1201))
    rows = list(sql.select_in(conn, "SELECT id FROM t WHERE tag = ? AND id IN ({marks})", ids,
                              before=("odd",), size=100))
    assert sorted(r[0] for r in rows) == list(range(1, 1201, 2))
    rows = list(sql.select_in(conn, "SELECT id FROM t WHERE id IN ({marks}) AND tag = ?", ids[:7],
                              after=("even",)))
    assert [r[0] for r in rows] == [2, 4, 6]


def test_no_values_runs_nothing_and_execute_in_changes_rows():
    conn = _conn()
    assert list(sql.select_in(conn, "SELECT id FROM t WHERE id IN ({marks})", [])) == []
    sql.execute_in(conn, "DELETE FROM t WHERE id IN ({marks})", range(1, 1001), size=300)
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 200
    assert list(sql.batches([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]
    assert sql.marks(3) == "?,?,?"


def test_table_exists():
    conn = _conn()
    assert sql.table_exists(conn, "t")
    assert not sql.table_exists(conn, "missing")
    conn.execute("CREATE VIEW v AS SELECT 1")
    assert not sql.table_exists(conn, "v")

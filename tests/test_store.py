"""The store: migrations with backup, private files, locked and corrupt databases."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import apsw
import pytest

from causantic.errors import CausanticError, DatabaseBusy, DatabaseCorrupt
from causantic.store import open_store
from causantic.store.schema import MIGRATIONS, schema_version

from .conftest import PYTHON, REPO


def _frozen(path: Path, version: int) -> None:
    """A database as an older causantic (schema `version`) would have left it, with data."""
    conn = apsw.Connection(str(path))
    for v, step in enumerate(MIGRATIONS[:version], start=1):
        with conn:
            step(conn)
            conn.execute(f"PRAGMA user_version = {v}")
    with conn:
        conn.execute(
            "INSERT INTO chunks(id, session_id, project, offset, part, turn, kind, start_time,"
            " end_time, text, tokens) VALUES ('c1','s1','p',0,0,0,'turn','t','t','hello world',3)"
        )
    conn.close()


@pytest.mark.parametrize("version", range(1, len(MIGRATIONS) + 1))
def test_every_older_schema_upgrades_keeping_data(tmp_path: Path, version: int):
    db = tmp_path / "memory.db"
    _frozen(db, version)
    with open_store(db) as store:
        assert schema_version(store.conn) == len(MIGRATIONS)
        assert store.conn.execute("SELECT text FROM chunks").fetchall() == [("hello world",)]
        hit = store.conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'hello'")
        assert hit.fetchone()[0] == 1
    backup = tmp_path / f"memory.db.bak-v{version}"
    assert backup.exists() == (version < len(MIGRATIONS))


def test_fresh_schema_matches_the_migrations(tmp_path: Path):
    with open_store(tmp_path / "a.db") as store:
        names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"chunks", "edges", "files", "sessions", "forgotten", "chunks_fts"} <= names
        mode = store.conn.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
        assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_newer_schema_is_refused_with_one_clear_line(tmp_path: Path):
    db = tmp_path / "memory.db"
    conn = apsw.Connection(str(db))
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    conn.close()
    with pytest.raises(CausanticError, match="newer causantic"):
        with open_store(db):
            pass


def test_corrupt_file_gives_a_corrupt_error(tmp_path: Path):
    db = tmp_path / "memory.db"
    db.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(DatabaseCorrupt, match="not a causantic database"):
        with open_store(db):
            pass


def test_missing_database_for_reading_says_to_ingest(tmp_path: Path):
    with pytest.raises(CausanticError, match="causantic ingest"):
        with open_store(tmp_path / "nope.db", readonly=True):
            pass


def test_write_lock_held_elsewhere_becomes_database_busy(tmp_path: Path, monkeypatch):
    db = tmp_path / "memory.db"
    with open_store(db):
        pass
    holder = subprocess.Popen(
        [PYTHON, "-c",
         "import apsw,sys,time; c=apsw.Connection(sys.argv[1]); c.execute('BEGIN EXCLUSIVE');"
         "print('locked', flush=True); time.sleep(30)", str(db)],
        stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr("causantic.store.db.BUSY_TIMEOUT_MS", 200)
        with pytest.raises(DatabaseBusy, match="locked"):
            with open_store(db) as store:
                with store.conn:
                    store.conn.execute("INSERT INTO forgotten(scope, key) VALUES ('chunk', 'x')")
    finally:
        holder.kill()
        holder.communicate()


def test_reading_an_older_schema_upgrades_it_first(tmp_path: Path):
    """A user's first command after an upgrade may be a read (search): it must not break."""
    db = tmp_path / "memory.db"
    _frozen(db, 1)
    with open_store(db, readonly=True) as store:
        assert schema_version(store.conn) == len(MIGRATIONS)
        hit = store.conn.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'text : hello'"
        ).fetchone()
        assert hit[0] == 1
    assert (tmp_path / "memory.db.bak-v1").exists()


def test_opening_a_file_another_writer_is_migrating_waits_past_the_busy_timeout(tmp_path: Path):
    """Two first ingests at once: one migrates the new file and goes straight on to a long
    batch; the other, which saw the old schema, must wait for it, not fail after 5 s."""
    import time

    from causantic.store.db import BUSY_TIMEOUT_MS

    db = tmp_path / "memory.db"
    held = BUSY_TIMEOUT_MS / 1000 + 1.0
    writer = subprocess.Popen(  # another process holds the write lock of a file at version 0
        [PYTHON, "-c", "import apsw, sys, time\n"
         "c = apsw.Connection(sys.argv[1]); c.execute('PRAGMA journal_mode = WAL')\n"
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True)\n"
         "time.sleep(float(sys.argv[2])); c.execute('COMMIT')", str(db), str(held)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with open_store(db) as store:
            version = schema_version(store.conn)
        waited = time.monotonic() - started
    finally:
        writer.communicate(timeout=60)
    assert version == len(MIGRATIONS) and waited > BUSY_TIMEOUT_MS / 1000


def test_processes_creating_the_same_new_file_at_once_all_succeed(tmp_path: Path):
    """The loser of the switch to WAL on a brand-new file got an immediate SQLITE_BUSY
    (SQLite calls no busy handler there): about one first ingest in four failed when two ran
    at once. Ten rounds of two processes opening a new file for writing."""
    script = ("import sys; from pathlib import Path; from causantic.store import open_store\n"
              "with open_store(Path(sys.argv[1])) as store: store.conn.execute('SELECT 1')")
    for round_ in range(10):
        db = tmp_path / f"r{round_}.db"
        procs = [subprocess.Popen([PYTHON, "-c", script, str(db)], stderr=subprocess.PIPE,
                                  text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
                 for _ in range(2)]
        errors = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], errors

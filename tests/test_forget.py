"""forget: previews by default, deletes everything derived from a chunk, and stays forgotten."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from causantic.config import load_settings
from causantic.errors import UsageError
from causantic.forget import forget
from causantic.ingest.run import run_ingest
from causantic.store import open_store
from causantic.store.vec0 import WINDOW_SLOTS

from .conftest import PYTHON, SAMPLES
from .helpers import count as _count
from .helpers import rows as _rows

NAPOLI_SESSION = "665369bc-1ebb-4fe8-981f-44a473807022"  # 33 chunks, napoli-matcha


def _session_file(db: Path, session_id: str) -> Path:
    with open_store(db, readonly=True) as store:
        row = store.conn.execute(
            "SELECT path FROM files WHERE session_id = ? AND kind = 'session'", (session_id,)
        ).fetchone()
    return Path(row[0])


def _reingest(db: Path, path: Path) -> None:
    """Ingest a file again from scratch, as after a lost checkpoint or a full rebuild."""
    with open_store(db) as store, store.conn:
        store.conn.execute("DELETE FROM files WHERE path = ?", (str(path),))
    run_ingest(load_settings(db=db), [path])


def test_preview_is_the_default_and_deletes_nothing(shared_db_copy: Path):
    """A model or a user asking 'what would forget do' must never lose data."""
    before = _count(shared_db_copy, "SELECT count(*) FROM chunks")
    with open_store(shared_db_copy, readonly=True) as store:
        result = forget(store, session_id=NAPOLI_SESSION)
    assert result.dry_run and result.chunks == 33 and result.sessions == [NAPOLI_SESSION]
    assert result.scope == "session"
    assert result.text.startswith("Dry run: 33 chunks in 1 session would be forgotten")
    assert "Nothing was deleted" in result.text
    assert _count(shared_db_copy, "SELECT count(*) FROM chunks") == before
    assert _count(shared_db_copy, "SELECT count(*) FROM forgotten") == 0


def test_forgetting_a_session_removes_text_index_edges_and_survives_reingest(shared_db_copy: Path):
    """After forget, nothing of the session is searchable, and re-reading its transcript
    (a rebuild, a lost checkpoint) does not bring it back: the session tombstone holds."""
    db = shared_db_copy
    ids = [r for (r,) in _rows(db, "SELECT id FROM chunks WHERE session_id = ?", NAPOLI_SESSION)]
    assert _count(db, "SELECT count(*) FROM session_state WHERE session_id = ?", NAPOLI_SESSION) == 1
    word = _rare_word(db, NAPOLI_SESSION)
    assert _fts_hits(db, word, NAPOLI_SESSION) > 0
    with open_store(db) as store:
        result = forget(store, session_id=NAPOLI_SESSION, dry_run=False)
    assert not result.dry_run and result.chunks == len(ids) == 33
    assert result.text.startswith("Forgot 33 chunks in 1 session")
    assert _count(db, "SELECT count(*) FROM chunks WHERE session_id = ?", NAPOLI_SESSION) == 0
    assert _fts_hits(db, word, NAPOLI_SESSION) == 0
    marks = ",".join("?" * len(ids))
    assert _count(db, f"SELECT count(*) FROM edges WHERE src IN ({marks}) OR dst IN ({marks})",
                  *ids, *ids) == 0
    assert _count(db, "SELECT count(*) FROM sessions WHERE id = ?", NAPOLI_SESSION) == 0
    assert _count(db, "SELECT count(*) FROM session_state WHERE session_id = ?", NAPOLI_SESSION) == 0
    assert _count(db, "SELECT count(*) FROM forgotten WHERE scope = 'session' AND key = ?",
                  NAPOLI_SESSION) == 1

    path = _session_file(db, NAPOLI_SESSION)
    # Claude Code's own copy is named, since forget leaves it alone
    assert f"delete them too if they must go:\n  {path}" in result.text
    _reingest(db, path)
    assert _count(db, "SELECT count(*) FROM chunks WHERE session_id = ?", NAPOLI_SESSION) == 0
    assert _fts_hits(db, word, NAPOLI_SESSION) == 0
    assert _count(db, "SELECT count(*) FROM sessions WHERE id = ?", NAPOLI_SESSION) == 0


def test_time_range_forget_leaves_chunk_tombstones_and_keeps_the_rest(shared_db_copy: Path):
    """A time range cuts a session in two: only the chunks inside are forgotten, for good."""
    db = shared_db_copy
    rows = _rows(db, "SELECT start_time FROM chunks WHERE session_id = ? ORDER BY start_time",
                 NAPOLI_SESSION)
    cut = rows[len(rows) // 2][0]
    inside = _count(db, "SELECT count(*) FROM chunks WHERE session_id = ? AND start_time >= ?",
                    NAPOLI_SESSION, cut)
    with open_store(db) as store:
        result = forget(store, project="napoli-matcha", session_id=NAPOLI_SESSION, after=cut,
                        dry_run=False)
    assert result.scope == "chunk" and result.chunks == inside > 0
    left = _count(db, "SELECT count(*) FROM chunks WHERE session_id = ?", NAPOLI_SESSION)
    assert left == 33 - inside
    assert _count(db, "SELECT count(*) FROM forgotten WHERE scope = 'chunk'") == inside

    _reingest(db, _session_file(db, NAPOLI_SESSION))
    assert _count(db, "SELECT count(*) FROM sessions WHERE id = ?", NAPOLI_SESSION) == 1
    assert _count(db, "SELECT count(*) FROM chunks WHERE session_id = ?", NAPOLI_SESSION) == left
    assert _count(db, "SELECT count(*) FROM chunks WHERE session_id = ? AND start_time >= ?",
                  NAPOLI_SESSION, cut) == 0


def test_query_forget_without_vectors_scores_by_term_coverage(shared_db_copy: Path):
    """In a keyword-only store, a query selects the chunks holding most of its terms, and
    the preview shows the scores so the threshold can be tuned before deleting."""
    db = shared_db_copy
    with open_store(db, readonly=True) as store:
        loose = forget(store, project="spotter", query="worktree branch merge", threshold=0.3)
        strict = forget(store, project="spotter", query="worktree branch merge", threshold=0.95)
    assert loose.similarity == "keyword" and loose.chunks > 0
    assert strict.chunks <= loose.chunks
    assert "Similarity (share of the query's terms), threshold 30%" in loose.text
    scores = [m.score for m in loose.matches]
    assert all(s is not None and s >= 0.3 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert {m.project for m in loose.matches} == {"spotter"}

    total = _count(db, "SELECT count(*) FROM chunks")
    with open_store(db) as store:
        done = forget(store, project="spotter", query="worktree branch merge", threshold=0.3,
                      dry_run=False)
    assert done.chunks == loose.chunks
    assert _count(db, "SELECT count(*) FROM chunks") == total - loose.chunks


def test_forget_removes_vectors(tmp_path: Path):
    """Forgotten text must not survive as a vector that still matches queries."""
    from causantic.ingest.run import run_embed
    from causantic.store import vectors

    settings = load_settings(db=tmp_path / "m.db")
    run_ingest(settings, [SAMPLES])
    report = run_embed(settings)
    assert report.embedded > 0
    session = "11111111-aaaa-4bbb-8ccc-000000000001"
    with open_store(settings.db_path) as store:
        conn = store.conn
        rowids = [r for (r,) in conn.execute("SELECT rowid FROM chunks WHERE session_id = ?",
                                            (session,))]
        assert store.load_vec()
        marks = ",".join("?" * len(rowids))
        meta = f"SELECT count(*) FROM {vectors.META_TABLE} WHERE chunk_rowid IN ({marks})"
        windows = (f"SELECT count(*) FROM {vectors.VEC_TABLE}_rowids"
                   f" WHERE rowid / {vectors.WINDOW_SLOTS} IN ({marks})")
        assert conn.execute(meta, rowids).fetchone()[0] == len(rowids)
        assert conn.execute(windows, rowids).fetchone()[0] >= len(rowids)
        # With vectors, a query selects by meaning (cosine of the best window).
        preview = forget(store, query="the retry backoff test is flaky on CI", threshold=0.5)
        assert preview.similarity == "vector" and preview.chunks >= 1
        assert preview.matches[0].session_id == session
        assert all(m.score is not None and m.score >= 0.5 for m in preview.matches)
        assert "Similarity (vector cosine)" in preview.text
        result = forget(store, session_id=session, dry_run=False)
        assert result.chunks == len(rowids)
        assert conn.execute(meta, rowids).fetchone()[0] == 0
        assert conn.execute(windows, rowids).fetchone()[0] == 0


def test_forget_removes_topic_memberships(shared_db_copy: Path):
    """A forgotten chunk must not stay listed under its topic (`causantic topics show`)."""
    db = shared_db_copy
    with open_store(db) as store, store.conn:
        conn = store.conn
        conn.execute("INSERT INTO topics(id, name, centroid) VALUES (1, 'napoli things', x'00')")
        conn.execute(
            "INSERT INTO topic_members(chunk_rowid, topic_id, distance)"
            " SELECT rowid, 1, 0.05 FROM chunks WHERE project = 'napoli-matcha'"
        )
    members = _count(db, "SELECT count(*) FROM topic_members")
    with open_store(db) as store:
        forget(store, session_id=NAPOLI_SESSION, dry_run=False)
    assert _count(db, "SELECT count(*) FROM topic_members") == members - 33
    assert _count(db, "SELECT count(*) FROM topic_members m LEFT JOIN chunks c"
                      " ON c.rowid = m.chunk_rowid WHERE c.rowid IS NULL") == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "needs at least one of"),
        ({"query": "   "}, "query is empty"),
        ({"project": "no-such-project"}, "no project 'no-such-project'"),
        ({"before": "last tuesday"}, "ISO date or time"),
        ({"after": "2026-02-02", "before": "2026-02-01"}, "must be earlier"),
        ({"project": "cli", "threshold": 1.5}, "threshold"),
    ],
)
def test_bad_requests_are_usage_errors(shared_db: Path, kwargs: dict, message: str):
    """Every mistake gets a one-line message saying what to change, never a traceback."""
    with open_store(shared_db, readonly=True) as store, pytest.raises(UsageError, match=message):
        forget(store, **kwargs)


def test_cli_previews_unless_yes(shared_db_copy: Path):
    """`causantic forget` mirrors the MCP tool: a preview first, deletion only with --yes."""
    base = [PYTHON, "-m", "causantic", "--db", str(shared_db_copy), "forget",
            "--session", NAPOLI_SESSION]
    preview = subprocess.run(base, capture_output=True, text=True, timeout=60)
    assert preview.returncode == 0, preview.stderr
    assert "Dry run: 33 chunks" in preview.stdout and "add --yes" in preview.stdout
    assert _count(shared_db_copy, "SELECT count(*) FROM chunks WHERE session_id = ?",
                  NAPOLI_SESSION) == 33
    done = subprocess.run(base + ["--yes", "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["dry_run"] is False and payload["chunks"] == 33
    assert _count(shared_db_copy, "SELECT count(*) FROM chunks WHERE session_id = ?",
                  NAPOLI_SESSION) == 0
    bad = subprocess.run([PYTHON, "-m", "causantic", "--db", str(shared_db_copy), "forget"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


# -- helpers -------------------------------------------------------------------------------


def _rare_word(db: Path, session_id: str) -> str:
    """A word that occurs in this session's chunks and in no other session's."""
    with open_store(db, readonly=True) as store:
        conn = store.conn
        for (text,) in conn.execute("SELECT text FROM chunks WHERE session_id = ?", (session_id,)):
            for word in text.split():
                if len(word) > 8 and word.isalpha():
                    others = conn.execute(
                        "SELECT count(*) FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid"
                        " WHERE chunks_fts MATCH ? AND c.session_id != ?",
                        (f'"{word}"', session_id),
                    ).fetchone()[0]
                    if others == 0:
                        return word
    raise AssertionError("no session-specific word found")


def _fts_hits(db: Path, word: str, session_id: str) -> int:
    with open_store(db, readonly=True) as store:
        return int(store.conn.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{word}"',)
        ).fetchone()[0])


def test_forgotten_text_and_vectors_leave_the_file_and_its_wal(samples_embedded: Path,
                                                              tmp_path: Path):
    """'For good': nothing of a forgotten session stays readable in the database file or
    its WAL: not its text (free pages, FTS segments), not its vectors, token bits or vector
    index entries, not a topic named after it alone. Before, most of the text stayed."""
    import glob
    import shutil

    db = tmp_path / "m.db"
    shutil.copy2(samples_embedded, db)
    session = "11111111-aaaa-4bbb-8ccc-000000000001"
    with open_store(db) as store:
        conn = store.conn
        assert store.load_vec()
        own = [t for (t,) in conn.execute("SELECT text FROM chunks WHERE session_id = ?",
                                          (session,))]
        others = "\n".join(t for (t,) in conn.execute(
            "SELECT text FROM chunks WHERE session_id != ?", (session,)))
        pieces = {t[i:i + 32] for t in own for i in range(0, max(1, len(t) - 32), 97)}
        pieces = {p for p in pieces if len(p) == 32 and p not in others}
        rowids = "SELECT rowid FROM chunks WHERE session_id = ?"
        blobs = [b for (b,) in conn.execute(
            "SELECT embedding FROM chunk_vectors WHERE rowid / ? IN (" + rowids + ")",
            (WINDOW_SLOTS, session))]
        blobs += [b for (b,) in conn.execute(
            "SELECT bits FROM chunk_token_bits WHERE chunk_rowid IN (" + rowids + ")", (session,))]
        with conn:
            conn.execute("INSERT INTO topics(id, name, centroid) VALUES (7, 'only that session',"
                         " x'00')")
            conn.execute("INSERT INTO topic_members(chunk_rowid, topic_id, distance)"
                         " SELECT rowid, 7, 0.1 FROM chunks WHERE session_id = ?", (session,))
        assert len(pieces) >= 10 and len(blobs) >= 4
        data = b"".join(Path(f).read_bytes() for f in glob.glob(f"{db}*"))
        assert all(p.encode() in data for p in pieces)  # the check can see them
        forget(store, session_id=session, dry_run=False)
        assert conn.execute("SELECT count(*) FROM topics WHERE id = 7").fetchone()[0] == 0
    data = b"".join(Path(f).read_bytes() for f in glob.glob(f"{db}*"))
    assert [p for p in pieces if p.encode() in data] == []
    assert [b[:32] for b in blobs if b[:32] in data] == []
    assert b"only that session" not in data


def test_a_forgotten_memory_leaves_the_file_too(tmp_path: Path):
    """`forget --memory ID --yes`: a remembered text typed by mistake is gone from the bytes."""
    import glob

    from causantic.cli import main as cli_main

    db = str(tmp_path / "m.db")
    secret = "the staging box answers to Quillfeather-Osprey"
    assert cli_main(["--db", db, "remember", secret, "--no-embed", "--json"]) == 0
    with open_store(Path(db), readonly=True) as store:
        (mid,) = store.conn.execute("SELECT id FROM memories").fetchone()
    assert cli_main(["--db", db, "forget", "--memory", mid, "--yes"]) == 0
    data = b"".join(Path(f).read_bytes() for f in glob.glob(f"{db}*"))
    assert b"Quillfeather" not in data


def test_a_writer_holding_the_file_only_postpones_the_rewrite(tmp_path: Path):
    """The deletes stand; the answer says the file was not rewritten and what does it later."""
    import apsw

    from causantic.store import redaction

    db = tmp_path / "m.db"
    with open_store(db) as store:
        conn = store.conn
        with conn:
            conn.execute("INSERT INTO forgotten(scope, key, reason) VALUES ('chunk', 'x', 'y')")
        notes: list[str] = []
        other = apsw.Connection(str(db))
        with redaction.for_good(conn, notes):
            with conn:
                conn.execute("DELETE FROM forgotten")
            other.execute("BEGIN IMMEDIATE")  # another process starts writing
            conn.set_busy_timeout(50)
        other.execute("ROLLBACK")
        other.close()
        assert conn.execute("SELECT count(*) FROM forgotten").fetchone()[0] == 0
    assert len(notes) >= 1 and notes[0].startswith("another process was writing, so the file "
                                                   "was not rewritten")
    assert "causantic redact --rescan" in notes[0]

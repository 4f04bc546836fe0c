"""`causantic export` / `import`: the archive round trip, merging, filters, refusals.

Real SQLite files throughout: the shared transcripts (keyword only) for the bulk tests, and
three small real sessions embedded with the real model and clustered into topics for the
vectors-and-topics round trip.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import apsw
import pytest

from causantic.cli import main
from causantic.config import load_settings
from causantic.ingest.exclude import Exclusions
from causantic.ingest.run import run_embed, run_ingest
from causantic.retrieval.search import search
from causantic.store import open_store
from causantic.store import transfer as sql
from causantic.store.sql import table_names
from causantic.store.vectors import window_vectors
from causantic.topics.maintain import TopicSettings, rebuild
from causantic.transfer.archive import VERSION, export, import_archive

from .conftest import PYTHON, REPO

SMALL_REAL = ["short.jsonl", "subagent.jsonl", "tool_heavy.jsonl"]


def table_rows(db: Path) -> dict[str, list[tuple]]:
    """Every row of every exported table, local rowids replaced by chunk ids, sorted."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out: dict[str, list[tuple]] = {}
        present = table_names(conn)
        for table in sql.TABLES:
            if table.name in present:
                out[table.name] = sorted(
                    tuple(r.items()) for r in sql.read_rows(conn, table, project=None, since=None)
                )
        out["vector_meta"] = sorted(conn.execute(
            "SELECT chunk_id, model_id, windows, embedded_at, vector, windows_q"
            " FROM chunk_vectors_meta").fetchall())
        out["token_bits"] = sorted(conn.execute(
            "SELECT m.chunk_id, t.model_id, t.bits FROM chunk_token_bits t"
            " JOIN chunk_vectors_meta m ON m.chunk_rowid = t.chunk_rowid").fetchall())
        out["vector_index"] = sorted(conn.execute(
            "SELECT model_id, project, sum(size) FROM chunk_vector_blocks"
            " GROUP BY model_id, project").fetchall())
        return out
    finally:
        conn.close()


@pytest.fixture(scope="module")
def embedded_db(tmp_path_factory: pytest.TempPathFactory, shared_transcripts: Path) -> Path:
    """Three small real sessions, embedded, clustered into topics, one chunk forgotten."""
    folder = tmp_path_factory.mktemp("transfer-embedded")
    src = folder / "transcripts"
    src.mkdir()
    for name in SMALL_REAL:
        shutil.copy2(shared_transcripts / "marot__spotter" / name, src / name)
    settings = load_settings(db=folder / "memory.db", env={"HOME": str(folder)})
    run_ingest(settings, [src])
    run_embed(settings)
    with open_store(settings.db_path) as store:
        rebuild(store, settings=TopicSettings(min_cluster_size=2, min_samples=2))
        with store.conn:
            store.conn.execute("INSERT INTO forgotten(scope, key, reason) "
                               "VALUES ('chunk', 'gone-chunk', 'test')")
    return settings.db_path


def test_round_trip_with_vectors_and_topics_gives_an_equal_store(embedded_db: Path,
                                                                 tmp_path: Path):
    """Every row of every table (vectors, token bits, the compact index and topics included)
    survives export -> import into an empty store unchanged."""
    archive = tmp_path / "memory.jsonl.gz"
    with open_store(embedded_db, readonly=True) as store:
        report = export(store, archive, vectors=True)
    assert report.rows["chunks"] > 10 and report.rows["vectors"] == report.rows["chunks"]
    assert report.rows["topics"] >= 1 and report.rows["topic_members"] >= 2
    target = tmp_path / "new" / "memory.db"
    imported = import_archive(target, archive)
    assert imported.tables["chunks"].added == report.rows["chunks"]
    before, after = table_rows(embedded_db), table_rows(target)
    assert before.keys() == after.keys()
    for name in before:
        assert before[name] == after[name], name
    with open_store(embedded_db) as a, open_store(target) as b:
        a.load_vec()
        b.load_vec()
        cid = a.conn.execute("SELECT id FROM chunks ORDER BY id LIMIT 1").fetchone()[0]
        assert window_vectors(a.conn, cid) == window_vectors(b.conn, cid)
    with open_store(target, readonly=True) as store:
        hybrid = search(store, "spotter", limit=3)
    assert hybrid.mode == "hybrid" and "vector" in {s for r in hybrid.results for s in r.sources}


def test_token_bits_that_are_not_whole_tokens_are_left_for_embed(embedded_db: Path,
                                                                  tmp_path: Path):
    """A vectors row whose token_bits is not a whole number of tokens imports its vectors
    without them; the chunks it does not touch keep theirs."""
    archive = tmp_path / "a.jsonl.gz"
    with open_store(embedded_db, readonly=True) as store:
        export(store, archive, vectors=True)
    lines = gzip.decompress(archive.read_bytes()).decode().splitlines()
    damaged, out = None, []
    for line in lines:
        doc = json.loads(line)
        if damaged is None and doc.get("table") == "vectors" and "token_bits" in doc["row"]:
            damaged = doc["row"]["chunk_id"]
            doc["row"]["token_bits"] = "AQI="  # two bytes
        out.append(json.dumps(doc))
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join(out) + "\n")
    target = tmp_path / "new" / "memory.db"
    import_archive(target, edited)
    conn = apsw.Connection(str(target))
    with_bits = {r[0] for r in conn.execute(
        "SELECT m.chunk_id FROM chunk_token_bits t JOIN chunk_vectors_meta m"
        " ON m.chunk_rowid = t.chunk_rowid")}
    embedded = conn.execute("SELECT count(*) FROM chunk_vectors_meta").fetchone()[0]
    conn.close()
    assert damaged is not None and damaged not in with_bits
    assert len(with_bits) == embedded - 1


def test_shared_transcripts_round_trip_and_second_import_changes_nothing(shared_db: Path,
                                                                         tmp_path: Path):
    archive = tmp_path / "all.jsonl"
    with open_store(shared_db, readonly=True) as store:
        export(store, archive)
    target = tmp_path / "t" / "memory.db"
    import_archive(target, archive)
    assert table_rows(shared_db) == table_rows(target)
    again = import_archive(target, archive)
    assert all(m.added == 0 for m in again.tables.values())
    assert again.tables["chunks"].present == table_rows(target)["chunks"].__len__()
    with open_store(target, readonly=True) as store:  # FTS was kept for the imported chunks
        result = search(store, "ENTIRE_TELEMETRY_OPTOUT", mode="keyword", limit=1)
    assert result.results, "imported chunks must be searchable by keyword"


def test_import_then_ingest_of_the_same_transcripts_duplicates_nothing(
        shared_db: Path, tmp_path: Path, shared_transcripts: Path):
    """Checkpoints are not exported; re-ingesting adopts the imported chunks instead."""
    archive = tmp_path / "all.jsonl.gz"
    with open_store(shared_db, readonly=True) as store:
        export(store, archive)
    target = tmp_path / "t" / "memory.db"
    import_archive(target, archive)
    settings = load_settings(db=target, env={"HOME": str(tmp_path)})
    report = run_ingest(settings, [shared_transcripts])
    assert report.chunks_added == 0
    assert table_rows(shared_db)["chunks"] == table_rows(target)["chunks"]
    conn = apsw.Connection(str(target))
    assert conn.execute("SELECT count(*) FROM chunks WHERE file_id IS NULL").fetchone()[0] == 0
    conn.close()


def test_dry_run_reports_the_merge_and_writes_nothing(shared_db: Path, tmp_path: Path):
    archive = tmp_path / "p.jsonl"
    with open_store(shared_db, readonly=True) as store:
        export(store, archive, project="cli")
    target = tmp_path / "t" / "memory.db"
    dry = import_archive(target, archive, dry_run=True)
    assert not target.exists(), "a dry run into a missing store creates nothing"
    assert dry.tables["chunks"].added > 0 and "dry run" in dry.text
    real = import_archive(target, archive)
    assert {k: v.as_dict() for k, v in real.tables.items()} == \
        {k: v.as_dict() for k, v in dry.tables.items()}
    size = table_rows(target)
    again = import_archive(target, archive, dry_run=True)
    assert again.tables["chunks"].added == 0 and table_rows(target) == size


def test_project_and_since_filters_keep_only_matching_rows_and_whole_edges(shared_db: Path,
                                                                           tmp_path: Path):
    archive = tmp_path / "f.jsonl"
    with open_store(shared_db, readonly=True) as store:
        since = store.conn.execute("SELECT min(end_time) FROM chunks WHERE project = 'cli'"
                                   ).fetchone()[0][:10]
        export(store, archive, project="cli", since=since)
    rows = [json.loads(line) for line in archive.read_text().splitlines()]
    chunks = [r["row"] for r in rows if r.get("table") == "chunks"]
    assert chunks and {c["project"] for c in chunks} == {"cli"}
    assert all(c["end_time"] >= since for c in chunks)
    ids = {c["id"] for c in chunks}
    edges = [r["row"] for r in rows if r.get("table") == "edges"]
    assert edges and all(e["src"] in ids and e["dst"] in ids for e in edges)
    assert rows[-1]["end"]["rows"]["chunks"] == len(chunks)


def test_a_forgotten_chunk_is_not_brought_back_by_import(shared_db: Path, tmp_path: Path):
    archive = tmp_path / "a.jsonl"
    with open_store(shared_db, readonly=True) as store:
        export(store, archive)
        session = store.conn.execute("SELECT session_id FROM chunks LIMIT 1").fetchone()[0]
    target = tmp_path / "t" / "memory.db"
    with open_store(target) as store, store.conn:
        store.conn.execute("INSERT INTO forgotten(scope, key) VALUES ('session', ?)", (session,))
    report = import_archive(target, archive)
    assert report.tables["chunks"].present > 0
    conn = apsw.Connection(str(target))
    assert conn.execute("SELECT count(*) FROM chunks WHERE session_id = ?",
                        (session,)).fetchone()[0] == 0
    conn.close()


def test_newer_version_damaged_and_cut_short_archives_are_refused_with_one_line(
        shared_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    archive = tmp_path / "a.jsonl.gz"
    with open_store(shared_db, readonly=True) as store:
        export(store, archive, project="cli")
    lines = gzip.decompress(archive.read_bytes()).decode().splitlines()
    header = json.loads(lines[0])
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({**header, "version": VERSION + 1}) + "\n" + "\n".join(lines[1:]))
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n")
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    db = tmp_path / "t" / "memory.db"
    for bad, words in ((newer, "newer than this causantic reads"), (cut, "cut short"),
                       (damaged, "line 2 is not JSON")):
        assert main(["--db", str(db), "import", str(bad)]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
    conn = apsw.Connection(str(db))
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0, "nothing imported"
    conn.close()


def test_cli_export_and_import_print_one_report_each(shared_db: Path, tmp_path: Path):
    archive = tmp_path / "cli.jsonl.gz"
    proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(shared_db), "export",
                           str(archive), "--project", "cli", "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows"]["chunks"] > 0
    assert archive.stat().st_mode & 0o777 == 0o600
    db = tmp_path / "t" / "memory.db"
    proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "import", str(archive),
                           "--dry-run"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Would import from") and "dry run" in proc.stdout
    bad = subprocess.run([PYTHON, "-m", "causantic", "--db", str(shared_db), "export",
                          str(archive), "--since", "yesterday"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert bad.returncode == 2 and "--since 'yesterday'" in bad.stderr


def test_work_kept_out_of_memory_here_is_not_imported(shared_db: Path, tmp_path: Path):
    """`[ingest] exclude` (a project name, or a folder glob on the session's stored cwd)
    keeps an exported session out as ingest would: its chunks, state and memories stay out,
    and the report says why; other projects come in whole."""
    archive = tmp_path / "all.jsonl"
    with open_store(shared_db, readonly=True) as store:
        export(store, archive)
        spotter_cwd, spotter = store.conn.execute(
            "SELECT cwd, id FROM sessions WHERE project = 'spotter' ORDER BY id LIMIT 1"
        ).fetchone()
    # A memory observed in the kept-out session, and one of the kept-out project.
    rows = [json.loads(line) for line in archive.read_text().splitlines()]
    end = rows.pop()
    memory = {"project": "cli", "type": "decision", "importance": 5.0, "origin": "explicit",
              "created_at": "2026-01-01T00:00:00Z", "last_seen_at": "2026-01-01T00:00:00Z"}
    rows += [{"table": "memories", "row": {**memory, "id": "mem_cli", "text": "cli memory"}},
             {"table": "memories", "row": {**memory, "id": "mem_spot", "project": "spotter",
                                           "text": "observed there", "session_id": spotter}},
             {"table": "memories", "row": {**memory, "id": "mem_keep", "project": "spotter",
                                           "text": "kept"}},
             end]
    archive.write_text("".join(json.dumps(r) + "\n" for r in rows))

    target = tmp_path / "t" / "memory.db"
    report = import_archive(target, archive,
                            exclusions=Exclusions(["cli", spotter_cwd]))
    conn = apsw.Connection(str(target))
    projects = {p for (p,) in conn.execute("SELECT DISTINCT project FROM chunks")}
    cli_sessions = conn.execute("SELECT count(*) FROM sessions WHERE project = 'cli'").fetchone()
    left = conn.execute("SELECT count(*) FROM chunks WHERE session_id = ?", (spotter,)).fetchone()
    memories = {m for (m,) in conn.execute("SELECT id FROM memories")}
    cli_memories = conn.execute("SELECT count(*) FROM memories WHERE project = 'cli'").fetchone()
    conn.close()
    assert "cli" not in projects and cli_sessions == (0,) and left == (0,)
    assert {"spotter", "napoli-matcha"} <= projects
    assert "mem_keep" in memories and not memories & {"mem_cli", "mem_spot"}
    assert cli_memories == (0,)
    exported = {r["row"]["project"] for r in rows if r.get("table") == "sessions"}
    assert report.kept_out["[ingest] exclude 'cli'"] == sum(
        1 for r in rows if r.get("table") == "sessions" and r["row"]["project"] == "cli")
    assert report.kept_out[f"[ingest] exclude {spotter_cwd!r}"] >= 1
    assert "Not imported: " in report.text and "kept out of memory ([ingest] exclude 'cli')" \
        in report.text
    assert "cli" in exported  # the archive held it: the exclusion is what left it out
    assert report.tables["edges"].skipped > 0  # edges of the left-out chunks, counted as such


def test_cli_import_honours_the_config_exclusions(shared_db: Path, tmp_path: Path):
    archive = tmp_path / "all.jsonl"
    with open_store(shared_db, readonly=True) as store:
        export(store, archive, project="napoli-matcha")
    home = tmp_path / "home"
    (home / ".causantic").mkdir(parents=True)
    (home / ".causantic" / "config.toml").write_text('[ingest]\nexclude = ["napoli-*"]\n')
    db = tmp_path / "t" / "memory.db"
    proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "import", str(archive)],
                          capture_output=True, text=True, cwd=REPO, timeout=60,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "+0 chunks" in proc.stdout
    assert "kept out of memory ([ingest] exclude 'napoli-*')" in proc.stdout

"""Reader processes (`causantic.ingest.readers`): a large ingest reads files in forked
processes while it writes, and must give the store one process gives.

The ingests run as real `causantic ingest` processes (a test process may hold threads or
ONNX Runtime, where readers stand down by design); the reader mechanics run in a fresh
interpreter with real forked processes, one of them killed half way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from .helpers import PYTHON, REPO, run_cli

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reader processes are forked, on Linux only")

#: Tables compared row for row (chunk rowids included: files are written in the same order).
TABLES = ("sessions", "chunks", "edges", "session_state", "files", "lessons")
#: Columns that say when the run happened, not what it stored.
WHEN = {"ingested_at", "updated_at", "computed_at", "read_at"}


def _ingest(tmp_path: Path, source: Path, name: str, config: str | None) -> tuple[dict, Path]:
    """`causantic ingest` of ``source`` into ``tmp_path/name`` (with this config file; None:
    the one already there)."""
    home = tmp_path / name
    if config is not None:
        (home / ".causantic").mkdir(parents=True)
        (home / ".causantic" / "config.toml").write_text(config)
    db = home / "memory.db"
    proc = run_cli("--db", str(db), "ingest", "--json", "--no-embed",
                   str(source),
                   env={"HOME": str(home), "CAUSANTIC_HOME": str(home / ".causantic")})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), db


def _dump(db: Path) -> dict[str, list[tuple]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out = {}
        for table in TABLES:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] not in WHEN]
            out[table] = sorted(conn.execute(f"SELECT {', '.join(cols)} FROM {table}"),
                                key=repr)
        out["fts"] = conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'error'"
                                  " ORDER BY rowid").fetchall()
        return out
    finally:
        conn.close()


def test_reading_in_reader_processes_gives_the_store_one_process_gives(
        tmp_path: Path, shared_transcripts: Path):
    exclude = '[ingest]\nexclude = ["napoli-*"]\n'  # a kept-out file is judged in a reader
    one, one_db = _ingest(tmp_path, shared_transcripts, "one", exclude + "readers = 1\n")
    two, two_db = _ingest(tmp_path, shared_transcripts, "two", exclude + "readers = 2\n")
    assert (one["readers"], two["readers"]) == (1, 2)
    for key in ("files", "files_read", "kept_out", "chunks_added", "edges_added",
                "redactions", "bad_lines", "problems"):
        assert one[key] == two[key], key
    assert one["chunks_added"] > 500 and one["files_excluded"] > 0
    first, second = _dump(one_db), _dump(two_db)
    for table in first:
        assert first[table] == second[table], table
    auto, _ = _ingest(tmp_path, shared_transcripts, "auto", "")  # 35 MB in 29 files: worth readers by default
    assert auto["readers"] == min(4, os.cpu_count() or 1)


READERS = r"""
import json, os, sys
from causantic.ingest.readers import read_all

parent = os.getpid()

def read(job):
    if os.getpid() != parent and job == 5:
        os._exit(9)  # a reader killed half way (out of memory, kill -9)
    if job == 3:
        raise OSError("cannot read job 3")
    if job == 7:
        return None, "kept out"
    return f"read {job} in " + ("reader" if os.getpid() != parent else "ingest"), None

out = [(item, why, str(err) if err else None) for item, why, err in read_all(range(12), read, 2)]
print(json.dumps(out))
"""


def test_a_reader_killed_half_way_leaves_the_rest_to_the_ingest_process():
    proc = subprocess.run([PYTHON, "-c", READERS], capture_output=True, text=True, timeout=60,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [o[0].split(" in ")[0] if o[0] else o for o in out] == [
        "read 0", "read 1", "read 2", [None, None, "cannot read job 3"], "read 4", "read 5",
        "read 6", [None, "kept out", None], "read 8", "read 9", "read 10", "read 11"]
    assert out[0][0].endswith("in reader")  # read ahead by the readers...
    assert out[5][0].endswith("in ingest")  # ...until one died: then here, in order
    assert out[11][0].endswith("in ingest")


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_a_killed_ingest_leaves_no_reader_behind_and_a_rerun_completes_it(
        tmp_path: Path, shared_transcripts: Path):
    clean, clean_db = _ingest(tmp_path, shared_transcripts, "clean", "[ingest]\nreaders = 1\n")
    home = tmp_path / "killed"
    (home / ".causantic").mkdir(parents=True)
    (home / ".causantic" / "config.toml").write_text("[ingest]\nreaders = 2\n")
    db = home / "memory.db"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(home),
           "CAUSANTIC_HOME": str(home / ".causantic")}
    proc = subprocess.Popen([PYTHON, "-m", "causantic", "--db", str(db), "ingest", "--json",
                             "--no-embed", str(shared_transcripts)], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    readers: list[int] = []
    deadline = time.monotonic() + 30
    while len(readers) < 2 and proc.poll() is None and time.monotonic() < deadline:
        readers = _children(proc.pid)
    assert len(readers) == 2, "the ingest did not start its two readers"
    time.sleep(0.1)  # they are reading now (a reader killed while starting is another path)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{r}").exists() for r in readers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(Path(f"/proc/{r}").exists() for r in readers), "a reader outlived the ingest"
    rerun, _ = _ingest(tmp_path, shared_transcripts, "killed", None)
    assert rerun["problems"] == []
    first, second = _dump(clean_db), _dump(db)
    for table in first:
        assert first[table] == second[table], table


HOLDER = r"""
import sys, time, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("CREATE TABLE IF NOT EXISTS other_writer(x)")
mode, seconds = sys.argv[2], float(sys.argv[3])
print("holding", flush=True)
end = time.monotonic() + seconds
if mode == "stuck":  # one transaction that never commits while we wait
    conn.execute("BEGIN IMMEDIATE")
    time.sleep(seconds)
    conn.execute("ROLLBACK")
else:  # a busy writer: one short transaction after another, committing each
    while time.monotonic() < end:
        with conn:
            conn.execute("INSERT INTO other_writer VALUES (1)")
            time.sleep(0.05)
"""


@pytest.mark.parametrize("other", ["committing", "stuck"])
def test_an_ingest_waits_for_a_writer_that_commits_not_for_one_that_is_stuck(
        tmp_path: Path, other: str, monkeypatch: pytest.MonkeyPatch):
    """A writer holding the lock one transaction after another (what an ingest with readers
    does) is waited for; one holding a transaction open without committing is given up on
    after `_BUSY_WAIT_S` (shortened here), as before."""
    from causantic.errors import DatabaseBusy
    from causantic.ingest import pipeline
    from causantic.store import open_store

    from .conftest import SAMPLES

    monkeypatch.setattr(pipeline, "_BUSY_WAIT_S", 1.0)
    db = tmp_path / "memory.db"
    with open_store(db):
        pass
    holder = subprocess.Popen([PYTHON, "-c", HOLDER, str(db), other, "4"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        redact = lambda text: (text, 0)  # noqa: E731
        with open_store(db, busy_timeout_ms=300) as store:
            if other == "stuck":
                with pytest.raises(DatabaseBusy):
                    pipeline.ingest_paths(store, [SAMPLES], redact, readers=1)
            else:
                report = pipeline.ingest_paths(store, [SAMPLES], redact, readers=1)
                assert report.files_read > 0 and not report.problems
    finally:
        holder.wait(30)
        if holder.stdout is not None:
            holder.stdout.close()


def test_an_ingest_with_a_deadline_stops_waiting_for_a_committing_writer(tmp_path: Path):
    """A hook that must answer in time passes a deadline: past it the ingest gives up,
    though the other writer keeps committing (without one it would wait for that writer)."""
    from causantic.errors import DatabaseBusy
    from causantic.ingest import pipeline
    from causantic.store import open_store

    from .conftest import SAMPLES

    db = tmp_path / "memory.db"
    with open_store(db):
        pass
    holder = subprocess.Popen([PYTHON, "-c", HOLDER, str(db), "committing", "20"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        redact = lambda text: (text, 0)  # noqa: E731
        with open_store(db, busy_timeout_ms=300) as store, pytest.raises(DatabaseBusy):
            pipeline.ingest_paths(store, [SAMPLES], redact, readers=1,
                                  deadline=time.monotonic() + 1.0)
        assert holder.poll() is None  # given up on while the other writer was still at it
    finally:
        holder.kill()
        holder.wait(30)
        if holder.stdout is not None:
            holder.stdout.close()

"""`causantic import --from claude-mem | episodic-memory`: other tools' stores, read without them.

The fixtures are built from the tools' published schemas and layouts: a claude-mem SQLite file
made with the CREATE TABLE statements of claude-mem v13.15.3 (thedotmack/claude-mem
e2d1df569, src/services/sqlite/SessionStore.ts), one with the older column names of its
docs (docs/public/architecture/database.mdx), and an episodic-memory archive folder in the
layout of obra/episodic-memory v1.4.0 (src/paths.ts, src/sync.ts) holding the bundled sample
transcripts and a summary.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import apsw
import pytest

from causantic.cli import main
from causantic.config import load_settings, peer_store_path
from causantic.ingest.run import run_ingest
from causantic.retrieval.search import search
from causantic.store import open_store

from .conftest import SAMPLES
from .helpers import rows as _rows

CLAUDE_MEM_V13 = """
CREATE TABLE sdk_sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  content_session_id TEXT NOT NULL,
  memory_session_id TEXT UNIQUE,
  project TEXT NOT NULL,
  platform_source TEXT NOT NULL DEFAULT 'claude',
  user_prompt TEXT,
  started_at TEXT NOT NULL,
  started_at_epoch INTEGER NOT NULL,
  completed_at TEXT,
  completed_at_epoch INTEGER,
  status TEXT NOT NULL DEFAULT 'active' CHECK(status IN ('active', 'completed', 'failed')),
  worker_port INTEGER,
  prompt_counter INTEGER DEFAULT 0,
  custom_title TEXT
);
CREATE TABLE observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL,
  project TEXT NOT NULL,
  text TEXT,
  type TEXT NOT NULL,
  title TEXT,
  subtitle TEXT,
  facts TEXT,
  narrative TEXT,
  concepts TEXT,
  files_read TEXT,
  files_modified TEXT,
  prompt_number INTEGER,
  discovery_tokens INTEGER DEFAULT 0,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL,
  FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE TABLE session_summaries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL,
  project TEXT NOT NULL,
  request TEXT,
  investigated TEXT,
  learned TEXT,
  completed TEXT,
  next_steps TEXT,
  files_read TEXT,
  files_edited TEXT,
  notes TEXT,
  prompt_number INTEGER,
  discovery_tokens INTEGER DEFAULT 0,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL,
  FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE TABLE user_prompts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_db_id INTEGER,
  content_session_id TEXT NOT NULL,
  prompt_number INTEGER NOT NULL,
  prompt_text TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL,
  FOREIGN KEY(session_db_id) REFERENCES sdk_sessions(id) ON DELETE CASCADE
);
CREATE VIRTUAL TABLE observations_fts USING fts5(
  title, subtitle, narrative, text, facts, concepts, content='observations', content_rowid='id'
);
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
  INSERT INTO observations_fts(rowid, title, subtitle, narrative, text, facts, concepts)
  VALUES (new.id, new.title, new.subtitle, new.narrative, new.text, new.facts, new.concepts);
END;
"""

SESSION_A = "5a0c2a8e-1111-4aaa-8bbb-00000000000a"
SESSION_B = "5a0c2a8e-2222-4aaa-8bbb-00000000000b"
T0 = 1_771_000_000_000  # 2026-02-13T16:26:40Z, in milliseconds like claude-mem's Date.now()
SECRET = "sk-proj-Zq8v3LmN5pR7tW9yB2dF4hJ6kA1sC3eG5iK7mO9qS1uW3yA5cE7gI9"


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def make_claude_mem(path: Path) -> Path:
    """Two sessions of claude-mem v13: prompts, observations (one holding a key), summaries."""
    conn = apsw.Connection(str(path))
    conn.execute(CLAUDE_MEM_V13)
    sessions = [(SESSION_A, "mem-a", "billing-api", "Fix the flaky invoice retry test", T0),
                (SESSION_B, "mem-b", "web-app", "Add dark mode toggle", T0 + 86_400_000)]
    for content, memory, project, prompt, start in sessions:
        conn.execute("INSERT INTO sdk_sessions(content_session_id, memory_session_id, project,"
                     " user_prompt, started_at, started_at_epoch, completed_at,"
                     " completed_at_epoch, status) VALUES (?,?,?,?,?,?,?,?, 'completed')",
                     (content, memory, project, prompt, _iso(start), start,
                      _iso(start + 3_600_000), start + 3_600_000))
        conn.execute("INSERT INTO user_prompts(session_db_id, content_session_id, prompt_number,"
                     " prompt_text, created_at, created_at_epoch) VALUES"
                     " ((SELECT id FROM sdk_sessions WHERE content_session_id = ?), ?, 1, ?, ?, ?)",
                     (content, content, prompt, _iso(start + 1_000), start + 1_000))
    observations = [
        ("mem-a", "billing-api", "bugfix", "Retry jitter could go negative",
         "InvoiceRetryBackoff computed jitter from a signed random", "The test waited for a "
         "negative delay; clamped jitter at zero in backoff.go.",
         ["jitter is now clamped to [0, base)", "TestInvoiceRetryBackoff passes 500/500"],
         ["retry", "backoff"], ["internal/retry/backoff.go"], ["internal/retry/backoff.go"],
         T0 + 600_000),
        ("mem-a", "billing-api", "discovery", "Stripe key lives in .env.local",
         None, f"The deploy script reads STRIPE_KEY; found OPENAI_API_KEY={SECRET} in the "
         "shell history while looking.", [], ["config"], [".env.local"], [], T0 + 900_000),
        ("mem-b", "web-app", "feature", "Dark mode toggle in settings",
         "Uses prefers-color-scheme by default", "Added a ThemeToggle component persisted in "
         "localStorage.", ["toggle persists across reloads"], ["ui"], [],
         ["src/ThemeToggle.tsx"], T0 + 86_400_000 + 1_200_000),
    ]
    for memory, project, kind, title, subtitle, narrative, facts, concepts, read, modified, at \
            in observations:
        conn.execute("INSERT INTO observations(memory_session_id, project, type, title, subtitle,"
                     " narrative, facts, concepts, files_read, files_modified, prompt_number,"
                     " created_at, created_at_epoch) VALUES (?,?,?,?,?,?,?,?,?,?,1,?,?)",
                     (memory, project, kind, title, subtitle, narrative, json.dumps(facts),
                      json.dumps(concepts), json.dumps(read), json.dumps(modified), _iso(at), at))
    conn.execute("INSERT INTO session_summaries(memory_session_id, project, request, learned,"
                 " completed, next_steps, files_edited, created_at, created_at_epoch) VALUES"
                 " ('mem-a', 'billing-api', 'Fix the flaky invoice retry test',"
                 " 'Negative jitter made the backoff test flaky',"
                 " 'Clamped jitter; test stable', 'Add idempotency keys to CreateInvoice',"
                 " '[\"internal/retry/backoff.go\"]', ?, ?)", (_iso(T0 + 3_500_000), T0 + 3_500_000))
    conn.close()
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_claude_mem_records_become_chunks_with_their_times_projects_and_source(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    source = make_claude_mem(tmp_path / "claude-mem.db")
    before = _digest(source)
    db = tmp_path / "memory.db"
    assert main(["--db", str(db), "import", "--from", "claude-mem", str(source), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["read"] == {"sdk_sessions": 2, "observations": 3, "session_summaries": 1,
                              "user_prompts": 2}
    assert report["chunks_added"] == 6 and report["redactions"] >= 1
    assert _digest(source) == before, "the other tool's database is only read"

    sessions = _rows(db, "SELECT id, project, title, start_time FROM sessions ORDER BY id")
    assert sessions == [
        (f"claude-mem:{SESSION_A}", "billing-api", "Fix the flaky invoice retry test",
         _iso(T0 + 1_000)),
        (f"claude-mem:{SESSION_B}", "web-app", "Add dark mode toggle", _iso(T0 + 86_401_000))]
    chunks = _rows(db, "SELECT session_id, kind, start_time, text, meta FROM chunks"
                       " ORDER BY session_id, offset, part")
    assert [c[1] for c in chunks[:4]] == ["turn", "turn", "turn", "summary"]
    assert chunks[1][2] == _iso(T0 + 600_000)
    assert chunks[1][3].startswith("[claude-mem bugfix] Retry jitter could go negative")
    assert "- TestInvoiceRetryBackoff passes 500/500" in chunks[1][3]
    meta = json.loads(chunks[1][4])
    assert meta["source"] == "claude-mem" and meta["source_table"] == "observations"
    assert meta["files"] == ["internal/retry/backoff.go"]
    assert all(SECRET not in c[3] for c in chunks) and "[REDACTED" in chunks[2][3]
    assert _rows(db, "SELECT count(*) FROM edges WHERE kind = 'next'")[0][0] == 4

    with open_store(db, readonly=True) as store:
        hits = search(store, "negative jitter backoff", mode="keyword", project="billing-api")
    assert hits.results and hits.results[0].session_id == f"claude-mem:{SESSION_A}"

    assert main(["--db", str(db), "import", "--from", "claude-mem", str(source), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["chunks_added"] == 0 and again["chunks_present"] == 6 and again["edges_added"] == 0


def test_claude_mem_dry_run_writes_nothing_and_older_column_names_are_read(tmp_path: Path):
    source = tmp_path / "old.db"
    conn = apsw.Connection(str(source))
    conn.execute("""
        CREATE TABLE sdk_sessions (id INTEGER PRIMARY KEY AUTOINCREMENT,
          sdk_session_id TEXT UNIQUE NOT NULL, claude_session_id TEXT, project TEXT NOT NULL,
          prompt_counter INTEGER DEFAULT 0, status TEXT NOT NULL DEFAULT 'active',
          created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL, completed_at TEXT,
          completed_at_epoch INTEGER, last_activity_at TEXT, last_activity_epoch INTEGER);
        CREATE TABLE observations (id INTEGER PRIMARY KEY AUTOINCREMENT,
          session_id TEXT NOT NULL, sdk_session_id TEXT NOT NULL, claude_session_id TEXT,
          project TEXT NOT NULL, prompt_number INTEGER, tool_name TEXT NOT NULL,
          correlation_id TEXT, title TEXT, subtitle TEXT, narrative TEXT, text TEXT,
          facts TEXT, concepts TEXT, type TEXT, files_read TEXT, files_modified TEXT,
          created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL);
        INSERT INTO sdk_sessions(sdk_session_id, claude_session_id, project, created_at,
          created_at_epoch) VALUES ('sdk-1', 'claude-1', 'old-proj', '2025-10-01T10:00:00.000Z',
          1759312800000);
        INSERT INTO observations(session_id, sdk_session_id, project, tool_name, title,
          narrative, type, created_at, created_at_epoch) VALUES ('s', 'sdk-1', 'old-proj',
          'Edit', 'Renamed the config loader', 'loadConfig is now readSettings', 'refactor',
          '2025-10-01T10:05:00.000Z', 1759313100000);
    """)
    conn.close()
    db = tmp_path / "memory.db"
    assert main(["--db", str(db), "import", "--from", "claude-mem", str(source), "--dry-run"]) == 0
    assert not db.exists(), "a dry run creates no database"
    with open_store(db):
        pass
    assert main(["--db", str(db), "import", "--from", "claude-mem", str(source), "--dry-run"]) == 0
    assert _rows(db, "SELECT count(*) FROM chunks")[0][0] == 0
    assert main(["--db", str(db), "import", "--from", "claude-mem", str(source)]) == 0
    assert _rows(db, "SELECT session_id, project, start_time FROM chunks") == [
        ("claude-mem:claude-1", "old-proj", "2025-10-01T10:05:00.000Z")]


def test_not_a_claude_mem_database_is_refused_with_one_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    other = tmp_path / "other.db"
    apsw.Connection(str(other)).execute("CREATE TABLE t(x)")
    db = tmp_path / "memory.db"
    for path, words in ((junk, "not a SQLite database"), (other, "not a claude-mem database"),
                        (tmp_path / "missing.db", "no database at")):
        assert main(["--db", str(db), "import", "--from", "claude-mem", str(path)]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err


def test_default_locations_follow_each_tools_own_settings(tmp_path: Path):
    env = {"HOME": str(tmp_path)}
    assert peer_store_path("claude-mem", env) == tmp_path / ".claude-mem" / "claude-mem.db"
    assert peer_store_path("claude-mem", {**env, "CLAUDE_MEM_DATA_DIR": "~/cm"}) == \
        tmp_path / "cm" / "claude-mem.db"
    assert peer_store_path("episodic-memory", env) == \
        tmp_path / ".config" / "superpowers" / "conversation-archive"
    assert peer_store_path("episodic-memory", {**env, "XDG_CONFIG_HOME": "/x"}) == \
        Path("/x/superpowers/conversation-archive")
    assert peer_store_path("episodic-memory", {**env, "EPISODIC_MEMORY_CONFIG_DIR": "/e"}) == \
        Path("/e/conversation-archive")


# -- episodic-memory -------------------------------------------------------------------------


S1 = "11111111-aaaa-4bbb-8ccc-000000000001"


def make_archive(root: Path) -> Path:
    """episodic-memory's conversation-archive: copied transcripts and a summary."""
    archive = root / "conversation-archive"
    shutil.copytree(SAMPLES, archive)
    project = archive / "-home-dev-acme-api"
    (project / f"{S1}-summary.txt").write_text(
        "Fixed the flaky TestRetryBackoff by making jitter non-negative; found risky retries "
        "in CreateInvoice.\n")
    return archive


def test_episodic_memory_archive_is_ingested_once_and_its_summary_kept(tmp_path: Path,
                                                                        capsys):
    archive = make_archive(tmp_path)
    db = tmp_path / "memory.db"
    assert main(["--db", str(db), "import", "--from", "episodic-memory", str(archive),
                 "--dry-run"]) == 0
    assert "Would import" in capsys.readouterr().out and not db.exists()
    assert main(["--db", str(db), "import", "--from", "episodic-memory", str(archive),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["read"] == {"transcripts": 4, "summaries": 1} and report["chunks_added"] > 5

    direct = tmp_path / "direct.db"
    run_ingest(load_settings(db=direct, env={"HOME": str(tmp_path)}), [SAMPLES])
    transcript_chunks = "SELECT id, session_id, project, start_time, text FROM chunks" \
                        " WHERE session_id NOT LIKE 'episodic-memory:%' ORDER BY id"
    assert _rows(db, transcript_chunks) == _rows(direct, transcript_chunks), \
        "the archive's transcripts give the chunks the transcripts themselves give"
    sources = _rows(db, "SELECT DISTINCT json_extract(meta, '$.source') FROM chunks")
    assert sources == [("episodic-memory",)]
    summary = _rows(db, "SELECT c.session_id, c.project, c.kind, c.start_time, c.text FROM chunks c"
                        " WHERE c.session_id = ?", f"episodic-memory:{S1}")
    end = _rows(db, "SELECT end_time, project FROM sessions WHERE id = ?", S1)[0]
    assert len(summary) == 1 and summary[0][1] == end[1] == "acme-api"
    assert summary[0][2] == "summary" and summary[0][3] == end[0]
    assert "non-negative" in summary[0][4]

    assert main(["--db", str(db), "import", "--from", "episodic-memory", str(archive),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks_added"] == 0
    settings = load_settings(db=db, env={"HOME": str(tmp_path)})
    assert run_ingest(settings, [SAMPLES]).chunks_added == 0, \
        "the same sessions from ~/.claude/projects are not stored twice"


def test_not_an_archive_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    (tmp_path / "empty").mkdir()
    db = tmp_path / "memory.db"
    assert main(["--db", str(db), "import", "--from", "episodic-memory",
                 str(tmp_path / "empty")]) == 2
    assert "holds no transcripts" in capsys.readouterr().err
    assert main(["--db", str(db), "import"]) == 2
    assert "needs a FILE" in capsys.readouterr().err


def _exclude(home: Path, *patterns: str) -> None:
    (home / ".causantic").mkdir(parents=True, exist_ok=True)
    (home / ".causantic" / "config.toml").write_text(
        "[ingest]\nexclude = [" + ", ".join(json.dumps(p) for p in patterns) + "]\n")


def test_imports_from_other_tools_leave_out_work_kept_out_of_memory(
        tmp_path: Path, private_home: Path, capsys: pytest.CaptureFixture[str]):
    """`[ingest] exclude` holds for imports as for ingest: a claude-mem project by its name,
    and an episodic-memory archive's transcripts *and* their summary by their folder."""
    _exclude(private_home, "billing-*", "/home/dev/acme-api")
    db = tmp_path / "memory.db"
    source = make_claude_mem(tmp_path / "claude-mem.db")
    assert main(["--db", str(db), "import", "--from", "claude-mem", str(source), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kept_out"] == {"[ingest] exclude 'billing-*'": 1}
    assert _rows(db, "SELECT DISTINCT project FROM chunks") == [("web-app",)]
    assert report["chunks_added"] == 2  # web-app's prompt and observation only

    archive = make_archive(tmp_path)
    assert main(["--db", str(db), "import", "--from", "episodic-memory", str(archive)]) == 0
    out = capsys.readouterr().out
    assert "Not imported: 4 transcript files kept out of memory" in out, out
    assert "Not imported: 1 session kept out of memory ([ingest] exclude '/home/dev/acme-api')" \
        in out, out
    assert _rows(db, "SELECT count(*) FROM chunks WHERE project = 'acme-api'") == [(0,)]
    assert _rows(db, "SELECT count(*) FROM chunks WHERE text LIKE '%non-negative%'") == [(0,)]

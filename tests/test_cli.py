"""The command line: outputs, JSON contracts, one-line errors and exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import SAMPLES
from .helpers import run_cli as run


def test_ingest_prints_what_was_stored(tmp_path: Path):
    out = run("--db", str(tmp_path / "m.db"), "ingest", "--no-embed", str(SAMPLES))
    assert out.returncode == 0
    assert "Ingested 4 transcript files" in out.stdout and "secrets redacted" in out.stdout


def test_ingest_defaults_to_claude_projects_from_the_environment(tmp_path: Path):
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    os.symlink(SAMPLES / "-home-dev-acme-api", claude / "projects" / "-home-dev-acme-api")
    out = run("ingest", "--no-embed", "--json", env={"CLAUDE_CONFIG_DIR": str(claude),
                                       "CAUSANTIC_DB": str(tmp_path / "env.db")})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["files"] == 4
    assert (tmp_path / "env.db").exists()


def test_stats_json_counts(sample_db: Path):
    out = run("--db", str(sample_db), "stats", "--json")
    doc = json.loads(out.stdout)
    assert {"sessions", "chunks", "edges", "vectors", "clusters", "projects"} <= set(doc)
    assert doc["sessions"] == 3 and doc["projects"] == 1 and doc["redactions"] >= 3
    # its size on disk, as the file holds it and as people read it
    assert doc["bytes"] == sample_db.stat().st_size
    text = run("--db", str(sample_db), "stats").stdout
    assert text.startswith(f"Memory at {sample_db} (") and " KB)\n" in text


def test_stats_of_one_project_add_up_to_all(shared_db: Path):
    """`stats PROJECT` counts what that project holds; the projects' counts sum to the whole."""
    every = json.loads(run("--db", str(shared_db), "stats", "--json").stdout)
    names = [p["project"] for p in json.loads(
        run("--db", str(shared_db), "list-projects", "--json").stdout)["projects"]]
    assert len(names) >= 3
    each = [json.loads(run("--db", str(shared_db), "stats", name, "--json").stdout)
            for name in names]
    assert [d["project"] for d in each] == names
    for key in ("sessions", "chunks", "edges", "subagent_chunks", "redactions", "files"):
        assert sum(int(d[key]) for d in each) == every[key], key
    assert all(0 < d["chunks"] < every["chunks"] for d in each)
    text = run("--db", str(shared_db), "stats", "--project", names[0]).stdout
    assert text.startswith(f"Memory of project {names[0]} at ") and "projects:" not in text
    typo = run("--db", str(shared_db), "stats", names[0][:-1] + "x")
    assert typo.returncode == 2 and "closest" in typo.stderr


def test_search_text_and_json_agree(sample_db: Path):
    text = run("--db", str(sample_db), "search", "telemetry exporter shutdown")
    doc = json.loads(run("--db", str(sample_db), "search", "telemetry exporter shutdown", "--json").stdout)
    assert text.returncode == 0
    assert text.stdout.strip() == doc["text"].strip()
    assert doc["results"][0]["session_id"].startswith("33333333")


def test_db_and_debug_work_after_the_command_too(sample_db: Path, tmp_path: Path):
    before = run("--db", str(sample_db), "list-projects", "--json")
    after = run("list-projects", "--json", "--db", str(sample_db))
    assert after.returncode == 0 and after.stdout == before.stdout
    nested = run("topics", "show", "1", "--db", str(sample_db))
    assert "unrecognized arguments" not in nested.stderr
    # The one after the command wins; --debug there turns on tracebacks.
    empty = tmp_path / "empty.db"
    missing = run("--db", str(sample_db), "stats", "--db", str(empty))
    assert missing.returncode == 1 and "run `causantic ingest`" in missing.stderr
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database" * 100)
    plain = run("stats", "--db", str(corrupt))
    debug = run("stats", "--db", str(corrupt), "--debug")
    assert "Traceback" not in plain.stderr and "Traceback" in debug.stderr


def test_list_projects_and_sessions(sample_db: Path):
    projects = json.loads(run("--db", str(sample_db), "list-projects", "--json").stdout)
    assert [p["project"] for p in projects["projects"]] == ["acme-api"]
    sessions = run("--db", str(sample_db), "list-sessions", "--project", "acme-api")
    assert sessions.returncode == 0 and "33333333" in sessions.stdout
    # A titled session shows its title; one without, what it set out to do.
    listed = json.loads(run("--db", str(sample_db), "list-sessions", "--project", "acme-api",
                            "--json").stdout)["sessions"]
    titled = [s for s in listed if s["title"]]
    untitled = [s for s in listed if not s["title"]]
    assert titled and untitled and all(s["opening"] is None for s in titled)
    for s in untitled:
        assert s["opening"] and not s["opening"].startswith("/")
        line = next(x for x in sessions.stdout.splitlines() if s["session_id"] in x)
        assert f' — "{" ".join(s["opening"].split())[:40]}' in line
    for s in titled:
        assert next(x for x in sessions.stdout.splitlines()
                    if s["session_id"] in x).endswith(f" — {s['title']}")
    # The project may be named without --project, as people type it.
    assert run("--db", str(sample_db), "list-sessions", "acme-api").stdout == sessions.stdout
    for command in ("lessons", "memories"):
        flag = run("--db", str(sample_db), command, "--project", "acme-api", "--json")
        word = run("--db", str(sample_db), command, "acme-api", "--json")
        assert flag.returncode == word.returncode == 0 and flag.stdout == word.stdout
        assert run("--db", str(sample_db), command, "nope").returncode == 2


@pytest.mark.parametrize(
    "args,code,message",
    [
        (("ingest", "/no/such/path"), 2, "no such file or folder"),
        (("list-sessions", "--project", "nope"), 2, "no project 'nope'; projects in memory: acme-api"),
        (("list-sessions", "acme-api", "--project", "other"), 2, "two projects given"),
        (("search", "x", "--limit", "0"), 2, "must be at least 1"),
    ],
)
def test_errors_are_one_line_with_exit_codes(sample_db: Path, args, code, message):
    out = run("--db", str(sample_db), *args)
    assert out.returncode == code
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_corrupt_database_is_one_line_exit_1(tmp_path: Path):
    db = tmp_path / "bad.db"
    db.write_bytes(b"garbage" * 1000)
    out = run("--db", str(db), "stats")
    assert out.returncode == 1
    assert len(out.stderr.strip().splitlines()) == 1 and "damaged" in out.stderr


def test_missing_database_says_to_ingest(tmp_path: Path):
    out = run("--db", str(tmp_path / "none.db"), "search", "x")
    assert out.returncode == 1 and "causantic ingest" in out.stderr


def test_bad_config_file_is_a_usage_error(tmp_path: Path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text("this is = = not toml")
    out = run("stats", env={"CAUSANTIC_HOME": str(home)})
    assert out.returncode == 2 and "not valid TOML" in out.stderr

"""Rough edges a new user hits on the command line (issue 13 §5), each pinned by a test."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from causantic.cli import build_parser, report_line
from causantic.config import load_settings
from causantic.errors import Interrupted
from causantic.ingest.pipeline import IngestReport
from causantic.progress import ProgressLine
from causantic.retrieval.browse import SessionInfo, render_sessions
from causantic.store import open_store

from .conftest import PYTHON, REPO, SAMPLES
from .helpers import run_cli as run

SAMPLE_SESSION = "33333333-aaaa-4bbb-8ccc-000000000003"


def _one_line(out: subprocess.CompletedProcess[str], code: int) -> str:
    assert out.returncode == code, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


def _transcript(path: Path, session: str, cwd: str, times: list[str | None]) -> Path:
    """A small real-format transcript: one prompt and one answer per entry of ``times``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, ts in enumerate(times):
        for role, content in (("user", f"Question number {i} about the zebrafish parser?"),
                              ("assistant", [{"type": "text", "text": f"Answer {i}: fixed."}])):
            record = {"type": role, "sessionId": session, "cwd": cwd, "uuid": f"{session}-{i}-{role}",
                      "message": {"role": role, "content": content}}
            if ts is not None:
                record["timestamp"] = ts
            lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


# -- empty and long queries ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["search", "recall", "predict"])
@pytest.mark.parametrize("query", ["", "   \t "])
def test_an_empty_query_is_a_usage_error(sample_db: Path, command: str, query: str):
    line = _one_line(run("--db", str(sample_db), command, query), 2)
    assert "query is empty" in line


@pytest.mark.parametrize("command", ["search", "recall", "predict"])
def test_a_query_that_looks_like_a_flag_is_shown_how_to_pass_it(sample_db: Path, command: str):
    """argparse takes `--no-verify` for an unknown option and then says the query is missing;
    the error names the way that works, and that way finds the text."""
    out = run("--db", str(sample_db), command, "--no-verify")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f'goes after "--": causantic {command} -- --no-verify' in out.stderr
    assert "goes after" not in run("--db", str(sample_db), command, "--limt", "3", "x").stderr
    worked = run("--db", str(sample_db), command, "--mode" if command == "search" else "--json",
                 *(["keyword"] if command == "search" else []), "--", "--no-verify")
    assert worked.returncode == 0, worked.stderr


def test_a_very_long_query_is_shortened_in_the_header(sample_db: Path):
    query = "telemetry exporter shutdown " * 40
    out = run("--db", str(sample_db), "search", query, "--json", "--mode", "keyword")
    doc = json.loads(out.stdout)
    first = doc["text"].splitlines()[0]
    assert first.startswith("Found ") and len(first) < 180 and "…" in first
    assert doc["query"] == query  # the JSON still carries the query as given


def test_one_result_is_singular(sample_db: Path):
    out = run("--db", str(sample_db), "search", "telemetry exporter shutdown", "--limit", "1",
              "--mode", "keyword")
    assert out.stdout.startswith("Found 1 result for ")


# -- forget by the prefix listings show ----------------------------------------------------


def test_forget_accepts_the_eight_character_prefix_listings_show(sample_db: Path):
    listing = run("--db", str(sample_db), "list-sessions", "--project", "acme-api").stdout
    assert f"- {SAMPLE_SESSION} (" in listing
    out = run("--db", str(sample_db), "forget", "--session", SAMPLE_SESSION[:8], "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["sessions"] == [SAMPLE_SESSION]
    gone = run("--db", str(sample_db), "forget", "--session", SAMPLE_SESSION[:8], "--yes")
    assert gone.returncode == 0 and "Forgot" in gone.stdout
    with open_store(sample_db, readonly=True) as store:
        assert store.conn.execute("SELECT count(*) FROM chunks WHERE session_id = ?",
                                  (SAMPLE_SESSION,)).fetchone()[0] == 0
        assert store.conn.execute("SELECT key FROM forgotten WHERE scope = 'session'"
                                  ).fetchall() == [(SAMPLE_SESSION,)]


@pytest.mark.parametrize("prefix,message", [
    ("3333", "too short"),
    ("99999999", "no session"),
    ("1111111", "too short"),
])
def test_forget_rejects_short_unknown_prefixes_in_one_line(sample_db: Path, prefix, message):
    assert message in _one_line(run("--db", str(sample_db), "forget", "--session", prefix), 2)


def test_an_ambiguous_prefix_names_the_candidates(tmp_path: Path):
    db = tmp_path / "m.db"
    for sid in ("abcdef01-0000-4000-8000-000000000001", "abcdef01-0000-4000-8000-000000000002"):
        _transcript(tmp_path / "t" / f"{sid}.jsonl", sid, "/tmp/zeb",
                    ["2026-03-01T10:00:00.000Z"])
    assert run("--db", str(db), "ingest", "--no-embed", str(tmp_path / "t")).returncode == 0
    line = _one_line(run("--db", str(db), "forget", "--session", "abcdef01"), 2)
    assert "several sessions" in line and "abcdef01-0000-4000-8000-000000000001" in line


# -- dates in listings ---------------------------------------------------------------------


def test_a_session_over_several_days_shows_its_end_date(tmp_path: Path):
    db, sid = tmp_path / "m.db", "5e551011-0000-4000-8000-000000000001"
    _transcript(tmp_path / "t" / f"{sid}.jsonl", sid, "/tmp/zeb",
                ["2026-03-01T22:00:00.000Z", "2026-03-03T08:15:00.000Z"])
    assert run("--db", str(db), "ingest", "--no-embed", str(tmp_path / "t")).returncode == 0
    out = run("--db", str(db), "list-sessions", "--project", "zeb")
    assert "(2026-03-01 22:00 – 2026-03-03 08:15," in out.stdout, out.stdout


def test_same_day_sessions_show_the_end_time_alone_and_singular_counts():
    s = SessionInfo("s1", "p", "2026-03-01T09:00:00Z", "2026-03-01T09:30:00Z", 1, 1, None, None,
                    None)
    assert "(2026-03-01 09:00 – 09:30, 1 chunk, 1 token)" in render_sessions("p", [s])


def test_sessions_show_their_branch_and_linked_worktree(shared_db: Path):
    """Which session to reconstruct is often told by its branch or worktree; the main
    checkout (named like the project) is not named."""
    out = run("--db", str(shared_db), "list-sessions", "cli").stdout
    line = next(x for x in out.splitlines() if x.startswith("- c010174c"))
    assert "tokens, branch alex/fix-gemini-checkpointing, worktree 3)" in line
    line = next(x for x in out.splitlines() if x.startswith("- 61cb3ba8"))
    assert "tokens, branch 20260209-fish-completions)" in line
    s = SessionInfo("s1", "p", "2026-03-01T09:00:00Z", "2026-03-01T09:30:00Z", 1, 1, None, "main",
                    "/home/me/p")
    assert "1 token, branch main)" in render_sessions("p", [s])
    (first,) = [x for x in json.loads(run("--db", str(shared_db), "list-sessions", "spotter",
                                          "--json").stdout)["sessions"]
                if x["session_id"].startswith("8463c716")]
    assert first["checkout"].endswith("/spotter-worktrees/spotter-fum")


def test_records_without_timestamps_are_dated_by_the_file_never_1970(tmp_path: Path):
    db, sid = tmp_path / "m.db", "0d47e000-0000-4000-8000-000000000001"
    path = _transcript(tmp_path / "t" / f"{sid}.jsonl", sid, "/tmp/zeb", [None, None])
    when = time.mktime((2026, 2, 14, 12, 0, 0, 0, 0, -1))
    os.utime(path, (when, when))
    assert run("--db", str(db), "ingest", "--no-embed", str(tmp_path / "t")).returncode == 0
    out = run("--db", str(db), "list-sessions", "--project", "zeb", "--json")
    (session,) = json.loads(out.stdout)["sessions"]
    assert session["start_time"].startswith("2026-02-14")
    assert "1970" not in run("--db", str(db), "list-sessions", "--project", "zeb").stdout


# -- the project of the current folder -----------------------------------------------------


def test_reconstruct_and_list_sessions_default_to_the_current_folders_project(
    sample_db: Path, tmp_path: Path
):
    here = tmp_path / "acme-api"  # not a git repository: the project is the folder's name
    here.mkdir()
    listing = run("--db", str(sample_db), "list-sessions", cwd=here)
    assert listing.returncode == 0 and SAMPLE_SESSION in listing.stdout
    timeline = run("--db", str(sample_db), "reconstruct", "--json", cwd=here)
    assert timeline.returncode == 0, timeline.stderr
    assert {r["project"] for r in json.loads(timeline.stdout)["results"]} == {"acme-api"}


def test_reconstruct_of_a_session_needs_no_project_wherever_it_runs(sample_db: Path, tmp_path: Path):
    here = tmp_path / "elsewhere"  # a folder with no memory: its project would be exit 2
    here.mkdir()
    timeline = run("--db", str(sample_db), "reconstruct", "--session", SAMPLE_SESSION[:8], "--json",
                   cwd=here)
    assert timeline.returncode == 0, timeline.stderr
    results = json.loads(timeline.stdout)["results"]
    assert results and {r["session_id"] for r in results} == {SAMPLE_SESSION}
    line = _one_line(run("--db", str(sample_db), "reconstruct", "--session", "99999999", cwd=here), 2)
    assert 'no session starting with "99999999"' in line


def test_a_folder_without_memory_says_which_project_it_is_and_what_exists(
    sample_db: Path, tmp_path: Path
):
    here = tmp_path / "elsewhere"
    here.mkdir()
    for command in ("list-sessions", "reconstruct"):
        line = _one_line(run("--db", str(sample_db), command, cwd=here), 2)
        assert "'elsewhere'" in line and "--project" in line and "acme-api" in line
    # a question needs no project: search answers it from any project's sessions
    asked = run("--db", str(sample_db), "reconstruct", "the idempotency key header", cwd=here)
    assert asked.returncode == 0, asked.stderr
    assert "# Session " in asked.stdout and " of project acme-api (" in asked.stdout


# -- progress and interruption -------------------------------------------------------------


def test_progress_off_a_terminal_is_plain_lines_every_few_seconds():
    now = [0.0]
    stream = io.StringIO()
    line = ProgressLine(stream, interval=5.0, clock=lambda: now[0], terminal=False)
    for step in range(20):  # one update per second for 20 s
        line.update(f"embed: {step}/20 chunks")
        now[0] += 1.0
    line.clear()
    written = stream.getvalue()
    assert "\r" not in written and "\x1b" not in written
    assert written.splitlines() == [f"embed: {n}/20 chunks" for n in (0, 5, 10, 15)]


def test_progress_on_a_terminal_redraws_one_line():
    stream = io.StringIO()
    line = ProgressLine(stream, terminal=True)
    line.update("ingest: 1/2 files")
    line.update("ingest: 2/2 files")
    line.clear()
    assert stream.getvalue() == ("\r\x1b[Kingest: 1/2 files\r\x1b[Kingest: 2/2 files\r\x1b[K")


def test_ingest_into_a_pipe_shows_progress_without_escape_codes(tmp_path: Path):
    out = run("--db", str(tmp_path / "m.db"), "ingest", "--no-embed", str(SAMPLES))
    assert out.returncode == 0
    assert "ingest: 1/4 files" in out.stderr and "\x1b" not in out.stderr


def test_an_interrupted_ingest_says_what_it_kept(tmp_path: Path, monkeypatch):
    import causantic.ingest.run as pipeline

    def stopped_after_two_files(store, paths, redact, on_file, **options):  # the real callback
        report = IngestReport(files=5)
        report.chunks_added = 7
        on_file(None, report)
        on_file(None, report)
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "ingest_paths", stopped_after_two_files)
    with pytest.raises(Interrupted) as caught:
        pipeline.run_ingest(load_settings(db=tmp_path / "m.db"), [SAMPLES])
    assert str(caught.value) == ("ingest interrupted: 2 of 5 files read and kept (+7 chunks); "
                                 "run the same `causantic ingest` again to read the rest")
    assert caught.value.exit_code == 130


@pytest.fixture
def mid_db(tmp_path: Path, shared_transcripts: Path) -> Path:
    """109 chunks (4 batches): long enough to embed that another process can overlap it."""
    db = tmp_path / "mid.db"
    paths = [shared_transcripts / "entireio__cli" / "cd" / "95adddad32" / "0" / "full.jsonl"]
    out = run("--db", str(db), "ingest", "--no-embed", *map(str, paths))
    assert out.returncode == 0, out.stderr
    return db


def _chunks_and_vectors(db: Path) -> tuple[int, int]:
    with open_store(db, readonly=True) as store:
        chunks = store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        vectors = store.conn.execute("SELECT count(*) FROM chunk_vectors_meta").fetchone()[0]
    return int(chunks), int(vectors)


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([PYTHON, "-m", "causantic", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def _wait_for(proc: subprocess.Popen[str], marker: str, timeout: float = 120) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while marker not in seen:
        line = proc.stderr.readline()
        assert line or proc.poll() is None, f"exited before {marker!r}: {seen}"
        assert time.monotonic() < deadline, seen
        seen += line
    return seen


def test_an_interrupted_embed_keeps_its_batches_and_says_how_to_resume(mid_db: Path):
    proc = _start("--db", str(mid_db), "embed")
    _wait_for(proc, "embed: ")  # the first batch is committed
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    message = err.strip().splitlines()[-1]
    found = re.fullmatch(r"causantic: embed interrupted: (\d+) of (\d+) chunks embedded and "
                         r"kept; run `causantic embed` to embed the rest", message)
    assert found, err
    chunks, vectors = _chunks_and_vectors(mid_db)
    assert int(found[2]) == chunks and vectors >= int(found[1]) > 0 and vectors < chunks
    rest = json.loads(run("--db", str(mid_db), "embed", "--json").stdout)
    assert rest["todo"] == chunks - vectors and _chunks_and_vectors(mid_db)[1] == chunks


def test_two_concurrent_embeds_never_embed_a_chunk_twice(mid_db: Path):
    first = _start("--db", str(mid_db), "embed")
    _wait_for(first, "embed: ")  # the first is under way
    second = _start("--db", str(mid_db), "embed")
    out1, err1 = first.communicate(timeout=300)
    out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, err1 + err2
    chunks, vectors = _chunks_and_vectors(mid_db)
    assert vectors == chunks
    assert out1.startswith(f"Embedded {chunks} chunks (") and "skipped" not in out1, out1
    assert "another causantic process is embedding; waiting" in err2
    assert out2.strip() == "No chunks waiting for vectors.", "the second waited, found all done"


# -- the package and the README ------------------------------------------------------------


def test_pyproject_license_is_an_spdx_expression():
    """PEP 639: `license = {text = ...}` is deprecated by setuptools."""
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert any(r.startswith("setuptools>=77") for r in meta["build-system"]["requires"])


def test_ingest_summary_speaks_in_singular_for_one():
    report = IngestReport(files=1)
    report.chunks_added = report.edges_added = report.redactions = report.bad_lines = 1
    report.sessions.add("s")
    line = report_line(report)
    for part in ("1 transcript file (", "+1 chunk,", "+1 edge,", "1 session touched",
                 "1 secret redacted", "1 bad line skipped"):
        assert part in line, line


def _readme_commands() -> list[list[str]]:
    """Every `causantic ...` line of the README's shell blocks, as argv (comments dropped)."""
    commands, shell = [], None
    for raw in (REPO / "README.md").read_text().splitlines():
        if raw.startswith("```"):
            shell = None if shell is not None else raw[3:].strip() in ("", "bash", "sh", "console")
            continue
        line = raw.split(" #", 1)[0].split(" | ", 1)[0].strip()
        if shell and line.startswith("causantic ") and "[" not in line:
            commands.append(shlex.split(line)[1:])
    return commands


def test_every_readme_command_parses():
    commands = _readme_commands()
    assert len(commands) >= 15
    parser = build_parser()
    for argv in commands:
        try:
            parser.parse_args(argv)
        except SystemExit as exc:  # argparse's own exit on a bad option
            pytest.fail(f"README command does not parse: causantic {' '.join(argv)} ({exc})")


READ_ONLY = ("search", "recall", "predict", "reconstruct", "list-sessions", "list-projects",
             "stats", "topics", "forget", "hook-status")


def test_readme_query_commands_work_as_printed(shared_db: Path):
    """Run each read-only example of the README against the shared transcripts."""
    ran = 0
    for argv in _readme_commands():
        if argv[0] not in READ_ONLY or "--yes" in argv or argv[:2] == ["topics", "rebuild"]:
            continue
        out = run("--db", str(shared_db), *argv, env={"CAUSANTIC_MODEL_DIR": "/nonexistent"})
        assert out.returncode == 0, f"causantic {shlex.join(argv)}: {out.stderr}"
        ran += 1
    assert ran >= 10


def test_quickstart_ends_with_a_command_that_works(tmp_path: Path):
    """Without Claude Code history the quickstart ingests the samples; its last line runs."""
    archive = REPO / "dist" / "causantic.pyz"
    if not archive.exists():
        if os.environ.get("CI"):
            pytest.fail("dist/causantic.pyz missing: scripts/test builds it before pytest")
        pytest.skip("dist/causantic.pyz not built (scripts/test builds it)")
    tree = tmp_path / "checkout"
    (tree / "tests" / "data").mkdir(parents=True)
    subprocess.run(["cp", "-r", str(REPO / "scripts"), str(tree)], check=True)
    subprocess.run(["cp", "-r", str(SAMPLES), str(tree / "tests" / "data")], check=True)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHON": sys.executable,
           "CAUSANTIC_ARCHIVE": str(archive)}
    for name in ("CLAUDE_CONFIG_DIR", "CAUSANTIC_DB", "CAUSANTIC_HOME"):
        env.pop(name, None)
    out = subprocess.run(["bash", str(tree / "scripts" / "quickstart")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert "search" in last
    after = subprocess.run(["bash", "-c", last], capture_output=True, text=True, env=env,
                           timeout=300)
    assert after.returncode == 0, after.stderr
    assert re.match(r"Found \d+ results? for ", after.stdout.split("\n")[-1] if False else
                    after.stdout[after.stdout.find("Found"):]), after.stdout
    assert SAMPLE_SESSION[:8] in after.stdout

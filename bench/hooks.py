"""Hook latency: what Claude Code waits for at session start, compaction and session end.

Each sample is a fresh process with the hook JSON on stdin, timed from spawn to exit (what
Claude Code waits for), on a database of 10,000 chunks from ``bench.corpus`` (the real
transcripts, copied; ``tiny``: 300 chunks and fewer runs) with session states stored as
ingest stores them, vectors, and topics as embedding builds them (the briefing ends with the
project's active topics). The session starts in a linked worktree of that project whose last
session is older than the project's newest (`_in_worktrees`): the briefing's longer path, which
resumes the worktree's session and names the newer one. Rows:

- ``session-start`` through ``python -m causantic`` (the installed package; what
  ``causantic install`` writes for a pip install), the console script, and the archive with
  ``python -S`` when ``dist/causantic.pyz`` exists (the archive engineer benchmarks it in
  depth): briefing for the project with the most sessions.
- ``session-start`` with ``[memory] scope = "all"`` and ``"worktree"`` (``python -m
  causantic``, samples alternated): the same store with the project's sessions spread over
  the main checkout and two linked worktrees on disk, newest in the other worktree, so under
  "worktree" the briefing's connection is narrowed first; the two rows compare the scope.
- ``pre-tool-use`` on an Agent call and ``subagent-start`` (``[hooks] subagent_recall``):
  what starting a sub-agent waits for; the task is a real prompt of the busiest project.
- ``pre-compact`` / ``session-end``: the hook returns once it has started the detached ingest
  worker; the worker (ingest + embedding of a sample transcript) runs afterwards and is
  waited for between samples, so it does not slow the next sample down.

Every command runs once untimed first (page cache; the archive extracts itself on first use).

Besides wall time, the CPU time of the hook process (user + system) is reported: on a shared
machine it shows the hook's own cost even when the wall time is inflated by other load.
Target: session-start median under 60 ms; the original TypeScript tool took 355 ms here.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, cli_main, print_table, write_result

ORIGINAL_MS = 355.0
TARGET_MS = 60.0
TOPICS = 60  # topics of the bench store (`_with_topics`)
PYTHON = sys.executable
SAMPLES = REPO_ROOT / "tests" / "data" / "transcripts"


def run(tiny: bool = False) -> dict[str, Any]:
    """Measure every hook row (see the module docstring); print and write the results."""
    from bench.corpus import corpus

    runs = 2 if tiny else 20
    info = corpus(300 if tiny else 10_000, vectors=True)
    with tempfile.TemporaryDirectory(prefix="causantic-bench-hooks-") as tmp:
        db = _with_topics(_with_session_states(info.path, Path(tmp) / "memory.db"))
        project, _ = _busiest_project(db)
        cwd = _in_worktrees(db, project)
        env = _private_env(Path(tmp))
        payload = _start_payload(cwd)
        rows = []
        for label, argv in _session_start_commands(db):
            chars = _output_chars(argv, payload, env)  # also the warm-up (page cache, extraction)
            if chars is None:
                print(f"(skipped {label}: it printed no briefing; `causantic hook-status` says why,"
                      " e.g. an archive older than the database schema)")
                continue
            samples = [_time_process(argv, payload, env) for _ in range(runs)]
            rows.append(_row(label, samples, output=chars))
        rows += _scope_rows(db, project, Path(tmp), runs)
        rows += _subagent_rows(db, project, cwd, Path(tmp) / "subagents", runs)
        rows += _background_rows(Path(tmp), env, runs)
    for r in rows:
        r["vs original (355 ms)"] = (f"{ORIGINAL_MS / r['median_ms']:.1f}x faster"
                                     if r["hook"] == "session-start" else "")
    print_table(f"Hook wall time, {runs} fresh processes each, {info.chunks:,} chunks "
                f"(briefing for {project})", rows,
                ["hook", "command", "median_ms", "p95_ms", "cpu_ms", "output_chars",
                 "vs original (355 ms)"])
    best = min(r["median_ms"] for r in rows if r["hook"] == "session-start")
    result = {"chunks": info.chunks, "runs": runs, "project": project,
              "target_ms": TARGET_MS, "original_ms": ORIGINAL_MS,
              "session_start_best_median_ms": best,
              "ratio_vs_original": round(ORIGINAL_MS / best, 2),
              "load_average": os.getloadavg()[0], "rows": rows}
    write_result("hooks", result, tiny)
    return result


def _start_payload(cwd: str) -> str:
    """The hook JSON Claude Code sends when a new session starts in ``cwd``."""
    return json.dumps({"session_id": "bench", "cwd": cwd, "source": "startup",
                       "hook_event_name": "SessionStart"})


def _session_start_commands(db: Path) -> list[tuple[str, list[str]]]:
    out = [("python -m causantic", [PYTHON, "-m", "causantic", "--db", str(db)])]
    script = Path(PYTHON).with_name("causantic")
    if script.exists():
        out.append(("console script", [str(script), "--db", str(db)]))
    archive = REPO_ROOT / "dist" / "causantic.pyz"
    if archive.exists() and _built_from_head([PYTHON, "-S", str(archive)]):
        out.append(("python -S causantic.pyz", [PYTHON, "-S", str(archive), "--db", str(db)]))
    elif archive.exists():
        print(f"(skipped {archive}: not built from this commit; `python3 build_zipapp.py`)")
    return [(label, argv + ["hook", "session-start"]) for label, argv in out]


def _built_from_head(argv: list[str]) -> bool:
    """Whether the archive's --version names this checkout's commit (else it measures old code)."""
    version = subprocess.run(argv + ["--version"], capture_output=True, text=True, check=False)
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True, check=False)
    return bool(head.stdout.strip()) and f"commit {head.stdout.strip()}" in version.stdout


def _scope_rows(db: Path, project: str, tmp: Path, runs: int) -> list[dict[str, Any]]:
    """session-start on a store whose project is worked in the main checkout and two linked
    worktrees (`_in_live_worktrees`), under `[memory] scope = "all"` and "worktree" (the
    connection narrowed to the worktree before the briefing reads it), samples alternated so
    the two rows compare the scope alone."""
    scoped = tmp / "scoped.db"
    shutil.copy2(db, scoped)
    cwd = _in_live_worktrees(scoped, project, tmp / "checkouts")
    payload = _start_payload(cwd)
    argv = [PYTHON, "-m", "causantic", "--db", str(scoped), "hook", "session-start"]
    envs, chars, samples = {}, {}, {}
    for scope in ("all", "worktree"):
        home = tmp / f"scope-{scope}"
        (home / ".causantic").mkdir(parents=True, mode=0o700)
        (home / ".causantic" / "config.toml").write_text(f'[memory]\nscope = "{scope}"\n')
        envs[scope] = _private_env(home)
        chars[scope] = _output_chars(argv, payload, envs[scope]) or 0
        samples[scope] = []
    for _ in range(runs):
        for scope, env in envs.items():
            samples[scope].append(_time_process(argv, payload, env))
    return [_row(f"python -m causantic, 3 checkouts, scope {scope}", samples[scope],
                 output=chars[scope]) for scope in envs]


def _in_live_worktrees(db: Path, project: str, root: Path) -> str:
    """Give ``project``'s sessions, newest first, the main checkout and two linked worktrees
    in turn, all three folders on disk (so scope "worktree" hides the third's sessions from
    the second); returns the second's folder, where the session starts."""
    main, feature, other = (root / project, root / f"{project}-worktrees" / "feature",
                            root / f"{project}-worktrees" / "other")
    for folder in (main, feature, other):
        folder.mkdir(parents=True)
    _spread_sessions(db, project, [str(other), str(main), str(feature)], project_path=str(main))
    return str(feature)


def _spread_sessions(db: Path, project: str, checkouts: list[str],
                     project_path: str | None = None) -> None:
    """Give ``project``'s sessions, newest first, the ``checkouts`` in turn (and, when given,
    ``project_path`` as the folder the project is named from)."""
    from causantic.store import open_store

    with open_store(db) as store, store.conn:
        conn = store.conn
        ids = [r[0] for r in conn.execute(
            "SELECT session_id FROM chunks WHERE project = ? GROUP BY session_id"
            " ORDER BY max(end_time) DESC", (project,))]
        for i, sid in enumerate(ids):
            conn.execute("UPDATE sessions SET checkout = ?, project_path = coalesce(?,"
                         " project_path) WHERE id = ?",
                         (checkouts[i % len(checkouts)], project_path, sid))


def _subagent_rows(db: Path, project: str, cwd: str, home: Path, runs: int
                   ) -> list[dict[str, Any]]:
    """pre-tool-use (an Agent call: keyword recall for its task, left in a file) and
    subagent-start (the sub-agent takes it), with `[hooks] subagent_recall = true`, samples
    alternated as Claude Code runs them. The task is a real prompt of the project, so the
    recall has matches to render."""
    import apsw

    env = _private_env(home)
    Path(env["CAUSANTIC_HOME"]).mkdir(parents=True, mode=0o700)
    (Path(env["CAUSANTIC_HOME"]) / "config.toml").write_text("[hooks]\nsubagent_recall = true\n")
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (text,) = conn.execute(
            "SELECT text FROM chunks WHERE project = ? AND text LIKE '[User]%'"
            " AND length(text) > 400 ORDER BY rowid LIMIT 1", (project,)).fetchone()
    finally:
        conn.close()
    task = text.removeprefix("[User]").strip()[:300]
    common = {"session_id": "bench-subagents", "prompt_id": "bench-prompt", "cwd": cwd}
    pre = json.dumps({**common, "hook_event_name": "PreToolUse", "tool_name": "Agent",
                      "tool_use_id": "toolu_bench", "tool_input": {"prompt": task}})
    start = json.dumps({**common, "hook_event_name": "SubagentStart", "agent_id": "a1",
                        "agent_type": "general-purpose"})
    argv = [PYTHON, "-m", "causantic", "--db", str(db), "hook"]
    _time_process(argv + ["pre-tool-use"], pre, env)  # warm-up
    chars = _output_chars(argv + ["subagent-start"], start, env) or 0
    samples: dict[str, list[tuple[float, float]]] = {"pre-tool-use": [], "subagent-start": []}
    for _ in range(runs):
        samples["pre-tool-use"].append(_time_process(argv + ["pre-tool-use"], pre, env))
        samples["subagent-start"].append(_time_process(argv + ["subagent-start"], start, env))
    return [_row("pre-tool-use (Agent)", samples["pre-tool-use"], command="python -m causantic"),
            _row("subagent-start", samples["subagent-start"], command="python -m causantic",
                 output=chars)]


def _background_rows(tmp: Path, env: dict[str, str], runs: int) -> list[dict[str, Any]]:
    """pre-compact and session-end on a copy of a sample transcript, into a scratch database.

    The hook's return time does not depend on the transcript (the worker reads it later), so
    a small one keeps the off-the-clock worker runs short.
    """
    source = SAMPLES / "-home-dev-acme-api"
    folder = tmp / "projects" / source.name
    shutil.copytree(source, folder)
    transcript = folder / "11111111-aaaa-4bbb-8ccc-000000000001.jsonl"
    db = tmp / "background.db"
    status = Path(env["CAUSANTIC_HOME"]) / "hook-status.json"
    rows = []
    for event in ("pre-compact", "session-end"):
        payload = json.dumps({"session_id": transcript.stem, "transcript_path": str(transcript),
                              "cwd": "/home/bench/project", "hook_event_name": event})
        argv = [PYTHON, "-m", "causantic", "--db", str(db), "hook", event]
        samples = []
        for _ in range(runs):
            before = _runs(status, event)
            samples.append(_time_process(argv, payload, env))
            _wait(lambda b=before, e=event: _runs(status, e) > b, 300)  # the worker, off the clock
        rows.append(_row(event, samples, command="python -m causantic", output=0))
    return rows


def _time_process(argv: list[str], payload: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, cpu ms) of one run of argv with payload on stdin."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, input=payload.encode(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env, check=False)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or proc.stderr:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.decode()[:500]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def _row(label: str, samples: list[tuple[float, float]], command: str | None = None,
         output: int = 0) -> dict[str, Any]:
    walls = sorted(w for w, _ in samples)
    hook = "session-start" if command is None else label
    return {
        "hook": hook,
        "command": command or label,
        "median_ms": round(statistics.median(walls), 1),
        "p95_ms": round(walls[min(len(walls) - 1, int(round(0.95 * (len(walls) - 1))))], 1),
        "cpu_ms": round(statistics.median(c for _, c in samples), 1),
        "output_chars": output,
    }


def _output_chars(argv: list[str], payload: str, env: dict[str, str]) -> int | None:
    """Characters of additionalContext, or None when the hook printed no briefing."""
    out = subprocess.run(argv, input=payload.encode(), capture_output=True, env=env, check=True)
    try:
        return len(json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"])
    except (ValueError, KeyError, TypeError):
        return None


def _with_session_states(source: Path, target: Path) -> Path:
    """A copy of the corpus with every session's state stored, as ingest leaves a real store
    (the synthetic corpus copies chunks only; without stored states the briefing computes
    them on the fly, which is the fallback path, not the normal one)."""
    from causantic.derive_state import refresh
    from causantic.store import open_store

    shutil.copy2(source, target)
    with open_store(target) as store, store.conn:
        ids = [r[0] for r in store.conn.execute("SELECT DISTINCT session_id FROM chunks")]
        refresh(store.conn, ids)
    return target


def _in_worktrees(db: Path, project: str) -> str:
    """Give ``project``'s sessions checkouts as in parallel worktrees: the newest in the main
    checkout, the others alternately in it and in a linked worktree. Returns the worktree's
    folder (not on disk: its path's shape names the project and the worktree)."""
    main, worktree = f"/home/bench/{project}", f"/home/bench/{project}-worktrees/feature"
    _spread_sessions(db, project, [main, worktree])
    return worktree


def _with_topics(db: Path, topics: int = TOPICS) -> Path:
    """Topics, as embedding builds them for every store of 100 chunks or more (the briefing
    then ends with the project's active topics). The corpus's vectors are random, so HDBSCAN
    would find none: each session's chunks are put in one of ``topics`` topics instead, two
    sessions in three, which is what the briefing's query reads."""
    import zlib

    from causantic.store import open_store
    from causantic.store import topics as topic_store

    with open_store(db) as store, store.conn:
        conn = store.conn
        rows = conn.execute("SELECT c.rowid, c.id, c.session_id, m.model_id FROM chunks c"
                            " JOIN chunk_vectors_meta m ON m.chunk_rowid = c.rowid").fetchall()
        centroid = bytes(4 * 384)
        topic_store.insert_topics(conn, [
            topic_store.NewTopic(i, f"term{i}a, term{i}b, term{i}c", [f"term{i}a", f"term{i}b"],
                                 centroid) for i in range(1, topics + 1)])
        picked = {sid: zlib.crc32(sid.encode()) % (topics * 3 // 2) for _, _, sid, _ in rows}
        members = [topic_store.Membership(rowid, cid, picked[sid] + 1, 0.9, 0.05)
                   for rowid, cid, sid, _ in rows if picked[sid] < topics]
        topic_store.insert_members(conn, members, rows[0][3])
        topic_store.save_build(conn, topic_store.BuildInfo(
            "2026-01-01T00:00:00.000Z", rows[0][3], len(rows), {}, 0.0))
    return db


def _busiest_project(db: Path) -> tuple[str, str]:
    import apsw

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (project,) = conn.execute(
            "SELECT project FROM chunks GROUP BY project ORDER BY count(DISTINCT session_id) DESC,"
            " project LIMIT 1").fetchone()
    finally:
        conn.close()
    return project, f"/home/bench/{project}"  # not on disk: the project is the basename


def _private_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=str(home), CAUSANTIC_HOME=str(home / ".causantic"),
               CLAUDE_CONFIG_DIR=str(home / ".claude"))
    env.pop("CAUSANTIC_DB", None)
    # Users' interpreters cache bytecode; the warm-up run writes it for the timed runs.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _runs(status: Path, event: str) -> int:
    try:
        return int(json.loads(status.read_text())[event]["runs"])
    except (OSError, ValueError, KeyError):
        return 0


def _wait(predicate, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("the background ingest worker did not finish")
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.hooks [--tiny]``."""
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Lessons: how often the PostToolUse hook offers a past fix, how often it is the right one,
and how long the lookup takes.

Replay (``run``): the shared transcripts plus the repeated-error samples of
``tests/data/lessons`` are read session by session in time order. For every failed tool
call of a session, the hook's lookup (``causantic.lessons.surface.lookup``, the same code the
hook runs) is asked twice: against the lessons of *earlier sessions only* (a store holding
just those sessions), and against the lessons of the *earlier turns of the same session* (the
session's events before the call). The error text is the stored, trimmed tool output: the live
hook sees the whole output, so this is if anything harder. Every offer, in the default mode
and in the permissive one (message-level matches, unresolved errors, built-in tools), is
keyed ``<session8>:<event index>:<lesson8>`` and looked up in ``bench/lessons_labels.json``,
which holds a hand label per offer ("right": the lesson is about the same error and its fix
applies; "wrong": anything else). Unlabelled offers are listed so they can be labelled.

Latency: the lookup in-process at 100,000 chunks (the synthetic corpus, lessons rebuilt),
and the whole hook as a fresh process (``python -m causantic hook post-tool-use``), median
and p95, wall and CPU.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, cli_main, percentile, print_table, write_result
from causantic.config import LessonSettings

LABELS = Path(__file__).parent / "lessons_labels.json"
SHARED = Path("/work/shared/transcripts")
OWN = REPO_ROOT / "tests" / "data" / "lessons"
PERMISSIVE = LessonSettings(match="message", unresolved=True, builtin_tools=True)


def _ingest_all(db: Path, roots: list[Path]) -> None:
    from causantic.config import Settings
    from causantic.ingest.run import run_ingest

    run_ingest(Settings(home=db.parent, db_path=db, claude_dir=db.parent,
                        config_path=db.parent / "config.toml"), [r for r in roots if r.exists()])


def replay(roots: list[Path], tiny: bool = False) -> dict[str, Any]:
    """Replay every failed call against earlier sessions and earlier turns (see above)."""
    from causantic.derive_state import _NOT_ERRORS
    from causantic.lessons.episodes import lessons_from_events, session_events
    from causantic.lessons.surface import error_text, lookup
    from causantic.store import open_store
    from causantic.store.lessons import replace_session

    labels = json.loads(LABELS.read_text()) if LABELS.exists() else {}
    offers: list[dict[str, Any]] = []
    errors = successes = 0
    with tempfile.TemporaryDirectory(prefix="causantic-bench-lessons-") as tmp:
        full = Path(tmp) / "full.db"
        _ingest_all(full, roots)
        with open_store(full, readonly=True) as src:
            sessions = src.conn.execute(
                "SELECT session_id, project, min(start_time) FROM chunks GROUP BY session_id"
                " ORDER BY 3").fetchall()
            per_session = {sid: session_events(src.conn, sid) for sid, _, _ in sessions}
            stored = {sid: [r for r in src.conn.execute(
                "SELECT * FROM lessons WHERE session_id = ?", (sid,))] for sid, _, _ in sessions}
        earlier = Path(tmp) / "earlier.db"
        prefix = Path(tmp) / "prefix.db"
        with open_store(earlier) as e_store, open_store(prefix) as p_store:
            for n, (sid, project, _) in enumerate(sessions):
                if tiny and n > 8:
                    break
                events = per_session[sid]
                for i, ev in enumerate(events):
                    if not ev.tool:
                        continue
                    if ev.ok:  # PostToolUse: the call worked, but does its output show errors?
                        if ev.tool == "Bash" and error_text(_success_payload(ev))[2]:
                            successes += 1
                            match = lookup(e_store.conn, ev.tool, ev.subject, ev.body,
                                           project=project)
                            if match is not None:
                                offers.append(_offer(sid, ev, match.lesson.id, "succeeded, error"
                                                     " lines (earlier sessions)", "default",
                                                     match.exact, match.text, labels))
                        continue
                    if ev.body.strip().startswith(_NOT_ERRORS):  # rejected, interrupted
                        continue
                    errors += 1
                    for mode, finder in (("loose", _loose), ("text search", _text_search)):
                        found = finder(e_store.conn, ev)
                        if found is not None:
                            offers.append(_offer(sid, ev, found[0], "earlier sessions", mode,
                                                 False, found[1], labels))
                    # earlier turns of this session
                    with p_store.conn:
                        replace_session(p_store.conn, "replay",
                                        [r.replace(session_id="replay") for r in
                                         lessons_from_events(sid, project, events[:i])])
                    for scope, conn in (("earlier sessions", e_store.conn),
                                        ("earlier turns", p_store.conn)):
                        for mode, opts in (("default", LessonSettings()), ("permissive", PERMISSIVE)):
                            match = lookup(conn, ev.tool, ev.subject, ev.body, project=project,
                                           options=opts)
                            if match is None:
                                continue
                            offers.append(_offer(sid, ev, match.lesson.id, scope, mode,
                                                 match.exact, match.text, labels))
                # this session's lessons become "earlier" for the next ones
                with e_store.conn:
                    _copy_rows(e_store.conn, stored[sid])
    return {"errors": errors, "successes": successes, "offers": offers}


def _offer(sid: str, ev: Any, lesson_id: str, scope: str, mode: str, exact: bool, text: str,
           labels: dict[str, str]) -> dict[str, Any]:
    key = f"{sid[:8]}:{ev.index}:{lesson_id[:8]}"
    return {"key": key, "scope": scope, "mode": mode, "exact": exact, "label": labels.get(key),
            "error": f"{ev.tool} `{ev.subject[:80]}`: {ev.body.strip()[:160]}", "offered": text}


def _success_payload(ev: Any) -> dict[str, Any]:
    return {"tool_name": ev.tool, "tool_input": {"command": ev.subject},
            "tool_response": {"stdout": ev.body, "stderr": ""}}


def _text_search(conn: Any, ev: Any) -> tuple[str, str] | None:
    """For comparison only: the best resolved lesson by BM25 over lesson text for the error's
    line (what a search-based reminder would offer)."""
    from causantic.lessons.signature import error_line
    from causantic.lessons.surface import BUILTIN_TOOLS, render
    from causantic.retrieval.fts import query_terms
    from causantic.store.lessons import COLUMNS, LessonRow

    if ev.tool in BUILTIN_TOOLS:
        return None
    line = error_line(ev.tool, ev.body)
    terms = [t for t in query_terms(line) if len(t) > 2][:12]
    if not terms:
        return None
    match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
    row = conn.execute(
        f"SELECT {', '.join('l.' + c for c in COLUMNS)} FROM lessons_fts f"
        " JOIN lessons l ON l.rowid = f.rowid WHERE lessons_fts MATCH ? AND l.resolved = 1"
        " ORDER BY f.rank LIMIT 1", (match,)).fetchone()
    if row is None:
        return None
    lesson = LessonRow(*row)
    return lesson.id, render(lesson)


def _loose(conn: Any, ev: Any) -> tuple[str, str] | None:
    """A looser matcher than the hook's, for comparison only: the newest resolved lesson of
    the same program with the same error class (or, without a class, the same first four
    words of the message)."""
    from causantic.lessons.signature import Signature, error_line
    from causantic.lessons.surface import BUILTIN_TOOLS, render
    from causantic.store.lessons import COLUMNS, LessonRow

    if ev.tool in BUILTIN_TOOLS:
        return None
    sig = Signature(ev.tool, ev.subject, error_line(ev.tool, ev.body))
    if not sig.program:
        return None
    cols = ", ".join(COLUMNS)
    if sig.error_class:
        row = conn.execute(f"SELECT {cols} FROM lessons WHERE program = ? AND error_class = ?"
                           " AND resolved = 1 ORDER BY time DESC LIMIT 1",
                           (sig.program, sig.error_class)).fetchone()
    else:
        head = " ".join(sig.message.split()[:4])
        row = conn.execute(f"SELECT {cols} FROM lessons WHERE program = ? AND resolved = 1"
                           " AND informative = 1 AND substr(signature, 1, ?) = ?"
                           " ORDER BY time DESC LIMIT 1",
                           (sig.program, len(head), head)).fetchone()
    if row is None:
        return None
    lesson = LessonRow(*row)
    return lesson.id, render(lesson)


def _copy_rows(conn: Any, rows: list[tuple[Any, ...]]) -> None:
    for row in rows:
        marks = ",".join("?" * len(row))
        conn.execute(f"INSERT OR IGNORE INTO lessons VALUES ({marks})", row)


def _summary(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for scope, mode in (("earlier sessions", "default"), ("earlier sessions", "permissive"),
                        ("earlier sessions", "loose"), ("earlier sessions", "text search"),
                        ("earlier turns", "default"),
                        ("earlier turns", "permissive"),
                        ("succeeded, error lines (earlier sessions)", "default")):
        if True:
            calls = result["successes"] if scope.startswith("succeeded") else result["errors"]
            got = [o for o in result["offers"] if o["scope"] == scope and o["mode"] == mode]
            labelled = [o for o in got if o["label"] in ("right", "wrong")]
            right = sum(o["label"] == "right" for o in labelled)
            rows.append({
                "scope": scope, "mode": mode, "calls": calls,
                "offers": len(got),
                "offer rate": f"{len(got) / calls:.1%}" if calls else "-",
                "labelled": len(labelled),
                "precision": f"{right / len(labelled):.0%} ({right}/{len(labelled)})"
                if labelled else "-",
            })
    return rows


def compaction(roots: list[Path]) -> list[dict[str, Any]]:
    """What compaction summaries leave out: for every summary in the transcripts, the session
    as stored just before it (the transcript cut at the summary, ingested alone) against the
    summary's text, by `causantic.lessons.compact.dropped`."""
    from causantic.derive_state import load_state
    from causantic.lessons.compact import dropped
    from causantic.store import open_store

    totals = {k: [0, 0] for k in ("files edited", "commands that failed", "open errors",
                                  "open todos", "last request")}
    summaries = 0
    for root in roots:
        for path in sorted(root.rglob("*.jsonl")):
            lines = path.read_bytes().split(b"\n")
            for n, raw in enumerate(lines):
                if b'"isCompactSummary":true' not in raw or n == 0:
                    continue
                rec = json.loads(raw)
                text = rec.get("message", {}).get("content")
                text = text if isinstance(text, str) else " ".join(
                    b.get("text", "") for b in text or [] if isinstance(b, dict))
                with tempfile.TemporaryDirectory(prefix="causantic-bench-compact-") as tmp:
                    cut = Path(tmp) / "p" / path.name
                    cut.parent.mkdir()
                    cut.write_bytes(b"\n".join(lines[:n]) + b"\n")
                    db = Path(tmp) / "m.db"
                    _ingest_all(db, [cut.parent])
                    with open_store(db, readonly=True) as store:
                        state = load_state(store.conn, rec.get("sessionId", ""))
                if state is None:
                    continue
                summaries += 1
                d = dropped(state, text)
                bash = [e for e in state.errors if e.tool == "Bash" and e.resolved]
                for key, have, lost in (
                        ("files edited", len(state.edited), len(d.edited)),
                        ("commands that failed", len(bash), len(d.failed)),
                        ("open errors", len(state.unresolved), len(d.open_errors)),
                        ("open todos", len(state.open_todos), len(d.todos)),
                        ("last request", int(bool(state.last_request)), int(bool(d.last_request)))):
                    totals[key][0] += have
                    totals[key][1] += lost
    return [{"item": k, "in stored state": have, "not in the summary": lost,
             "share dropped": f"{lost / have:.0%}" if have else "-", "summaries": summaries}
            for k, (have, lost) in totals.items()]


def latency(tiny: bool = False) -> list[dict[str, Any]]:
    """In-process lookup and fresh-process hook time on the big corpus (see above)."""
    from bench.corpus import cache_dir, corpus
    from causantic.lessons.episodes import rebuild_all
    from causantic.lessons.surface import lookup
    from causantic.store import open_store

    n = 300 if tiny else 100_000
    info = corpus(n)
    db = cache_dir() / f"lessons-{info.path.name}"
    if not db.exists():
        tmp = db.with_suffix(".tmp")
        shutil.copy2(info.path, tmp)
        with open_store(tmp) as store:
            rebuild_all(store.conn)
        os.replace(tmp, db)
    payloads = _payloads(db, 40 if tiny else 200)
    with open_store(db, readonly=True) as store:
        count = store.conn.execute("SELECT count(*) FROM lessons").fetchone()[0]
        times = []
        for p in payloads * (1 if tiny else 3):
            started = time.perf_counter()
            lookup(store.conn, p["tool_name"], p["tool_input"]["command"], p["error"],
                   project="", session_id="bench")
            times.append((time.perf_counter() - started) * 1000)
    rows = [{"what": f"lookup in-process ({info.chunks:,} chunks, {count:,} lessons)",
             "median_ms": round(statistics.median(times), 2),
             "p95_ms": round(percentile(times, 95), 2), "cpu_ms": "-", "runs": len(times)}]
    from bench.hooks import _session_start_commands

    with tempfile.TemporaryDirectory(prefix="causantic-bench-home-") as home:
        env = dict(os.environ, CAUSANTIC_HOME=home)
        start = {"session_id": "bench", "cwd": "/nonexistent/bench", "source": "startup",
                 "hook_event_name": "SessionStart"}
        n = 5 if tiny else 40
        for launcher, argv in _session_start_commands(db):  # python -m, console script, archive
            base = argv[:-1]  # without "session-start"
            _time(base + ["post-tool-use"], payloads[0], env)  # warm-up (archive extraction)
            timed: dict[str, list[tuple[float, float]]] = {"post-tool-use": [], "session-start": []}
            for i in range(n):  # interleaved, so both see the same load
                timed["post-tool-use"].append(_time(base + ["post-tool-use"],
                                                    payloads[i % len(payloads)], env))
                timed["session-start"].append(_time(base + ["session-start"], start, env))
            for event in ("post-tool-use", "session-start"):
                walls = [w for w, _ in timed[event]]
                rows.append({"what": f"hook {event}, fresh process ({launcher})"
                             + (" — reference" if event == "session-start" else ""),
                             "median_ms": round(statistics.median(walls), 1),
                             "p95_ms": round(percentile(walls, 95), 1),
                             "cpu_ms": round(statistics.median(c for _, c in timed[event]), 1),
                             "runs": len(walls)})
    return rows


def _time(argv: list[str], payload: dict[str, Any], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one hook process."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True,
                          env=env, check=False)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"hook exited {proc.returncode}: {proc.stderr[:300]!r}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def _payloads(db: Path, n: int) -> list[dict[str, Any]]:
    """Hook inputs for stored failed Bash calls: half with a lesson to find, half without."""
    from causantic.store import open_store

    with open_store(db, readonly=True) as store:
        rows = store.conn.execute(
            "SELECT subject, error FROM lessons WHERE tool = 'Bash' ORDER BY id LIMIT ?",
            (n,)).fetchall()
    out = []
    for i, (subject, error) in enumerate(rows or [("true", "error")]):
        text = error if i % 2 == 0 else f"Error: unseen failure number {i} in widget_{i}.py"
        out.append({"session_id": "bench", "cwd": "/nonexistent/bench",
                    "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                    "tool_input": {"command": subject}, "error": f"Exit code 1\n{text}"})
    return out[:n]


def run(tiny: bool = False) -> dict[str, Any]:
    """Replay, precision from the hand labels, latency; print and write the results."""
    result = replay([SHARED, OWN] if not tiny else [OWN], tiny=tiny)
    summary = _summary(result)
    print_table("Lessons offered by the PostToolUse lookup (replay in time order)", summary,
                ["scope", "mode", "calls", "offers", "offer rate", "labelled",
                 "precision"])
    unlabelled = sorted({o["key"] for o in result["offers"] if o["label"] is None})
    if unlabelled:
        print(f"{len(unlabelled)} offers have no label in {LABELS.name}: {unlabelled[:10]}")
    dropped = compaction([OWN] if tiny else [SHARED])
    print_table("What compaction summaries leave out (state just before each summary)", dropped,
                ["item", "in stored state", "not in the summary", "share dropped", "summaries"])
    speed = latency(tiny)
    print_table(f"PostToolUse lesson lookup latency (load average {os.getloadavg()[0]:.1f})",
                speed,
                ["what", "median_ms", "p95_ms", "cpu_ms", "runs"])
    out = {"summary": summary, "latency": speed, "compaction": dropped,
           "offers": result["offers"],
           "load_average": os.getloadavg()[0]}
    write_result("lessons", out, tiny)
    return out


def main(argv: list[str] | None = None) -> int:
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Robustness of ingest (issue 17): nothing lost to bad lines, kills or concurrent writers.

Sections, each compared with what must hold:
- fuzz: 100,000 mutated real transcript lines (`bench.fuzzlines`: truncations, byte flips,
  invalid UTF-8, lone surrogates, NULs, deep nesting, huge lines, wrong field types, torn
  writes ...), each between two sentinel prompts, in 20 files. Files dropped 0, crashes 0,
  sentinels lost 0.
- steps: every shared transcript cut at seeded random byte offsets and appended in 5 steps,
  ingested after each; differences from one clean ingest 0 (chunks, edges, sessions, session
  states, projects, per-file checkpoints), over 10 seeds.
- kills: `causantic ingest` of the shared transcripts plus the fuzz files, SIGKILLed at a
  random moment, 10 times over the same database, then run to the end; differences 0.
- writers: 4 `causantic ingest` processes over the same tree at once; differences 0.
- prompt hook: wall time of `hook user-prompt-submit` for prompts of 1 KB to 4 MB and on an
  exclusively locked database (installed timeout 5 s).

``--tiny`` runs every section on a small size (the test suite does).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import apsw

from bench.common import REPO_ROOT, TRANSCRIPTS_DIR, cli_main, print_table, write_result
from bench.fuzzlines import mutated_lines, sentinel

PYTHON = sys.executable
SAMPLES = REPO_ROOT / "tests" / "data" / "transcripts"  # the tiny runs' source


def store_snapshot(db: Path) -> dict[str, list]:
    """Chunks, edges, sessions, session states, projects and per-file checkpoints, in a form
    that compares equal for equal stores (no rowids, file ids or times)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        def q(sql: str) -> list:
            return conn.execute(sql).fetchall()

        return {
            "chunks": q("SELECT id, session_id, project, agent_id, offset, part, turn, kind,"
                        " start_time, end_time, text, tokens, redactions, meta FROM chunks ORDER BY id"),
            "edges": q("SELECT src, dst, kind, weight FROM edges ORDER BY 1, 2, 3"),
            "sessions": q("SELECT id, project, project_path, cwd, git_branch, title, start_time,"
                          " end_time, continued, forked_from FROM sessions ORDER BY id"),
            "state": q("SELECT session_id, project, start_time, end_time, chunks, state"
                       " FROM session_state ORDER BY 1"),
            "projects": q("SELECT DISTINCT project FROM chunks ORDER BY 1"),
            "files": q("SELECT path, kind, session_id, agent_id, complete_offset, bad_lines"
                       " FROM files ORDER BY 1"),
        }
    finally:
        conn.close()


def differences(a: dict[str, list], b: dict[str, list]) -> int:
    """Rows in one snapshot and not in the other, over all tables."""
    return sum(len(set(a[k]) ^ set(b[k])) for k in a)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def _ingest_cmd(db: Path, *paths: Path) -> list[str]:
    return [PYTHON, "-m", "causantic", "--db", str(db), "ingest", "--no-embed", "--json",
            *map(str, paths)]


def _ingest(db: Path, *paths: Path) -> dict[str, Any]:
    proc = subprocess.run(_ingest_cmd(db, *paths), capture_output=True, text=True, env=_env(),
                          timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"ingest failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


# -- sections ---------------------------------------------------------------------------------


def fuzz(work: Path, files: int, per_file: int) -> dict[str, Any]:
    """Mutated lines between sentinels; every sentinel must be stored."""
    import re

    from causantic.config import load_settings
    from causantic.ingest.run import run_ingest

    folder = work / "fuzz"
    folder.mkdir()
    rnd = random.Random(17)
    lines = 0
    sids = [f"{i:08d}-0000-4000-8000-000000000000" for i in range(files)]
    for i, batch in enumerate(mutated_lines(TRANSCRIPTS_DIR, rnd, files=files, per_file=per_file,
                                            session_ids=sids)):
        sid = sids[i]
        body = b"".join(sentinel(sid, i, k) + line + b"\n" for k, line in enumerate(batch))
        (folder / f"{sid}.jsonl").write_bytes(body + sentinel(sid, i, len(batch)))
        lines += len(batch)
    crashes, problems, report = 0, [], None
    started = time.perf_counter()
    try:
        report = run_ingest(load_settings(db=work / "fuzz.db"), [folder])
        problems = report.problems
    except Exception as exc:  # noqa: BLE001 - counted and shown
        crashes, problems = 1, [f"{type(exc).__name__}: {exc}"]
    seconds = time.perf_counter() - started
    lost = files * (per_file + 1)
    if report is not None:
        conn = apsw.Connection(str(work / "fuzz.db"), flags=apsw.SQLITE_OPEN_READONLY)
        text = "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks"))
        conn.close()
        lost -= len(set(re.findall(r"sentinel (\d+-\d+) still here", text)))
    return {"mutated_lines": lines, "files": files,
            "files_dropped": files - (report.files_read if report else 0),
            "crashes": crashes, "sentinels_lost": lost,
            "bad_lines": report.bad_lines if report else None,
            "seconds": round(seconds, 2), "problems": problems[:5]}


def steps(work: Path, source: Path, seeds: int, n_steps: int) -> dict[str, Any]:
    """Files cut at random byte offsets, appended in steps, against one clean ingest."""
    files = sorted(source.rglob("*.jsonl"))
    data = {f: f.read_bytes() for f in files}
    diffs, problems = 0, 0
    for seed in range(seeds):
        rnd = random.Random(seed)
        root = work / f"steps{seed}"
        cuts = {f: sorted(rnd.randrange(len(d) + 1) for _ in range(n_steps - 1)) + [len(d)]
                for f, d in data.items()}
        for step in range(n_steps):
            for f in files:
                dst = root / "live" / f.relative_to(source)
                dst.parent.mkdir(parents=True, exist_ok=True)
                with open(dst, "ab") as out:
                    out.write(data[f][(cuts[f][step - 1] if step else 0):cuts[f][step]])
            problems += len(_ingest(root / "steps.db", root / "live")["problems"])
        _ingest(root / "clean.db", root / "live")
        diffs += differences(store_snapshot(root / "steps.db"), store_snapshot(root / "clean.db"))
        shutil.rmtree(root)
    return {"seeds": seeds, "steps": n_steps, "differences": diffs, "problems": problems}


def kills(work: Path, source: Path, rounds: int, extra: Path) -> dict[str, Any]:
    """SIGKILL at random moments, then a run to the end, against one clean ingest."""
    db = work / "killed.db"
    rnd = random.Random(5)
    killed = 0
    for _ in range(rounds):
        proc = subprocess.Popen(_ingest_cmd(db, source, extra), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=_env())
        time.sleep(rnd.uniform(0.3, 3.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
    _ingest(db, source, extra)
    clean = work / "clean-kills.db"
    _ingest(clean, source, extra)
    return {"rounds": rounds, "killed_mid_run": killed,
            "differences": differences(store_snapshot(db), store_snapshot(clean))}


def writers(work: Path, source: Path, count: int, extra: Path) -> dict[str, Any]:
    """Several ingest processes over the same tree at once, against one clean ingest."""
    db = work / "writers.db"
    procs = [subprocess.Popen(_ingest_cmd(db, source, extra), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env())
             for _ in range(count)]
    failed, errors = 0, []
    for p in procs:
        _, err = p.communicate(timeout=1800)
        if p.returncode != 0:
            failed += 1
            errors.append(err.strip()[-300:])
    clean = work / "clean-kills.db"  # the same input, ingested once by `kills`
    if not clean.exists():
        _ingest(clean, source, extra)
    return {"writers": count, "failed": failed, "errors": errors[:2],
            "differences": differences(store_snapshot(db), store_snapshot(clean))}


def prompt_hook(work: Path, source: Path, sizes: list[int]) -> list[dict[str, Any]]:
    """Wall and CPU time of the prompt hook by prompt size, and on a locked database."""
    db = work / "prompt.db"
    _ingest(db, source)
    home = work / "home"
    (home / ".causantic").mkdir(parents=True)
    (home / ".causantic" / "config.toml").write_text("[hooks]\nuser_prompt_submit = true\n")
    env = {**_env(), "HOME": str(home), "CAUSANTIC_HOME": str(home / ".causantic")}
    question = " mix dialyzer reports a call_without_opaque type mismatch in slice_builder"
    rows = []

    def one(label: str, prompt: str) -> None:
        payload = json.dumps({"session_id": "bench", "cwd": "/home/marco/projects/spotter",
                              "prompt": prompt}).encode()
        before = os.times()
        started = time.perf_counter()
        proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "hook",
                               "user-prompt-submit"], input=payload, capture_output=True, env=env)
        wall = time.perf_counter() - started
        after = os.times()
        cpu = (after.children_user + after.children_system
               - before.children_user - before.children_system)
        rows.append({"case": label, "wall_ms": round(wall * 1000), "cpu_ms": round(cpu * 1000),
                     "exit": proc.returncode, "recalled": b"slice_builder" in proc.stdout})

    for size in sizes:
        filler = "pasted build output without anything of note\n"
        one(f"prompt {size / 1e6:g} MB" if size >= 1e5 else f"prompt {size} B",
            (filler * (size // len(filler) + 1))[:size] + question)
    lock = apsw.Connection(str(db))
    lock.execute("PRAGMA locking_mode = EXCLUSIVE")
    lock.execute("BEGIN EXCLUSIVE")
    lock.execute("CREATE TABLE held(x)")
    try:
        one("database locked", question)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    return rows


def run(tiny: bool = False) -> dict[str, Any]:
    """Run every section; print the tables; write bench/results/robustness.json."""
    started = time.perf_counter()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="causantic-robustness-") as tmp:
        work = Path(tmp)
        source = SAMPLES if tiny else TRANSCRIPTS_DIR
        f = fuzz(work, *((2, 300) if tiny else (20, 5000)))
        s = steps(work, source, *((1, 3) if tiny else (10, 5)))
        k = kills(work, source, 1 if tiny else 10, work / "fuzz")
        w = writers(work, source, 2 if tiny else 4, work / "fuzz")
        p = prompt_hook(work, source, [1000] if tiny else [1000, 100_000, 1_000_000, 4_000_000])
    summary = [
        {"check": "files dropped by bad lines", "value": f["files_dropped"], "must be": 0},
        {"check": "crashes", "value": f["crashes"], "must be": 0},
        {"check": f"sentinel prompts lost among {f['mutated_lines']:,} mutated lines",
         "value": f["sentinels_lost"], "must be": 0},
        {"check": f"store differences, read in {s['steps']} steps x {s['seeds']} seeds",
         "value": s["differences"], "must be": 0},
        {"check": f"store differences after {k['killed_mid_run']} kills mid-run",
         "value": k["differences"], "must be": 0},
        {"check": f"store differences after {w['writers']} concurrent writers",
         "value": w["differences"], "must be": 0},
        {"check": "concurrent writers that failed", "value": w["failed"], "must be": 0},
    ]
    print_table(f"Robustness{' (tiny)' if tiny else ''}; load average {load:.1f}", summary)
    print_table("Prompt hook (UserPromptSubmit, installed timeout 5 s; wall includes the "
                "interpreter start; noisy under load)", p)
    print(f"fuzz: {f['bad_lines']} bad lines counted, ingest {f['seconds']} s; "
          f"problems: {f['problems'] or 'none'}")
    payload = {"fuzz": f, "steps": s, "kills": k, "writers": w, "prompt_hook": p,
               "summary": summary, "load_average": round(load, 2),
               "seconds": round(time.perf_counter() - started, 1)}
    write_result("robustness", payload, tiny)
    return payload


def main(argv: list[str] | None = None) -> int:
    return cli_main(run, argv)


if __name__ == "__main__":
    raise SystemExit(main())

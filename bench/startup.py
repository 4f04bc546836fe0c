"""Startup of the single-file archive: size, first run, warm run, and its cost per command.

Uses ``dist/causantic.pyz``; when it is missing (or with ``--build``) the archive is built
first with ``build_zipapp.py`` and the build is timed (into a temporary folder on a tiny run).
Every sample is a fresh process, timed from spawn to exit, with a private HOME and cache:

- first run: ``python -S causantic.pyz --version`` into an empty cache (extraction included);
- warm: the same once the cache is filled (bootstrap floor; target < 40 ms median of 20),
  beside the interpreter's own floor ``python -S -c pass``;
- per command: ``stats`` and the ``session-start`` hook through the archive
  (``python -S causantic.pyz``, what ``install`` writes for the archive) against the installed
  package (``python -m causantic``, what ``install`` writes for a pip install), on a database
  of the shared transcripts (keyword only; the tiny run uses the bundled samples). Target:
  the hook within 10 ms of the installed package.

CPU time (user + system of the child) is reported beside wall time: on a shared machine it
shows a process's own cost when wall time is inflated by other load.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, TRANSCRIPTS_DIR, cli_main, print_table, write_result

PYTHON = sys.executable
ARCHIVE = REPO_ROOT / "dist" / "causantic.pyz"
SAMPLES = REPO_ROOT / "tests" / "data" / "transcripts"
TARGETS = {"warm_ms": 40.0, "first_run_s": 3.0, "size_mb": 90.0, "hook_delta_ms": 10.0}


def run(tiny: bool = False, build: bool = False) -> dict[str, Any]:
    """Measure the archive (see the module docstring); print tables, write startup.json."""
    runs = 5 if tiny else 20
    first_runs = 1 if tiny else 5
    with tempfile.TemporaryDirectory(prefix="causantic-bench-startup-") as tmp_name:
        tmp = Path(tmp_name)
        archive, build_s = _archive(tmp, tiny, build)
        size = _composition(archive)
        env = _private_env(tmp)

        first = [_first_run(archive, env, tmp / f"first-{i}") for i in range(first_runs)]
        warm = [_time([PYTHON, "-S", str(archive), "--version"], env) for _ in range(runs + 1)][1:]
        floor = [_time([PYTHON, "-S", "-c", "pass"], env) for _ in range(runs)]
        rows = [
            _row("first run, extraction included", "python -S causantic.pyz --version", first,
                 f"< {TARGETS['first_run_s']:.0f} s"),
            _row("warm", "python -S causantic.pyz --version", warm, f"< {TARGETS['warm_ms']:.0f} ms"),
            _row("interpreter floor", "python -S -c pass", floor, ""),
        ]

        db, cwd = _database(tmp, tiny)
        hook_input = json.dumps({"session_id": "bench", "cwd": cwd, "source": "startup",
                                 "hook_event_name": "SessionStart"})
        comparisons = []
        for label, args, stdin in (("stats", ["stats"], ""),
                                   ("hook session-start", ["hook", "session-start"], hook_input)):
            via_archive = [PYTHON, "-S", str(archive), "--db", str(db), *args]
            installed = [PYTHON, "-m", "causantic", "--db", str(db), *args]
            a = [_time(via_archive, env, stdin) for _ in range(runs + 1)][1:]
            b = [_time(installed, env, stdin) for _ in range(runs + 1)][1:]
            comparisons.append({
                "command": label,
                "archive_ms": _median(a, 0), "installed_ms": _median(b, 0),
                "delta_ms": round(_median(a, 0) - _median(b, 0), 1),
                "archive_cpu_ms": _median(a, 1), "installed_cpu_ms": _median(b, 1),
                "cpu_delta_ms": round(_median(a, 1) - _median(b, 1), 1),
            })

    print_table(f"causantic.pyz ({archive.name})", [size | {"build_s": build_s or "n/a"}])
    print_table(f"Startup, {runs} warm runs, {first_runs} first runs, fresh processes", rows,
                ["case", "command", "median_ms", "p95_ms", "cpu_ms", "target"])
    print_table("Through the archive vs the installed package (python -m causantic), "
                f"{runs} runs each", comparisons)
    result = {
        "runs": runs,
        "targets": TARGETS,
        "archive": size | {"build_s": build_s},
        "startup": rows,
        "commands": comparisons,
        "warm_median_ms": rows[1]["median_ms"],
        "first_run_median_s": round(rows[0]["median_ms"] / 1000, 2),
        "load_average": os.getloadavg()[0],
    }
    write_result("startup", result, tiny)
    return result


def _archive(tmp: Path, tiny: bool, build: bool) -> tuple[Path, float | None]:
    """dist/causantic.pyz, built (and timed) first when missing or asked for."""
    if ARCHIVE.exists() and not build:
        return ARCHIVE, None
    out = tmp / "dist" if tiny else ARCHIVE.parent
    started = time.perf_counter()
    proc = subprocess.run([PYTHON, str(REPO_ROOT / "build_zipapp.py"), "--out", str(out)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"build_zipapp.py failed: {proc.stderr.strip()[-500:]}")
    return out / "causantic.pyz", round(time.perf_counter() - started, 1)


def _composition(archive: Path) -> dict[str, Any]:
    with zipfile.ZipFile(archive) as zf:
        with zf.open("payload.zip") as f:
            import io

            inner = zipfile.ZipFile(io.BytesIO(f.read()))
    infos = inner.infolist()
    by_top: dict[str, int] = {}
    for i in infos:
        top = i.filename.split("/")[0]
        by_top[top] = by_top.get(top, 0) + i.file_size
    biggest = sorted(by_top.items(), key=lambda kv: -kv[1])[:6]
    size = archive.stat().st_size
    return {
        "size_mb": round(size / 1e6, 1),
        "target_mb": TARGETS["size_mb"],
        "files": len(infos),
        "unpacked_mb": round(sum(i.file_size for i in infos) / 1e6, 1),
        "largest_unpacked": ", ".join(f"{k} {v / 1e6:.0f}" for k, v in biggest),
        "sha256": hashlib.sha256(archive.read_bytes()).hexdigest()[:16],
    }


def _private_env(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "CAUSANTIC_", "XDG_CACHE", "CLAUDE_"))}
    env.update(HOME=str(home), CAUSANTIC_HOME=str(home / ".causantic"),
               CLAUDE_CONFIG_DIR=str(home / ".claude"), CAUSANTIC_CACHE_DIR=str(tmp / "cache"))
    return env


def _first_run(archive: Path, env: dict[str, str], cache: Path) -> tuple[float, float]:
    return _time([PYTHON, "-S", str(archive), "--version"], env | {"CAUSANTIC_CACHE_DIR": str(cache)})


def _time(argv: Sequence[str], env: dict[str, str], stdin: str = "") -> tuple[float, float]:
    """(wall ms, cpu ms) of one process; raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(list(argv), input=stdin.encode(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env, check=False)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.decode()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def _median(samples: list[tuple[float, float]], index: int) -> float:
    return round(statistics.median(s[index] for s in samples), 1)


def _row(case: str, command: str, samples: list[tuple[float, float]], target: str) -> dict[str, Any]:
    walls = sorted(w for w, _ in samples)
    return {
        "case": case,
        "command": command,
        "median_ms": round(statistics.median(walls), 1),
        "p95_ms": round(walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))], 1),
        "cpu_ms": _median(samples, 1),
        "target": target,
    }


def _database(tmp: Path, tiny: bool) -> tuple[Path, str]:
    """A keyword-only database of the shared transcripts (tiny: the samples) and the working
    directory of its busiest project, for the session-start briefing."""
    from causantic.config import load_settings
    from causantic.ingest.run import run_ingest
    from causantic.store import open_store

    db = tmp / "memory.db"
    settings = load_settings(db=db, env={"HOME": str(tmp / "home")})
    run_ingest(settings, [SAMPLES if tiny else TRANSCRIPTS_DIR])
    with open_store(db, readonly=True) as store:
        row = store.conn.execute(
            "SELECT cwd FROM sessions WHERE cwd IS NOT NULL GROUP BY project "
            "ORDER BY count(*) DESC LIMIT 1").fetchone()
    return db, row[0] if row else str(tmp)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.startup [--tiny] [--build]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--build" in args:
        run(tiny="--tiny" in args, build=True)
        return 0
    return cli_main(run, args)


if __name__ == "__main__":
    sys.exit(main())

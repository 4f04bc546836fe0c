"""Shared helpers for the benchmarks: timing, percentiles, tables, result files.

Every benchmark module exposes ``run(tiny: bool = False) -> dict`` and, for the command line,
``main(argv=None) -> int``. ``run`` prints its table(s) and writes ``bench/results/<name>.json``
(the machine it ran on included). ``tiny=True`` runs the same code on a very small size so the
test suite can prove the benchmark still works; tiny runs write nothing under bench/results.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"
SHARED_DIR = Path(os.environ.get("CAUSANTIC_SHARED_DIR", REPO_ROOT.parent / "shared"))
TRANSCRIPTS_DIR = SHARED_DIR / "transcripts"


def machine() -> dict[str, Any]:
    """Describe the machine a result was measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation; values need not be sorted."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def time_calls(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> list[float]:
    """Call fn warmup+repeat times; return the last `repeat` wall times in milliseconds."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def summarize_ms(samples: Sequence[float], median_key: str = "median_ms") -> dict[str, float]:
    """Median, p95 and max of a list of millisecond samples (the query-latency benchmarks
    call the median ``p50_ms``)."""
    return {
        median_key: round(statistics.median(samples), 2) if samples else float("nan"),
        "p95_ms": round(percentile(samples, 95), 2),
        "max_ms": round(max(samples), 2) if samples else float("nan"),
        "n": len(samples),
    }


def peak_rss_mb(children: bool = False) -> float:
    """Peak resident memory of this process (or of its waited-for children) in MB."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return round(resource.getrusage(who).ru_maxrss / 1024.0, 1)


def print_table(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Print rows as a Markdown table under a title; return the table text."""
    if not rows:
        text = f"### {title}\n\n(no rows)\n"
        print(text)
        return text
    cols = list(columns or rows[0].keys())
    cells = [[_fmt(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(cols, widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += ["| " + " | ".join(v.ljust(w) for v, w in zip(row, widths)) + " |" for row in cells]
    text = f"### {title}\n\n" + "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def write_result(name: str, payload: dict[str, Any], tiny: bool) -> Path | None:
    """Write bench/results/<name>.json with the machine description; skipped for tiny runs."""
    if tiny:
        return None
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    doc = {
        "benchmark": name,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        **payload,
    }
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    return path


def cli_main(run: Callable[..., dict[str, Any]], argv: Sequence[str] | None = None) -> int:
    """A tiny shared command line: `python -m bench.<name> [--tiny]`."""
    args = list(sys.argv[1:] if argv is None else argv)
    run(tiny="--tiny" in args)
    return 0

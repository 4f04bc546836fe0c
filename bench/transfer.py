"""Export / import and the dashboard's API on synthetic corpora (``bench.corpus``).

For each size: `causantic export` (plain and `--vectors`, gzip), the archive's size, import
into an empty store, a second import of the same file (nothing to add: the idempotent path),
and the dashboard endpoints that read the whole store (overview, timeline, topics) as the
page calls them. Wall time is beside CPU time: the machine is shared, so wall time is noisy.
No targets; the numbers say what a user waits for when moving a memory to a new machine.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import cli_main, print_table, summarize_ms, time_calls, write_result
from bench.corpus import corpus

SIZES = (1_000, 10_000)
TINY_SIZE = 300


def _timed(fn, *args: Any, **kwargs: Any) -> tuple[Any, float, float]:  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def measure(db: Path, folder: Path) -> list[dict[str, Any]]:
    """One row per operation on the database at `db`."""
    from causantic.config import load_settings
    from causantic.dashboard.server import Api
    from causantic.store import open_store
    from causantic.transfer.archive import export, import_archive

    rows: list[dict[str, Any]] = []
    for vectors in (False, True):
        out = folder / f"export{'-vec' if vectors else ''}.jsonl.gz"
        with open_store(db, readonly=True) as store:
            report, wall, cpu = _timed(export, store, out, vectors=vectors)
        name = "export --vectors" if vectors else "export"
        rows.append({"operation": name, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                     "rows": sum(report.rows.values()), "MB": round(report.bytes / 1e6, 1)})
        target = folder / f"import{'-vec' if vectors else ''}.db"
        first, wall, cpu = _timed(import_archive, target, out)
        rows.append({"operation": f"import ({name}) into an empty store", "wall_s": round(wall, 2),
                     "cpu_s": round(cpu, 2),
                     "rows": sum(m.added for m in first.tables.values()), "MB": ""})
        again, wall, cpu = _timed(import_archive, target, out)
        rows.append({"operation": f"import ({name}) again", "wall_s": round(wall, 2),
                     "cpu_s": round(cpu, 2),
                     "rows": sum(m.added for m in again.tables.values()), "MB": ""})
    api = Api(load_settings(db=db, env={"HOME": str(folder)}))
    for endpoint in ("overview", "timeline", "topics"):
        samples = time_calls(lambda e=endpoint: api.routes[e]({}), repeat=5)
        stats = summarize_ms(samples)
        rows.append({"operation": f"dashboard /api/{endpoint}", "wall_s": "", "cpu_s": "",
                     "rows": "", "MB": "", "p50_ms": stats["median_ms"]})
    return rows


def run(tiny: bool = False) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": {}}
    for size in (TINY_SIZE,) if tiny else SIZES:
        info = corpus(size, vectors=True)
        with tempfile.TemporaryDirectory(prefix="causantic-bench-transfer-") as tmp:
            rows = measure(info.path, Path(tmp))
        print_table(f"Export / import, {info.chunks:,} chunks ({info.vectors:,} with vectors)",
                    rows, ["operation", "wall_s", "cpu_s", "rows", "MB", "p50_ms"])
        results["sizes"][str(size)] = {"chunks": info.chunks, "rows": rows}
    write_result("transfer", results, tiny)
    return results


if __name__ == "__main__":
    raise SystemExit(cli_main(run))

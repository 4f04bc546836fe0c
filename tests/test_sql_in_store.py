"""SQL lives in `causantic/store/` (issue 14 part 2), checked by reading every call (ast).

A module outside `store/` that calls `.execute(`, `.executemany(` or `.cursor(` on anything
fails this test unless ALLOW names it with the reason. An entry that no longer has such a call
fails too, so the list only shrinks: delete the entry when its module's SQL has moved.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "causantic"
SQL_CALLS = {"execute", "executemany", "cursor"}
MOVING = "moving in i14-store-app"

#: Modules outside store/ allowed to run SQL themselves, each with the reason.
ALLOW: dict[str, str] = {
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def sql_calls() -> dict[str, list[int]]:
    """Module (relative to `causantic`) -> lines of its `.execute(`-like calls."""
    found: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in SQL_CALLS):
                found.setdefault(_module(path), []).append(node.lineno)
    return found


CALLS = sql_calls()


def _outside_store() -> dict[str, list[int]]:
    return {m: lines for m, lines in CALLS.items() if m != "store" and not m.startswith("store.")}


def test_the_scan_sees_the_store_sql() -> None:
    """A guard that the scan works: the store itself runs SQL."""
    assert "store.sessions" in CALLS and "store.memories" in CALLS


def test_no_sql_outside_the_store() -> None:
    outside = {m: lines for m, lines in _outside_store().items() if m not in ALLOW}
    assert not outside, (
        "SQL outside causantic/store/ (move it behind a named store function, or add the "
        "module to ALLOW with the reason): "
        + "; ".join(f"causantic/{m.replace('.', '/')}.py lines {lines}"
                    for m, lines in sorted(outside.items())))


def test_every_allowed_module_still_runs_sql() -> None:
    """A stale entry hides nothing today but would let SQL back in: remove it."""
    stale = sorted(set(ALLOW) - set(_outside_store()))
    assert not stale, f"ALLOW entries without SQL calls (delete them): {stale}"

"""Explicit memory (issue 15): observations, feedback, three-factor ranking, dedup, reflection.

Observations are short redacted statements ("we use pnpm, never npm") with a type, a base
importance, a project ('' = every project), a time, citations to chunks and a count of exact
repeats. They live in the same SQLite file as the chunks (`causantic.store.memories`), are
indexed by FTS5 and embedded by the local model like chunks, and are found by `search` and
`recall` (marked `memory`), listed by `causantic memories` and injected into the
session-start briefing (instructions and decisions). No LLM and no API key anywhere: the
automatic observations come from cheap heuristics (`auto`), reflection hands the evidence to
the calling agent (`reflect`).

Modules: `observe` (writing, ids, redaction, dedup), `rank` (three-factor ranking), `recall`
(retrieval and rendering), `auto` (heuristic observations at ingest), `reflect`, `compact`
(TTL pruning), `briefing` (SQL only, for the hook).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: Types and their default base importance (Engram's table plus `procedure`).
DEFAULT_IMPORTANCE: dict[str, float] = {
    "instruction": 10,
    "error": 9,
    "decision": 8,
    "code_change": 7,
    "insight": 7,
    "procedure": 7,
    "test_result": 6,
    "general": 5,
    "tool_output": 3,
}
TYPES = tuple(DEFAULT_IMPORTANCE)
ORIGINS = ("explicit", "auto", "reflection")
MAX_TEXT = 4000  # characters kept of one observation


def importance_table(raw: Mapping[str, Any] | None) -> dict[str, float]:
    """Default importance per type, with `[memory.importance]` from the config file applied.

    Raises
    ------
    UsageError : an unknown type or a value outside 1-10 in the config.
    """
    from causantic.errors import UsageError

    table = dict(DEFAULT_IMPORTANCE)
    section = ((raw or {}).get("memory") or {}).get("importance") or {}
    if not isinstance(section, dict):
        raise UsageError("config: [memory.importance] must be a table of type = number")
    for kind, value in section.items():
        if kind not in table:
            raise UsageError(f"config: [memory.importance] has unknown type {kind!r}; "
                             f"types: {', '.join(TYPES)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 10:
            raise UsageError(f"config: [memory.importance] {kind} must be a number from 1 to 10")
        table[kind] = float(value)
    return table


def option(raw: Mapping[str, Any] | None, name: str, default: Any) -> Any:
    """A `[memory]` option from the config file, or its default."""
    section = (raw or {}).get("memory") or {}
    value = section.get(name, default) if isinstance(section, dict) else default
    return value if isinstance(value, type(default)) or (
        isinstance(default, float) and isinstance(value, int)) else default

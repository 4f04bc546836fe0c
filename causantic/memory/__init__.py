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

from causantic.config import DEFAULT_IMPORTANCE  # types and base importance, `[memory.importance]`

TYPES = tuple(DEFAULT_IMPORTANCE)
ORIGINS = ("explicit", "auto", "reflection")
MAX_TEXT = 4000  # characters kept of one observation

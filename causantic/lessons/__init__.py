"""Lessons: "tried X, it failed because Y, Z fixed it", learned from transcripts without an LLM.

- `signature`: what makes two errors the same (hook fast path: stdlib only).
- `episodes`: a session's chunks -> lesson rows, at ingest.
- `surface`: the PostToolUse lookup and its one-paragraph reminder.
- `gitcheck`: whether a fix is still in the repository (read-only git, bounded time).
- `compact`: what a compaction summary dropped from the session's state.
"""

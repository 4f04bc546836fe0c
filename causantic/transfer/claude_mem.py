"""Read claude-mem's SQLite database (`~/.claude-mem/claude-mem.db`) without claude-mem.

Schema as of claude-mem v13 (thedotmack/claude-mem, `src/services/sqlite/SessionStore.ts`),
with the column names of older versions accepted where they were renamed:

- `sdk_sessions`: one row per Claude Code session claude-mem watched: `content_session_id`
  (formerly `claude_session_id`, the Claude Code session id), `memory_session_id` (formerly
  `sdk_session_id`), `project`, `user_prompt`, `custom_title`, `started_at[_epoch]`,
  `completed_at[_epoch]`.
- `observations`: what its background model wrote about each tool call: `type` (decision,
  bugfix, feature, refactor, discovery, change), `title`, `subtitle`, `narrative`, `text`,
  `facts` / `concepts` / `files_read` / `files_modified` (JSON arrays), `prompt_number`,
  `created_at[_epoch]`, keyed to a session by `memory_session_id`.
- `session_summaries`: request / investigated / learned / completed / next_steps / notes /
  files_read / files_edited per session (`kind = 'summary'` here).
- `user_prompts`: the user's prompts (`prompt_text`, `prompt_number`), keyed by
  `content_session_id` (or `session_db_id` -> `sdk_sessions.id`).

Each row becomes one chunk in session `claude-mem:<Claude Code session id>`, with the row's
time and the session's project. The database is opened read-only; nothing is written to it.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from causantic.config import Settings
from causantic.errors import UsageError
from causantic.ingest.exclude import Exclusions
from causantic.store.db import open_store
from causantic.store.foreign_db import open_readonly, table_rows
from causantic.store.sql import table_names
from causantic.transfer.foreign import (
    ForeignRecord,
    ForeignReport,
    ForeignSession,
    iso_from_epoch,
    write,
)

SOURCE = "claude-mem"
TABLES = ("sdk_sessions", "observations", "session_summaries", "user_prompts")


def import_database(settings: Settings, path: Path, *, dry_run: bool = False) -> ForeignReport:
    """Import a claude-mem database into `settings.db_path` (a dry run writes nothing, and
    creates no database where there is none).

    Raises
    ------
    UsageError : not a SQLite file, or not a claude-mem database.
    """
    # deferred: heavy: pulls numpy, only needed here
    from causantic.ingest.run import make_redact

    sessions, records, counts = read(path)
    report = ForeignReport(SOURCE, str(path), dry_run=dry_run, read=counts)
    db = Path(settings.db_path)
    with contextlib.ExitStack() as stack:
        if dry_run and not db.exists():
            db = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "memory.db"
        store = stack.enter_context(open_store(db))
        write(store, sessions, records, make_redact(settings), report,
              Exclusions(settings.ingest.exclude))
    return report


def _first(row: dict[str, Any], *names: str) -> Any:
    for name in names:
        if row.get(name) not in (None, ""):
            return row[name]
    return None


def _items(value: Any) -> list[str]:
    """A JSON array column (or plain text) as a list of strings."""
    if value in (None, ""):
        return []
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        if isinstance(parsed, list):
            return [str(v) for v in parsed if v not in (None, "")]
        return [str(parsed)]
    return [str(value)]


def _time(row: dict[str, Any]) -> str | None:
    return iso_from_epoch(row.get("created_at_epoch"), row.get("created_at"))


def read(path: Path) -> tuple[list[ForeignSession], list[ForeignRecord], dict[str, int]]:
    """The sessions and records of a claude-mem database, and how many rows of each table.

    Raises
    ------
    UsageError : not a SQLite file, or not a claude-mem database.
    """
    conn = open_readonly(path)
    try:
        present = table_names(conn)
        if "sdk_sessions" not in present or not present & {"observations", "session_summaries"}:
            raise UsageError(f"{path} is not a claude-mem database (no sdk_sessions and "
                             "observations tables)")
        rows = {t: table_rows(conn, t) if t in present else [] for t in TABLES}
    finally:
        conn.close()
    sessions: dict[str, ForeignSession] = {}
    by_memory: dict[str, str] = {}
    by_db_id: dict[int, str] = {}
    for s in rows["sdk_sessions"]:
        content = _first(s, "content_session_id", "claude_session_id")
        memory = _first(s, "memory_session_id", "sdk_session_id")
        sid = f"{SOURCE}:{content or memory or s['id']}"
        title = _first(s, "custom_title") or (str(s.get("user_prompt") or "").strip()
                                              .split("\n")[0][:80] or None)
        sessions.setdefault(sid, ForeignSession(sid, str(s.get("project") or "unknown"), title))
        if memory:
            by_memory[str(memory)] = sid
        if content:
            by_memory.setdefault(str(content), sid)
        by_db_id[int(s["id"])] = sid

    def session_of(row: dict[str, Any], *keys: str) -> str:
        for key in keys:
            value = row.get(key)
            if value not in (None, "") and str(value) in by_memory:
                return by_memory[str(value)]
        if row.get("session_db_id") in by_db_id:
            return by_db_id[row["session_db_id"]]
        value = _first(row, *keys)
        sid = f"{SOURCE}:{value or 'unknown'}"
        sessions.setdefault(sid, ForeignSession(sid, str(row.get("project") or "unknown")))
        return sid

    records: list[ForeignRecord] = []
    for o in rows["observations"]:
        when = _time(o)
        text = _observation_text(o)
        if when is None or not text:
            continue
        files = _items(o.get("files_read")) + _items(o.get("files_modified"))
        records.append(ForeignRecord(
            SOURCE, "observations", str(o["id"]),
            session_of(o, "memory_session_id", "sdk_session_id"), when, text,
            turn=int(o.get("prompt_number") or 0),
            meta={"type": o.get("type"), "files": sorted(set(files))}))
    for s in rows["session_summaries"]:
        when = _time(s)
        text = _summary_text(s)
        if when is None or not text:
            continue
        records.append(ForeignRecord(
            SOURCE, "session_summaries", str(s["id"]),
            session_of(s, "memory_session_id", "sdk_session_id"), when, text, kind="summary",
            turn=int(s.get("prompt_number") or 0)))
    for p in rows["user_prompts"]:
        when = _time(p)
        prompt = str(p.get("prompt_text") or "").strip()
        if when is None or not prompt:
            continue
        records.append(ForeignRecord(
            SOURCE, "user_prompts", str(p["id"]),
            session_of(p, "content_session_id", "claude_session_id"), when, f"[User]\n{prompt}",
            turn=int(p.get("prompt_number") or 0)))
    counts = {t: len(rows[t]) for t in TABLES if rows[t]}
    return list(sessions.values()), records, counts


def _observation_text(o: dict[str, Any]) -> str:
    head = f"[claude-mem {o.get('type') or 'observation'}] {o.get('title') or ''}".rstrip()
    parts = [head]
    for name in ("subtitle", "narrative", "text"):
        value = str(o.get(name) or "").strip()
        if value:
            parts.append(value)
    facts = _items(o.get("facts"))
    if facts:
        parts.append("Facts:\n" + "\n".join(f"- {f}" for f in facts))
    for label, name in (("Concepts", "concepts"), ("Files read", "files_read"),
                        ("Files modified", "files_modified")):
        items = _items(o.get(name))
        if items:
            parts.append(f"{label}: {', '.join(items)}")
    return "\n\n".join(parts) if len(parts) > 1 or o.get("title") else ""


def _summary_text(s: dict[str, Any]) -> str:
    lines = []
    for label, name in (("Request", "request"), ("Investigated", "investigated"),
                        ("Learned", "learned"), ("Completed", "completed"),
                        ("Next steps", "next_steps"), ("Notes", "notes")):
        value = str(s.get(name) or "").strip()
        if value:
            lines.append(f"{label}: {value}")
    for label, name in (("Files read", "files_read"), ("Files edited", "files_edited")):
        items = _items(s.get(name))
        if items:
            lines.append(f"{label}: {', '.join(items)}")
    return "[claude-mem session summary]\n" + "\n".join(lines) if lines else ""

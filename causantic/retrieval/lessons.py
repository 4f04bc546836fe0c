"""Lessons as answers: `causantic lessons`, and lessons beside search and recall results.

`list_view` renders stored lessons (newest first) with, when cheap, whether each fix is still
in the repository (`causantic.lessons.gitcheck`). `attach` adds the lessons whose text holds
every word of a short query to a search or recall answer, each line marked `◇ lesson`, and
under `"lessons"` in its JSON.
"""

from __future__ import annotations

import json
import time

import apsw

from causantic.lessons.gitcheck import fix_status
from causantic.lessons.surface import render
from causantic.retrieval.fts import query_terms
from causantic.retrieval.projects import resolve_project
from causantic.retrieval.render import Answer
from causantic.store.counts import any_chunks
from causantic.store.ledger import entries, per_session
from causantic.store.lessons import LessonRow, list_lessons, search_lessons
from causantic.store.lessons import count as count_lessons
from causantic.store.sessions import session_cwd

GIT_BUDGET_S = 2.0
MARK = "◇ lesson"
MAX_QUERY_TERMS = 8


def lesson_dict(row: LessonRow, status: dict[str, object] | None = None) -> dict[str, object]:
    """A lesson as plain JSON."""
    out: dict[str, object] = {
        "id": row.id, "project": row.project, "session_id": row.session_id, "time": row.time,
        "tool": row.tool, "program": row.program, "error_class": row.error_class,
        "signature": row.signature, "error": row.error, "subject": row.subject,
        "occurrences": row.occurrences, "attempts": json.loads(row.attempts),
        "resolved": bool(row.resolved), "fix": row.fix, "fix_command": row.fix_command,
        "fix_files": json.loads(row.fix_files), "fix_time": row.fix_time,
        "fix_commit": row.fix_commit, "error_chunk": row.error_chunk,
        "fix_chunk": row.fix_chunk, "change_chunks": json.loads(row.change_chunks),
    }
    if status is not None:
        out["git"] = status
    return out


def git_statuses(conn: apsw.Connection, rows: list[LessonRow],
                 budget_s: float = GIT_BUDGET_S) -> dict[str, dict[str, object]]:
    """Git status of each resolved lesson's fix, for as many as fit in `budget_s` seconds."""
    deadline = time.monotonic() + budget_s
    cwds: dict[str, str | None] = {}
    out: dict[str, dict[str, object]] = {}
    for row in rows:
        if not row.resolved or time.monotonic() >= deadline:
            continue
        if row.session_id not in cwds:
            cwds[row.session_id] = session_cwd(conn, row.session_id)
        status = fix_status(cwds[row.session_id], row.fix_commit, json.loads(row.fix_files),
                            row.fix_time, deadline)
        if status is not None:
            out[row.id] = status.as_dict()
    return out


def _line(row: LessonRow, status: dict[str, object] | None, listing: bool = False) -> str:
    text = render(row, max_chars=600, listing=listing)
    if status and status.get("text"):
        text += f" [git: {status['text']}]"
    return text


def list_view(conn: apsw.Connection, project: str | None = None, limit: int = 50,
              unresolved: bool | None = None, git: bool = True) -> tuple[dict[str, object], str]:
    """(JSON answer, text) for `causantic lessons`."""
    resolved = None if unresolved is None else not unresolved
    project = resolve_project(conn, project)
    rows = list_lessons(conn, project=project, resolved=resolved, limit=limit)
    statuses = git_statuses(conn, rows) if git else {}
    lines = []
    for row in rows:
        mark = "✓" if row.resolved else "✗ seen, never solved:"
        lines.append(f"{mark} {_line(row, statuses.get(row.id), listing=True)}"
                     f"  [lesson {row.id[:8]}]")
    if not rows:
        total = count_lessons(conn)[0]
        chunks = any_chunks(conn)
        text = ("No lessons yet: run `causantic lessons --rebuild` to derive them from the "
                "stored sessions." if not total and chunks else "No lessons"
                + (f" for project {project}." if project else "."))
    else:
        text = "\n".join(lines)
    return {"project": project, "lessons": [lesson_dict(r, statuses.get(r.id)) for r in rows],
            "text": text}, text


def matching(conn: apsw.Connection, query: str, project: str | None = None,
             limit: int = 2) -> list[LessonRow]:
    """Lessons whose text holds every word of a short query (none for long queries)."""
    terms = query_terms(query)
    if not terms or len(terms) > MAX_QUERY_TERMS:
        return []
    match = " AND ".join('"' + t.replace('"', "") + '"' for t in terms)
    try:
        return search_lessons(conn, match, project=project, limit=limit)
    except apsw.SQLError:  # a database without the lessons tables (read-only, not migrated)
        return []


def attach(conn: apsw.Connection, query: str, project: str | None, answer: Answer,
           git: bool = True) -> Answer:
    """The answer with matching lessons added (marked `◇ lesson`); unchanged when none match."""
    rows = matching(conn, query, resolve_project(conn, project))
    if not rows:
        return answer
    statuses = git_statuses(conn, rows, budget_s=1.0) if git else {}
    block = "\n".join(f"{MARK} {_line(r, statuses.get(r.id))}" for r in rows)
    return answer.replace(text=f"{answer.text}\n\nLessons from past errors:\n{block}",
                          lessons=[lesson_dict(r, statuses.get(r.id)) for r in rows])


def ledger_view(conn: apsw.Connection, session_id: str | None = None,
                limit: int = 100) -> tuple[dict[str, object], str]:
    """(JSON answer, text) for `causantic ledger`: injections newest first, with totals."""

    rows = entries(conn, session_id=session_id, limit=limit)
    tokens = sum(r.tokens for r in rows)
    lines = [f"{r.time[:19].replace('T', ' ')}  {r.event:<20} session {r.session_id[:8] or '-':<8}"
             f"  {r.tokens:>5} tokens  {len(r.chunk_ids)} chunks"
             + (f", lessons {', '.join(i[:8] for i in r.lesson_ids)}" if r.lesson_ids else "")
             for r in rows]
    head = (f"{len(rows)} injection{'s' if len(rows) != 1 else ''}, {tokens:,} tokens"
            + (f" in session {session_id}" if session_id else "") + ":")
    text = "\n".join([head, *lines]) if rows else "Nothing injected yet" + (
        f" in session {session_id}." if session_id else ".")
    return {"session": session_id, "tokens": tokens,
            "injections": [r.as_dict() for r in rows], "text": text}, text


def ledger_summary(conn: apsw.Connection, limit: int = 5) -> str:
    """One line per recent session: injections and tokens (for `doctor`); '' when none."""

    try:
        rows = per_session(conn, limit)
    except apsw.SQLError:
        return ""
    return "; ".join(f"{sid[:8] or '(no session)'}: {n} injection{'s' if n != 1 else ''}, "
                     f"{tokens:,} tokens" for sid, n, tokens, _ in rows)

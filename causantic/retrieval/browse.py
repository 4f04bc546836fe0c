"""Browsing memory: projects, sessions, and counts (`list-projects`, `list-sessions`, `stats`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import apsw

from causantic.retrieval.projects import resolve_project
from causantic.retrieval.render import short_time
from causantic.store.chunks import SessionSummary, project_summaries, session_summaries
from causantic.store.stats import stored_counts
from causantic.store.timeline import first_prompt
from causantic.timestamps import days_ago
from causantic.tokens import clip_line
from causantic.transcripts.project import worktree_name
from causantic.wording import plural


@dataclass(frozen=True)
class ProjectInfo:
    name: str
    sessions: int
    chunks: int
    first: str
    last: str

    def as_dict(self) -> dict[str, object]:
        return {"project": self.name, "sessions": self.sessions, "chunks": self.chunks,
                "first": self.first, "last": self.last}


SessionInfo = SessionSummary  # the store's row is what list-sessions shows


def list_projects(conn: apsw.Connection) -> list[ProjectInfo]:
    """Projects with at least one chunk, most recently active first."""
    return [ProjectInfo(*row) for row in project_summaries(conn)]


def render_projects(projects: list[ProjectInfo]) -> str:
    if not projects:
        return "No projects in memory yet. Run `causantic ingest`."
    lines = ["Projects in memory:"]
    for p in projects:
        lines.append(
            f"- {p.name} ({plural(p.sessions, 'session')}, {plural(p.chunks, 'chunk')}, "
            f"{short_time(p.first)[:10]} – {short_time(p.last)[:10]})"
        )
    return "\n".join(lines)


def list_sessions(
    conn: apsw.Connection,
    project: str,
    *,
    days_back: int | None = None,
    limit: int = 50,
    now: datetime | None = None,
) -> list[SessionInfo]:
    """Sessions of a project, newest first.

    `project` may be a worktree folder name or a path (`projects.resolve_project`); raises
    UsageError when no project is called that (so typos are visible).
    """
    project = resolve_project(conn, project) or ""
    ended_since = None
    if days_back is not None:
        since = days_ago(days_back, now)
        ended_since = since.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    # A session Claude Code gave no title is told by what it set out to do.
    return [s if s.title else s._replace(opening=first_prompt(conn, s.session_id))
            for s in session_summaries(conn, project, ended_since=ended_since, limit=limit)]


def render_sessions(project: str, sessions: list[SessionInfo]) -> str:
    if not sessions:
        return f'No sessions found for project "{project}" in that time range.'
    lines = [f'Sessions of "{sessions[0].project}" (newest first):']
    for s in sessions:
        title = (f" — {s.title}" if s.title
                 else f' — "{clip_line(s.opening, 100)}"' if s.opening else "")
        start, end = short_time(s.start_time), short_time(s.end_time)
        if s.end_time and start[:10] == end[:10]:
            end = end[11:]  # same day: the end time alone
        where = f", branch {s.git_branch}" if s.git_branch else ""
        worktree = worktree_name(s.checkout, s.project)
        if worktree:
            where += f", worktree {worktree}"
        lines.append(
            f"- {s.session_id} ({start} – {end}, {plural(s.chunks, 'chunk')}, "
            f"{plural(s.tokens, 'token')}{where}){title}"
        )
    return "\n".join(lines)


def stats(conn: apsw.Connection, project: str | None = None) -> dict[str, object]:
    """Counts of everything stored, plus redactions and bad lines; with ``project`` (any of
    its names: `resolve_project`), what that project holds, and its name under "project".

    Raises
    ------
    UsageError : no project is called ``project``.
    """
    name = resolve_project(conn, project)
    counts = dict(stored_counts(conn, name)._asdict())
    return counts if name is None else {"project": name, **counts}


def _size(n: int) -> str:
    """A byte count as people read it: 740 KB, 23.5 MB, 1.2 GB."""
    if n < 1 << 20:
        return f"{max(1, round(n / 1024))} KB"
    if n < 1 << 30:
        return f"{n / (1 << 20):.1f} MB"
    return f"{n / (1 << 30):.1f} GB"


def render_stats(s: dict[str, object], db_path: str) -> str:
    kinds = s.get("edge_kinds")
    kind_text = (", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
                 if isinstance(kinds, dict) and kinds else "none")
    chunks, vectors = int(str(s["chunks"])), int(str(s["vectors"]))
    untokened = vectors - int(str(s.get("token_bits", vectors)))
    lines = [
        (f"Memory of project {s['project']} at {db_path}" if s.get("project") else
         f"Memory at {db_path}" + (f" ({_size(int(str(s['bytes'])))})" if s.get("bytes") else "")),
        *([] if s.get("project") else [f"- projects: {s['projects']}"]),
        f"- sessions: {s['sessions']}",
        f"- chunks: {s['chunks']} ({s['subagent_chunks']} from sub-agents)",
        f"- edges: {s['edges']} ({kind_text})",
        f"- vectors: {vectors}"
        + (f" ({chunks - vectors} chunks waiting: `causantic embed`)" if chunks > vectors else "")
        + (f" ({untokened} without the token rerank's bits: `causantic embed`)"
           if untokened > 0 else ""),
        f"- topics: {s['clusters']}",
        f"- secrets redacted: {s['redactions']}",
        f"- transcript files read: {s['files']} (bad lines skipped: {s['bad_lines']})",
    ]
    if s.get("forgotten"):
        lines.append(f"- forgotten (tombstones): {s['forgotten']}")
    if s.get("first"):
        lines.append(f"- time span: {short_time(str(s['first']))} – {short_time(str(s['last']))} UTC")
    return "\n".join(lines)

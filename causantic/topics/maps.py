"""Reading topics back: the topic list and one topic's chunks (a project's active topics, for
the briefing: `causantic.topics.active`).

SQL only (no numpy). Sizes, time spans and
projects are counted from current memberships (`causantic.store.topics.topic_stats`).

Order of `list_topics`: ``sort="size"`` (default) puts the largest topic first (ties: most
recent activity first); ``sort="recent"`` the topic with the most recent chunk first. With a
project, topics without chunks of that project are left out and sizes count that project's
chunks only (``size``), next to the topic's whole size (``total``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import apsw

from causantic.errors import UsageError
from causantic.retrieval.projects import resolve_project
from causantic.retrieval.render import label, short_time
from causantic.store import topics as topic_store
from causantic.store.counts import any_chunks, any_vectors
from causantic.store.hits import load_hits
from causantic.tokens import clip

SORTS = ("size", "recent")
#: Projects named per topic in the text listing (the JSON has all of them).
SHOWN_PROJECTS = 3


@dataclass(frozen=True)
class TopicList:
    """The answer of `causantic topics`: topics in order, the build they come from, the text."""

    topics: list[topic_store.TopicStats]
    build: topic_store.BuildInfo | None
    project: str | None
    sort: str
    text: str
    totals: dict[int, int] = field(default_factory=dict)  # topic id -> whole size

    def as_dict(self) -> dict[str, object]:
        return {
            "project": self.project,
            "sort": self.sort,
            "built_at": self.build.built_at if self.build else None,
            "model_id": self.build.model_id if self.build else None,
            "chunks": self.build.chunks if self.build else 0,
            "topics": [{**t.as_dict(), "total": self.totals.get(t.id, t.size)} for t in self.topics],
            "text": self.text,
        }


@dataclass(frozen=True)
class TopicMember:
    """One chunk of a topic, for `causantic topics show`."""

    chunk_id: str
    session_id: str
    project: str
    agent_id: str
    start_time: str
    end_time: str
    distance: float
    probability: float | None
    first_line: str

    def as_dict(self) -> dict[str, object]:
        return {"chunk_id": self.chunk_id, "session_id": self.session_id,
                "project": self.project, "start_time": self.start_time,
                "end_time": self.end_time, "distance": round(self.distance, 4),
                "probability": None if self.probability is None else round(self.probability, 4),
                "first_line": self.first_line}


@dataclass(frozen=True)
class TopicView:
    """The answer of `causantic topics show ID`."""

    topic: topic_store.TopicStats
    members: list[TopicMember]
    text: str

    def as_dict(self) -> dict[str, object]:
        return {"topic": self.topic.as_dict(), "chunks": [m.as_dict() for m in self.members],
                "text": self.text}


def no_topics_reason(conn: apsw.Connection) -> str | None:
    """Why there is nothing to list (one line that says what to run), or None."""
    if topic_store.build_info(conn) is not None:
        return None
    if not any_vectors(conn):
        if not any_chunks(conn):
            return ("No topics yet: memory is empty. Run `causantic ingest`: topics come with "
                    "the vectors, from a hundred chunks on (or `causantic topics rebuild`).")
        return ("No topics yet: memory has no chunk vectors. Run `causantic embed`: topics "
                "come with the vectors, from a hundred chunks on (or `causantic topics rebuild`).")
    return "No topics yet: run `causantic topics rebuild`."


def list_topics(
    conn: apsw.Connection, *, project: str | None = None, sort: str = "size",
    limit: int | None = None, own_only: bool = False,
) -> TopicList:
    """The topics, largest (or most recent) first; see the module docstring. ``own_only``
    (with ``project``): only topics all of whose chunks are the project's, so no other
    project's name or terms show (`[memory] scope = "project"`).

    Raises
    ------
    UsageError : unknown ``sort``, or a project with no chunks in memory.
    """
    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}; use one of {', '.join(SORTS)}")
    project = resolve_project(conn, project)
    reason = no_topics_reason(conn)
    build = topic_store.build_info(conn)
    if reason is not None:
        return TopicList([], build, project, sort, reason)
    stats = topic_store.topic_stats(conn)
    totals = {t.id: t.size for t in stats}
    if project is not None:
        stats = [_within(t, project) for t in stats if project in t.projects
                 and not (own_only and len(t.projects) > 1)]
    stats.sort(key=lambda t: t.id)  # stable sorts, last key first
    if sort == "size":
        stats.sort(key=lambda t: t.last, reverse=True)
        stats.sort(key=lambda t: t.size, reverse=True)
    else:
        stats.sort(key=lambda t: t.size, reverse=True)
        stats.sort(key=lambda t: t.last, reverse=True)
    shown = stats[:limit] if limit else stats
    return TopicList(shown, build, project, sort, _render_list(shown, build, project, sort,
                                                               len(stats), totals), totals)


def show_topic(
    conn: apsw.Connection, topic_id: int, *, project: str | None = None, limit: int = 50,
    own_only: bool = False,
) -> TopicView:
    """A topic's chunks, oldest first, each as its header and first line. ``own_only``: a
    topic with chunks of other projects than ``project`` is not shown (as `list_topics`).

    Raises
    ------
    UsageError : no such topic (or none at all), or a project with no chunks in memory.
    """
    project = resolve_project(conn, project)
    reason = no_topics_reason(conn)
    if reason is not None:
        raise UsageError(reason)
    row = topic_store.topic_row(conn, topic_id)
    stats = next((t for t in topic_store.topic_stats(conn) if t.id == topic_id), None)
    if own_only and stats is not None and set(stats.projects) != {project}:
        stats = None  # as unknown: the refusal would tell another project has it
    if row is None or stats is None:
        raise UsageError(f"no topic #{topic_id}; `causantic topics` lists the topics")
    members = topic_store.members(conn, topic_id, project=project)
    shown = _member_rows(conn, members[:limit])
    head = _topic_line(stats)
    lines = [f"Topic {head}", f"Terms: {', '.join(stats.terms)}" if stats.terms else "Terms: none"]
    scope = f" of project {project}" if project else ""
    if not members:
        lines.append(f"\nNo chunks{scope} in this topic.")
    else:
        more = f" (first {len(shown)} of {len(members)})" if len(members) > len(shown) else ""
        lines.append(f"\nChunks{scope}, oldest first{more}:")
        for i, m in enumerate(shown, start=1):
            lines.append(label(m.project, m.session_id, m.agent_id, m.start_time, m.first_line,
                               index=i))
    return TopicView(stats, shown, "\n".join(lines))


def first_line(text: str, max_chars: int = 140) -> str:
    """The first line of a chunk that says something (not a bare block label), clipped."""
    for line in text.splitlines():
        line = line.strip()
        if not line or (line.startswith("[") and line.endswith("]") and len(line) < 40):
            continue
        return clip(line, max_chars, strip=True)
    return ""


# -- helpers -------------------------------------------------------------------------------


def _within(t: topic_store.TopicStats, project: str) -> topic_store.TopicStats:
    """The topic with its size counted in one project (time span stays the topic's)."""
    return topic_store.TopicStats(t.id, t.name, t.terms, t.projects[project], t.first, t.last,
                                  dict(t.projects))


def _topic_line(t: topic_store.TopicStats) -> str:
    projects = sorted(t.projects.items(), key=lambda pn: (-pn[1], pn[0]))
    named = ", ".join(p for p, _ in projects[:SHOWN_PROJECTS])
    if len(projects) > SHOWN_PROJECTS:
        named += f" +{len(projects) - SHOWN_PROJECTS} more"
    return (f"#{t.id} {t.name} — {t.size} chunks · {short_time(t.first)[:10]} – "
            f"{short_time(t.last)[:10]} · {named}")


def _render_list(
    shown: list[topic_store.TopicStats], build: topic_store.BuildInfo | None,
    project: str | None, sort: str, total: int, totals: dict[int, int],
) -> str:
    when = f"built {short_time(build.built_at)} UTC from {build.chunks} chunks" if build else ""
    if not shown:
        if project is not None:
            return f'No topics with chunks of project "{project}" ({when}).'
        return (f"No topics ({when}): no group of similar chunks was large enough. "
                "Run `causantic topics rebuild` again once memory has grown.")
    order = "largest first" if sort == "size" else "most recent first"
    scope = f' with chunks of project "{project}"' if project else ""
    more = f", showing {len(shown)}" if len(shown) < total else ""
    lines = [f"{total} topics{scope} ({when}; {order}{more}):"]
    for t in shown:
        line = _topic_line(t)
        if project is not None and totals.get(t.id, t.size) != t.size:
            line = line.replace(f" — {t.size} chunks", f" — {t.size} of {totals[t.id]} chunks", 1)
        lines.append(line)
    lines.append("Show one with `causantic topics show ID`.")
    return "\n".join(lines)


def _member_rows(
    conn: apsw.Connection, members: list[tuple[str, float, float | None]]
) -> list[TopicMember]:
    probability = {cid: prob for cid, _, prob in members}
    return [TopicMember(h.chunk_id, h.session_id, h.project, h.agent_id, h.start_time,
                        h.end_time, h.score, probability[h.chunk_id], first_line(h.text))
            for h in load_hits(conn, [(cid, dist, ()) for cid, dist, _ in members])]

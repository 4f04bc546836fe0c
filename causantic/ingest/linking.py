"""Causal edges between stored chunks: chains, not a dense graph.

- `next`: each chunk to the following chunk of its stream (main conversation or one
  sub-agent), within and across turns. A prompt that opens with an explicit topic-shift
  marker ("moving on", "unrelated question", ...) cuts the link; a gap of more than
  30 minutes weakens it (weight 0.5).
- `brief`: the parent chunk whose tool call spawned a sub-agent -> the sub-agent's first chunk.
- `debrief`: the sub-agent's last chunk -> the parent chunk that received its result (or, if
  none is stored, the parent chunk after the spawning one).
- `continues`: the last chunk of the previous session of the same project -> the first chunk
  of a session that opens as a continuation (compaction summary, fork, second session in one
  file). The predecessor is the latest session ending before the continuation starts, so the
  result does not depend on the order in which files were ingested.

Linking is recomputed per touched session from what is stored, inside the same transaction
as the chunk writes, and edges are unique per (src, dst, kind): re-running it never adds
duplicates, and an ingest killed half way leaves no half-linked session.
"""

from __future__ import annotations

import json

import apsw

from causantic.store.chunks import StreamChunk, session_chunks, stream_end
from causantic.store.edges import continues_into, delete_continues, upsert_edges
from causantic.store.sessions import project_sessions
from causantic.timestamps import parse_iso

GAP_SECONDS = 30 * 60
WEAK = 0.5


def link_session(conn: apsw.Connection, session_id: str) -> int:
    """(Re)link the `next`, `brief` and `debrief` edges of one session; return edges added."""
    chunks = session_chunks(conn, session_id)
    if not chunks:
        return 0
    streams: dict[str, list[StreamChunk]] = {}
    for c in chunks:
        streams.setdefault(c.agent_id, []).append(c)
    edges: list[tuple[str, str, str, float]] = []
    for stream in streams.values():
        edges += _sequential(stream)
    main = streams.get("", [])
    if main:
        edges += _agent_edges(main, streams)
    return upsert_edges(conn, edges)


def link_project_continuations(conn: apsw.Connection, project: str) -> int:
    """Make the `continues` edges of a project match its sessions; return edges added."""
    sessions = project_sessions(conn, project)
    by_id = {s.id: s for s in sessions}
    added = 0
    for s in sessions:
        if not (s.continued or s.forked_from) or not s.start_time:
            continue
        first = stream_end(conn, s.id, first=True)
        if first is None:
            continue
        prev = by_id.get(s.forked_from or "")
        if prev is None:
            candidates = [
                p
                for p in sessions
                if p.id != s.id and p.end_time and p.end_time <= s.start_time
            ]
            prev = max(candidates, key=lambda p: (p.end_time, p.id), default=None)
        want = stream_end(conn, prev.id, first=False) if prev else None
        current = continues_into(conn, first)
        for src in current - {want}:
            delete_continues(conn, src, first)
        if want is not None and want not in current and want != first:
            added += upsert_edges(conn, [(want, first, "continues", 1.0)])
    return added


def _sequential(stream: list[StreamChunk]) -> list[tuple[str, str, str, float]]:
    out = []
    for a, b in zip(stream, stream[1:]):
        if b.part == 0 and '"shift":true' in b.meta:
            continue
        weight = WEAK if _gap_seconds(a.end_time, b.start_time) > GAP_SECONDS else 1.0
        out.append((a.id, b.id, "next", weight))
    return out


def _agent_edges(
    main: list[StreamChunk], streams: dict[str, list[StreamChunk]]
) -> list[tuple[str, str, str, float]]:
    spawn: dict[str, int] = {}
    result: dict[str, int] = {}
    for i, c in enumerate(main):
        if '"spawned"' in c.meta or '"returned"' in c.meta:
            meta = json.loads(c.meta)
            for agent in meta.get("spawned", []):
                spawn.setdefault(agent, i)
            for agent in meta.get("returned", []):
                result.setdefault(agent, i)
    out = []
    for agent, stream in streams.items():
        if not agent or not stream:
            continue
        at = spawn.get(agent)
        back = result.get(agent)
        if at is not None:
            out.append((main[at].id, stream[0].id, "brief", 1.0))
            if back is None and at + 1 < len(main):
                back = at + 1
        if back is not None:
            out.append((stream[-1].id, main[back].id, "debrief", 1.0))
    return out


def _gap_seconds(end: str, start: str) -> float:
    try:
        a = parse_iso(end)
        b = parse_iso(start)
    except ValueError:
        return 0.0
    return (b - a).total_seconds()

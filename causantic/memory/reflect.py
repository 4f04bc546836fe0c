"""Reflection without an API key: the evidence and questions, for the calling agent to answer.

Engram asks Claude (with a key) for guiding questions and insights. We hand the agent that
called the MCP tool `reflect` what it needs to do the same: guiding questions, and evidence
groups of the project's observations since its last reflection (by topic when topics exist,
else by type), its recent errors with their fixes, and fixes that repeat. The agent writes
what it concludes with `observe(type="insight" | "procedure", cites=[...])`. Calling
`reflect` records the time, which resets the triggers (`triggers.due`).
"""

from __future__ import annotations

from collections import defaultdict

import apsw

from causantic.errors import UsageError
from causantic.memory.observe import now_iso
from causantic.memory.recall import retrieve
from causantic.memory.scope import memory_project
from causantic.memory.triggers import due, mark_name
from causantic.store import memories as sql
from causantic.store.db import Store
from causantic.store.topic_members import topic_names_of

PER_GROUP = 8


def reflect(store: Store, project: str, *, focus: str | None = None, record: bool = True,
            limit: int = 60) -> dict[str, object]:
    """Questions and evidence groups for the project; records the reflection unless told not to.

    Raises
    ------
    UsageError : the project has no memories.
    """
    conn = store.conn
    project = memory_project(conn, project) or ""
    last = sql.get_mark(conn, mark_name(project))
    why = due(conn, project)
    rows = sql.select(conn, project=project, order="importance", limit=limit * 4)
    rows = [r for r in rows if r.origin != "reflection"]
    if not rows:
        raise UsageError(f"no memories for project {project!r} yet; nothing to reflect on")
    if focus:

        found = retrieve(store, focus, project=project, limit=limit)
        focus_ids = {c.memory.id for c in found}
        rows = [r for r in rows if r.id in focus_ids] or rows
    new = [r for r in rows if last is None or r.created_at > last][:limit]
    pool = new if len(new) >= 3 else rows[:limit]
    cites = sql.citations(conn, [r.id for r in pool])
    dups = sql.duplicates_of(conn, [r.id for r in pool])
    groups: list[dict[str, object]] = []
    by_topic = _topic_groups(conn, cites)
    if by_topic:
        for name, ids in by_topic:
            members = [r for r in pool if r.id in ids][:PER_GROUP]
            if len(members) >= 2:
                groups.append(_group(f"topic: {name}", members, cites))
    by_type: dict[str, list] = defaultdict(list)
    for r in pool:
        by_type[r.type].append(r)
    errors = by_type.pop("error", [])
    if errors:
        groups.append(_group("recent errors and their fixes", errors[:PER_GROUP], cites))
    repeated = [r for r in pool if r.count > 1 or dups.get(r.id)]
    if repeated:
        groups.append(_group("repeated (seen more than once)", repeated[:PER_GROUP], cites))
    if not by_topic:
        for kind, members in sorted(by_type.items(), key=lambda kv: -len(kv[1])):
            groups.append(_group(f"type: {kind}", members[:PER_GROUP], cites))
    questions = _questions(errors, repeated, by_type)
    if record:
        with conn:
            sql.set_mark(conn, mark_name(project), now_iso())
    lines = [f"Reflection on {project}: {len(pool)} observations"
             + (f" since {last[:16].replace('T', ' ')}" if last and pool is new else "")
             + (f" (due: {why})" if why else "") + "."]
    lines.append("Answer these from the evidence below, then save each conclusion with the "
                 "`observe` tool: type=insight (a lesson) or type=procedure (numbered steps), "
                 "cites = the chunk ids shown, project = this project.")
    lines += [f"Q{i}. {q}" for i, q in enumerate(questions, 1)]
    for g in groups:
        lines.append("")
        lines.append(f"## {g['title']}")
        for item in g["items"]:  # type: ignore[attr-defined]
            cited = f" [cites: {', '.join(item['cites'][:3])}]" if item["cites"] else ""
            lines.append(f"- {item['id']} ({item['type']}, ×{item['count']}): "
                         f"{item['text'][:300]}{cited}")
    return {"project": project, "due": why, "questions": questions, "groups": groups,
            "text": "\n".join(lines)}


def _group(title: str, members: list, cites: dict[str, list[str]]) -> dict[str, object]:
    return {"title": title, "items": [
        {"id": m.id, "type": m.type, "count": m.count, "text": m.text, "cites": cites.get(m.id, [])}
        for m in members]}


def _topic_groups(conn, cites: dict[str, list[str]]) -> list[tuple[str, set[str]]]:
    """(topic name, memory ids) for memories whose cited chunks belong to topics."""


    chunk_to_memory: dict[str, list[str]] = defaultdict(list)
    for mid, chunk_ids in cites.items():
        for c in chunk_ids:
            chunk_to_memory[c].append(mid)
    if not chunk_to_memory:
        return []
    try:
        out: dict[str, set[str]] = defaultdict(set)
        for cid, name in topic_names_of(conn, list(chunk_to_memory)):
            out[name].update(chunk_to_memory[cid])
    except apsw.SQLError:
        return []
    return sorted(out.items(), key=lambda kv: -len(kv[1]))[:6]


def _questions(errors: list, repeated: list, by_type: dict[str, list]) -> list[str]:
    qs = []
    if errors:
        qs.append("Which of these errors share a cause, and what rule or check would have "
                  "prevented them? (save as an insight)")
    if repeated:
        qs.append("What keeps being repeated here, and what standing instruction or procedure "
                  "would make it unnecessary?")
    if by_type.get("test_result") or by_type.get("code_change"):
        qs.append("What sequence of steps reliably builds and tests this project? (save as a "
                  "procedure with 3-7 numbered steps)")
    if by_type.get("decision") or by_type.get("instruction"):
        qs.append("Which decisions and instructions still hold, and which were superseded? "
                  "(give feedback harmful on superseded ones)")
    qs.append("What would you tell a new session on this project before it starts?")
    return qs[:5]

"""Ranked chunk ids -> `Hit`s: the chunk rows every result list is built from.

Below `search`, `expand`, `prompt` and `topics.maps`, which all load hits, so none of them
imports another just for this.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from causantic.retrieval.render import Hit


def load_hits(conn: apsw.Connection, ranked: Sequence[tuple[str, float, tuple[str, ...]]]) -> list[Hit]:
    """Fetch chunk rows for (chunk id, score, sources) in rank order; missing ids are dropped."""
    if not ranked:
        return []
    ids = [r[0] for r in ranked]
    rows: dict[str, tuple] = {}
    for i in range(0, len(ids), 500):
        batch = ids[i : i + 500]
        marks = ",".join("?" * len(batch))
        for row in conn.execute(
            "SELECT id, session_id, project, agent_id, start_time, end_time, text, kind"
            f" FROM chunks WHERE id IN ({marks})",
            batch,
        ):
            rows[row[0]] = row
    out = []
    for cid, score, sources in ranked:
        row = rows.get(cid)
        if row is not None:
            out.append(Hit(row[0], row[1], row[2], row[3], row[4], row[5], score, sources,
                           row[6], row[7]))
    return out

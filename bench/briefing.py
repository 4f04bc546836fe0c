"""What the session-start briefing holds of the session it is about: ``python -m bench briefing``.

The briefing (`causantic.retrieval.reconstruct`, mode ``briefing``) gives the session's state,
then as much of its latest conversation as fits. Resuming work needs what was being asked and
answered last, so for every session of five or more chunks in the shared and the blind
transcripts (ingested keyword only, nothing embedded), at the session-start cap of 6,000
characters:

* ``last 5 requests``: the share of the session's last five main-stream turns whose request
  (its first 60 characters, whitespace normalised) is inside the briefing;
* ``last answer``: sessions whose last assistant message (first 80 characters) is inside.

Two rows: the product (the conversation compacted as answers are) and the raw chunk text it
showed before (the same code with compaction turned into the identity). ``--tiny``: three
transcripts, nothing written.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, TRANSCRIPTS_DIR, print_table, write_result

BLIND_TRANSCRIPTS = REPO_ROOT / "bench" / "transcripts"
BRIEFING_CHARS = 6000
LAST_TURNS = 5


def _norm(text: str) -> str:
    return " ".join(text.split())


def coverage(conn: Any) -> dict[str, Any]:
    """The two shares for every session of five or more main-stream chunks."""
    from causantic.retrieval import answer
    from causantic.retrieval.reconstruct import reconstruct

    sessions = conn.execute(
        "SELECT session_id, project, max(turn) FROM chunks WHERE agent_id = ''"
        " GROUP BY session_id HAVING count(*) >= 5 ORDER BY session_id").fetchall()
    requests = shown = last = answered = 0
    sizes = []
    for sid, project, top in sessions:
        text = reconstruct(conn, project, mode="briefing", session=sid[:8],
                           max_chars=BRIEFING_CHARS).text
        sizes.append(len(text))
        seen = _norm(text)
        keys = [(sid, "", t) for t in range(max(0, top - LAST_TURNS + 1), top + 1)]
        turns = answer.turns(conn, keys)
        for key in keys:
            prompt = answer.prompt_of(turns.get(key, []), 200).removeprefix("[User]\n")
            if prompt:
                requests += 1
                shown += _norm(prompt)[:60] in seen
        said = answer.last_said([t for key in keys for _, t in turns.get(key, [])])
        if said:
            last += 1
            answered += _norm(said.split("\n", 1)[-1])[:80] in seen
    return {"sessions": len(sessions), "requests": requests, "requests_shown": shown,
            "last 5 requests": round(shown / requests, 2) if requests else None,
            "last answer": f"{answered}/{last}",
            "median chars": sorted(sizes)[len(sizes) // 2] if sizes else 0}


def run(tiny: bool = False) -> dict[str, Any]:
    from causantic.config import load_settings
    from causantic.ingest.run import run_ingest
    from causantic.retrieval import compaction
    from causantic.store import open_store
    from causantic.transcripts.discover import discover

    sources = [TRANSCRIPTS_DIR] + ([BLIND_TRANSCRIPTS] if BLIND_TRANSCRIPTS.exists() else [])
    paths = [tf.path for tf in discover(sources) if tf.kind == "session"]
    if tiny:
        paths = sorted(paths, key=lambda p: p.stat().st_size)[-3:]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(db=Path(tmp) / "memory.db", env={"HOME": tmp})
        run_ingest(settings, list(paths))
        with open_store(settings.db_path, readonly=True) as store:
            rows.append({"conversation": "compacted (the product)", **coverage(store.conn)})
            product = compaction.compact
            compaction.compact = lambda text, terms=(): text  # the briefing imports it late
            try:
                rows.append({"conversation": "raw chunk text (before)", **coverage(store.conn)})
            finally:
                compaction.compact = product
    print_table(f"Session-start briefing ({BRIEFING_CHARS:,} characters): what it holds of the "
                f"session's last {LAST_TURNS} turns", rows)
    result = {"rows": rows}
    write_result("briefing", result, tiny)
    return result


if __name__ == "__main__":
    run()

"""What reconstruct's timeline and briefing hold of a session: ``python -m bench timeline``.

Both views show a session's newest chunks, newest kept, under a budget: the timeline
(`reconstruct --session ID`, here at 4,000 tokens) and the session-start briefing (its state,
then as much of its latest conversation as fits, at 6,000 characters). Resuming work or
answering "what happened in session S" needs what was asked and answered, so for every session
of five or more main-stream chunks in the shared and the blind transcripts (ingested keyword
only, nothing embedded):

* ``last 5 requests``: the share of the session's last five turns whose request (its first 60
  characters, whitespace normalised) is inside the text;
* ``all requests`` (timeline): the same over all of the session's turns;
* ``last answer`` (briefing): sessions whose last assistant message (first 80 characters) is
  inside.

Two rows each: the product (chunks compacted as answers are) and the raw chunk text both
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
TIMELINE_TOKENS = 4000
LAST_TURNS = 5


def _norm(text: str) -> str:
    return " ".join(text.split())


def coverage(conn: Any) -> dict[str, dict[str, Any]]:
    """For the timeline and the briefing: the shares above, over the sessions of 5+ chunks."""
    from causantic.retrieval import answer
    from causantic.retrieval.reconstruct import reconstruct

    sessions = conn.execute(
        "SELECT session_id, project, max(turn) FROM chunks WHERE agent_id = ''"
        " GROUP BY session_id HAVING count(*) >= 5 ORDER BY session_id").fetchall()
    counts = {view: {"requests": 0, "last": 0, "all": 0, "all_shown": 0, "last_shown": 0,
                     "answers": 0, "answered": 0} for view in ("timeline", "briefing")}
    for sid, project, top in sessions:
        texts = {
            "timeline": reconstruct(conn, project, session=sid[:8],
                                    max_tokens=TIMELINE_TOKENS).text,
            "briefing": reconstruct(conn, project, mode="briefing", session=sid[:8],
                                    max_chars=BRIEFING_CHARS).text,
        }
        keys = [(sid, "", t) for t in range(top + 1)]
        turns = answer.turns(conn, keys)
        prompts = [_norm(answer.prompt_of(turns.get(k, []), 200).removeprefix("[User]\n"))[:60]
                   for k in keys]
        said = answer.last_said([t for k in keys[-LAST_TURNS:] for _, t in turns.get(k, [])])
        for view, text in texts.items():
            seen, c = _norm(text), counts[view]
            for i, prompt in enumerate(prompts):
                if not prompt:
                    continue
                c["all"] += 1
                c["all_shown"] += prompt in seen
                if i >= len(prompts) - LAST_TURNS:
                    c["last"] += 1
                    c["last_shown"] += prompt in seen
            if said:
                c["answers"] += 1
                c["answered"] += _norm(said.split("\n", 1)[-1])[:80] in seen
    out = {}
    for view, c in counts.items():
        out[view] = {"sessions": len(sessions),
                     "last 5 requests": round(c["last_shown"] / c["last"], 2) if c["last"] else None,
                     "all requests": round(c["all_shown"] / c["all"], 2) if c["all"] else None,
                     "last answer": f"{c['answered']}/{c['answers']}"}
    return out


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
            product = coverage(store.conn)
            compact = compaction.compact
            compaction.compact = lambda text, terms=(): text  # reconstruct imports it late
            try:
                raw = coverage(store.conn)
            finally:
                compaction.compact = compact
    for view, budget in (("timeline", f"{TIMELINE_TOKENS:,} tokens"),
                         ("briefing", f"{BRIEFING_CHARS:,} characters")):
        rows += [{"view": f"{view} ({budget})", "chunks shown": "compacted (the product)",
                  **product[view]},
                 {"view": f"{view} ({budget})", "chunks shown": "raw text (before)", **raw[view]}]
    print_table("What a session's timeline and briefing hold of its requests and last answer",
                rows)
    result = {"rows": rows}
    write_result("timeline", result, tiny)
    return result


if __name__ == "__main__":
    run()

"""Prompt recall as a user meets it: does what the UserPromptSubmit hook injects answer?

Each question of `bench.answers` (dev and blind sets, by half) is typed as a prompt in its
project, the way the hook sees a prompt: `causantic.retrieval.prompt.prompt_recall`, scoped
to the answering session's project, keyword only, under the default 1,500 characters.

- **fired**: the share of prompts that get an injection at all;
- **evidence**: the share whose injection holds an evidence string inside a block from the
  answering session (the text that answers the prompt);
- **noise**: the share that still get an injection when the answering session is left out
  (`exclude_session`), i.e. when memory does not hold the answer; what is injected then is at
  best related, and it costs the user tokens on every such prompt;
- **evidence / fired**: how often an injection, when there is one, holds the answer.

Rows: the product (each match shown as its answer unit, `causantic.retrieval.answer`); the
same gate showing each match's stored chunk, as the hook did before (the comparison); and a
stricter gate (`[hooks] prompt_min_coverage = 0.7`), the trade a user can choose.
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import answers as A
from bench.common import cli_main, print_table, write_result

#: name -> (answer units, `[hooks] prompt_min_coverage`); the first is the product's default.
SYSTEMS = {"prompt recall (answer units)": (True, 0.5),
           "prompt recall (stored chunks)": (False, 0.5),
           "answer units, min coverage 0.7": (True, 0.7)}
#: A result header of the injection ("spotter · session 4d5611e5 · …"); `bench.answers`
#: reads numbered headers ("[1] spotter · session …"), so one is numbered before scoring.
_HEADER = re.compile(r"^(?=[^\n\[]*· session [0-9a-f]{8}\b)", re.M)


def holds_evidence(text: str, q: A.Question) -> bool:
    """Whether the injected text holds an evidence string in a block of the answering session."""
    return bool(text) and A.evidence_shown(_HEADER.sub("[1] ", text), q)


def evaluate(db: Path, questions: Sequence[A.Question]) -> list[dict[str, Any]]:
    """One row per question and system: fired, evidence, noise, characters."""
    from causantic.retrieval.prompt import prompt_recall
    from causantic.store import open_store

    rows = []
    with open_store(db, readonly=True) as store:
        conn = store.conn
        for q in questions:
            found = conn.execute("SELECT project FROM sessions WHERE id = ?", (q.session,))
            project = found.fetchone()[0]
            for name, (units, coverage) in SYSTEMS.items():
                given = prompt_recall(conn, q.query, project=project, units=units,
                                      min_coverage=coverage).text
                without = prompt_recall(conn, q.query, project=project, units=units,
                                        min_coverage=coverage, exclude_session=q.session).text
                rows.append({"id": q.id, "half": q.half, "style": q.style, "system": name,
                             "fired": bool(given), "evidence": holds_evidence(given, q),
                             "noise": bool(without), "chars": len(given)})
    return rows


def summary(rows: Sequence[dict[str, Any]], halves: Sequence[str]) -> list[dict[str, Any]]:
    """The table: per half and system, the four shares and the median injection size."""
    out = []
    for half in halves:
        for name in SYSTEMS:
            part = [r for r in rows if r["half"] == half and r["system"] == name]
            if not part:
                continue
            n, fired = len(part), sum(r["fired"] for r in part)
            evidence = sum(r["evidence"] for r in part)
            sizes = [r["chars"] for r in part if r["fired"]]
            out.append({"half": half, "system": name, "questions": n,
                        "fired": round(fired / n, 3), "evidence": round(evidence / n, 3),
                        "noise": round(sum(r["noise"] for r in part) / n, 3),
                        "evidence / fired": round(evidence / fired, 3) if fired else 0.0,
                        "median chars": int(statistics.median(sizes)) if sizes else 0})
    return out


def run(tiny: bool = False) -> dict[str, Any]:
    """Both question sets, every half; print the table and write bench/results."""
    from bench.search_quality import build_db, cache_root

    rows: list[dict[str, Any]] = []
    if tiny:  # a few questions of one project, on a throw-away keyword-only database
        from causantic.config import load_settings
        from causantic.ingest.run import run_ingest

        with tempfile.TemporaryDirectory(prefix="causantic-prompt-") as tmp:
            settings = load_settings(db=Path(tmp) / "memory.db", env={"HOME": tmp})
            run_ingest(settings, [A.TRANSCRIPTS_DIR / "marot__spotter"])
            questions = [q for q in A.load_questions() if q.session.startswith("4d5611e5")][:4]
            rows = evaluate(settings.db_path, questions)
        halves: Sequence[str] = sorted({r["half"] for r in rows})
    else:
        db = build_db(cache_root() / "answers", [A.TRANSCRIPTS_DIR])
        rows = evaluate(db, A.load_questions())
        blind = build_db(cache_root() / "answers-blind", [A.TRANSCRIPTS_DIR, A.BLIND_TRANSCRIPTS])
        rows += evaluate(blind, A.load_questions(A.BLIND_FILE))
        halves = (*A.HALVES, *A.BLIND_HALVES)
    table = summary(rows, halves)
    print_table("Prompt recall (UserPromptSubmit): injections that answer, at 1,500 characters",
                table, ["half", "system", "questions", "fired", "evidence", "noise",
                        "evidence / fired", "median chars"])
    out = {"summary": table, "per_question": rows}
    write_result("prompt_recall", out, tiny)
    return out


def main(argv: list[str] | None = None) -> int:
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())

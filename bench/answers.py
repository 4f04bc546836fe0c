"""Answers, not chunks: is the text that answers a question inside what we return, in budget?

The development set (`bench/queries/answers.json`) holds questions written by reading the
shared transcripts, the way a person asks weeks later: a third quoting identifiers or error
text (``identifier``), a third paraphrased without the answer's identifiers (``paraphrase``),
a third vague (``vague``). Each has a *kind* (``search``: what do we know about X; ``recall``:
how was X fixed or decided; ``predict``: what came next after X; ``reconstruct``: what came out
of the session where ...), the answering session, and 2-4 *evidence* strings copied verbatim
from that session's stored text (assistant conclusions, fixing edits, outcomes, tool output);
any one of them shows the answer was returned. `check_evidence` proves every string occurs
in the stored text of its session (whitespace normalised) before anything is measured.

Split: within each (kind, style) group, in file order, questions alternate between the
``tune`` half and the ``report`` half. Design decisions are made on ``tune`` only; both are
printed.

The blind set (`bench/queries/answers-blind.json`) is written the same way about 24
sessions nobody had read (`bench/transcripts`, see its SOURCES.md), without running any of our
systems on them. Its database holds the shared transcripts too, so they compete as
distractors. It is split the same way into ``blind tune`` and ``blind report`` (and printed
whole as ``blind``): the development set's tune half has been fitted by many rounds of
decisions, so ``blind tune`` is the fresh set to look at question by question, and
``blind report`` is seen only in aggregate, once per change.

Every question goes through every system, all on one cached database (ingest with
redaction, every chunk embedded; `bench.search_quality.build_db`):

* ``search/<mode>``, ``recall/<mode>``, ``predict/<mode>`` for mode in keyword, vector,
  hybrid (for recall/predict the mode is the seed search's);
* ``reconstruct/<mode>``: what a user does for "what came out of the session where ...":
  ``reconstruct QUESTION --project <best match's project>`` (the session is that of its own
  hybrid search's best match: the mode only picks the project and ranks ``strict@5``; its
  text counts for that session, except the other sessions' matches after it, each under a
  result header naming its own session, as in search's answers);
* baselines over single conversation turns (one document per user prompt and everything
  until the next one, per stream): ``bm25-turns`` (Okapi BM25), ``minilm-turns`` (MiniLM,
  a turn scores its best 256-word-piece window, up to 16 windows), ``hybrid-turns``
  (Reciprocal Rank Fusion, k = 60, of the two). They render their turns like search
  results (same header line, same `render.fit` budget rule).

Metrics (per system; by style and by kind; per half):

* ``strict@5``: one of the first 5 results comes from the answering session AND holds an
  evidence string in its stored text (ranked systems: an unbudgeted result list of 10; chains:
  the chunks of the 4,000-token answer in the order returned);
* ``ev@2k`` / ``ev@4k``: the answer returned with ``max_tokens`` 2,000 / 4,000 (the `text`
  the CLI's ``--json`` and the MCP tool return) holds an evidence string inside a result block
  whose header names the answering session: the evidence is inside what the caller reads,
  within that budget;
* ``tok2k`` / ``tok4k``: median tokens of those answers (3.5 characters a token).

One more row, ``oracle: keyword or vector``, is not a system: per question, the better of
search's keyword and vector modes (`best_of`), the ceiling of a fusion that always trusted
the right list. Hybrid scoring above it on one half and below it on the other measures how
far the fusion is fitted to the first.

LoCoMo slice (categories 1-4; the data are CC BY-NC, so they stay in the benchmark cache,
see `bench.locomo`): the questions of the conversations in ``LOCOMO_CONVERSATIONS``, split
by alternation the same way, project-scoped, 2,000-token budget: ``all`` (every evidence
turn's text inside a result block of the answer whose header names the turn's session, the
rule of ``ev@2k``), ``any`` (at least one), ``session@10`` (a session holding an evidence
turn among the first 10 results). A result block is its answer unit, so a turn shown as the
context of a neighbouring match counts; the single-turn baselines' blocks are their turns.
The other LoCoMo conversations (``heldout_conversations``: 7, 1,150 questions) are scored the
same way as one more table, *held-out*: no design decision was ever made on them, so they
check that what was tuned on the slice holds elsewhere (printed with the report half).

``python -m bench.answers [--tiny] [--half tune|report|both] [--systems a,b] [--no-locomo]``.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, TRANSCRIPTS_DIR, print_table, write_result

QUERIES_FILE = REPO_ROOT / "bench" / "queries" / "answers.json"
#: The blind set: questions written without running anything on their sessions, which are
#: new (bench/transcripts) and ingested together with the shared transcripts.
BLIND_FILE = REPO_ROOT / "bench" / "queries" / "answers-blind.json"
BLIND_TRANSCRIPTS = REPO_ROOT / "bench" / "transcripts"
BLIND = "blind"
#: The blind set's halves, split like the development set's.
BLIND_HALVES = ("blind tune", "blind report")
BUDGETS = (2000, 4000)
COMMANDS = ("search", "recall", "predict", "reconstruct")
MODES = ("keyword", "vector", "hybrid")
BASELINES = ("bm25-turns", "minilm-turns", "hybrid-turns")
STYLES = ("identifier", "paraphrase", "vague")
KINDS = COMMANDS
HALVES = ("tune", "report")
#: What a full run scores: the development set's two halves and the blind set.
SETS = (*HALVES, BLIND)
TURN_WINDOWS = 16
RRF_K = 60
LOCOMO_CONVERSATIONS = ("conv-26", "conv-30", "conv-41")
LOCOMO_BUDGET = 2000
#: The one column of the held-out LoCoMo conversations' table.
HELD_OUT = "held-out"
#: Hybrid's two lists, and the per-question best of them (`best_of`), printed with the systems.
LISTS = ("search/keyword", "search/vector")
#: Suffix of the systems that run hybrid without the token rerank (`causantic.retrieval.rerank`).
NO_RERANK = " without rerank"
ORACLE = "oracle: keyword or vector"
_WS_RE = re.compile(r"\s+")
#: A result block's header line, as `render.header` writes it: "[3] project · session 1a2b3c4d · ..."
_HEADER_RE = re.compile(r"^\[\d+\] [^\n]*?· session ([0-9a-f]{8})\b[^\n]*$", re.M)


def norm(text: str) -> str:
    """Whitespace-normalised text (evidence is matched on this)."""
    return _WS_RE.sub(" ", text).strip()


# -- the question set ----------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    style: str
    query: str
    session: str  # the answering session's full id
    evidence: tuple[str, ...]
    half: str = ""


def load_questions(path: Path = QUERIES_FILE) -> list[Question]:
    """The development set, or the blind set (``BLIND_FILE``), each question tagged with its
    half (module docstring)."""
    raw = json.loads(path.read_text())["questions"]
    qs = [Question(q["id"], q["kind"], q["style"], q["query"], q["session"],
                   tuple(q["evidence"])) for q in raw]
    return split(qs, BLIND_HALVES if path == BLIND_FILE else HALVES)


def split(questions: Sequence[Question], halves: Sequence[str] = HALVES) -> list[Question]:
    """Alternate tune/report within each (kind, style) group, in file order."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for q in questions:
        n = seen.get((q.kind, q.style), 0)
        seen[(q.kind, q.style)] = n + 1
        out.append(Question(q.id, q.kind, q.style, q.query, q.session, q.evidence,
                            halves[n % 2]))
    return out


def check_evidence(conn: Any, questions: Sequence[Question]) -> list[str]:
    """Problems: evidence strings not found in the stored text of their session."""
    texts: dict[str, list[str]] = {}
    for sid, text in conn.execute("SELECT session_id, text FROM chunks"):
        texts.setdefault(sid, []).append(norm(text))
    problems = []
    for q in questions:
        body = "\n".join(texts.get(q.session, []))
        if not body:
            problems.append(f"{q.id}: session {q.session[:8]} is not in the database")
            continue
        problems += [f"{q.id}: evidence not in session {q.session[:8]}: {e[:60]!r}"
                     for e in q.evidence if norm(e) not in body]
    return problems


# -- answers and scoring -------------------------------------------------------------------


@dataclass
class Answer:
    """What one system returned for one question."""

    ranked: list[tuple[str, str]]  # (session id, stored text) of results, in rank order
    texts: dict[int, str]  # budget -> the returned text
    tokens: dict[int, int]  # budget -> its tokens
    sessions: dict[int, str | None] = field(default_factory=dict)  # budget -> whole-text session


def blocks(text: str) -> list[tuple[str, str]]:
    """(session prefix, block text) for each result block of a rendered answer."""
    marks = list(_HEADER_RE.finditer(text))
    return [(m.group(1), text[m.start(): marks[i + 1].start() if i + 1 < len(marks) else len(text)])
            for i, m in enumerate(marks)]


def evidence_shown(text: str, q: Question, whole_session: str | None = None) -> bool:
    """Whether an evidence string lies inside a block of `text` from the answering session;
    with ``whole_session`` (reconstruct), the text before the first result block is that
    session's."""
    marked = blocks(text)
    parts = [b for sid, b in marked if q.session.startswith(sid)]
    if whole_session == q.session:  # the text before any result block is that session's
        first = _HEADER_RE.search(text)
        parts.append(text[: first.start()] if first else text)
    if not parts:
        return False
    body = norm("\n".join(parts))
    return any(norm(e) in body for e in q.evidence)


def strict_at(ranked: Sequence[tuple[str, str]], q: Question, k: int) -> bool:
    """One of the first k results is from the answering session and holds evidence."""
    return any(sid == q.session and any(norm(e) in norm(text) for e in q.evidence)
               for sid, text in ranked[:k])


def score(answer: Answer, q: Question) -> dict[str, float]:
    row = {"strict@5": float(strict_at(answer.ranked, q, 5))}
    for b in BUDGETS:
        row[f"ev@{b // 1000}k"] = float(evidence_shown(answer.texts[b], q, answer.sessions.get(b)))
        row[f"tok{b // 1000}k"] = float(answer.tokens[b])
    return row


def summarize(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Means of the hit metrics and medians of the token counts over some questions."""
    if not rows:
        return {"n": 0}
    out: dict[str, float] = {"n": len(rows)}
    for key in rows[0]:
        values = [r[key] for r in rows]
        out[key] = (round(statistics.median(values)) if key.startswith("tok")
                    else round(sum(values) / len(values), 3))
    return out


# -- systems -------------------------------------------------------------------------------


System = Callable[[Question], Answer]


def causantic_systems(store: Any, names: Sequence[str] | None = None) -> dict[str, System]:
    """search/recall/predict/reconstruct in every mode, as the CLI runs them (recall and
    predict seeded from search in that mode: `bench.variants`)."""
    from bench import variants
    from causantic.retrieval.reconstruct import reconstruct
    from causantic.retrieval.search import search

    def ranked_of(hits: Sequence[Any]) -> list[tuple[str, str]]:
        return [(h.session_id, h.text) for h in hits]

    def searcher(mode: str, rerank: bool = True) -> System:
        def run(q: Question) -> Answer:
            top = variants.search(store, q.query, limit=10, max_tokens=10**6, mode=mode,
                                  rerank=rerank)
            out = {b: variants.search(store, q.query, max_tokens=b, mode=mode, rerank=rerank)
                   for b in BUDGETS}
            return Answer(ranked_of(top.results), {b: r.text for b, r in out.items()},
                          {b: r.tokens for b, r in out.items()})
        return run

    def walker(fn: Callable[..., Any], mode: str, rerank: bool = True) -> System:
        def run(q: Question) -> Answer:
            out = {b: fn(store, q.query, max_tokens=b, search_mode=mode, rerank=rerank)
                   for b in BUDGETS}
            last = out[BUDGETS[-1]]
            return Answer(ranked_of(last.results + last.others), {b: r.text for b, r in out.items()},
                          {b: r.tokens for b, r in out.items()})
        return run

    def reconstructor(mode: str) -> System:
        def run(q: Question) -> Answer:
            top = search(store, q.query, limit=10, max_tokens=10**6, mode=mode)
            if not top.results:
                empty = "No relevant memory found."
                return Answer([], dict.fromkeys(BUDGETS, empty), dict.fromkeys(BUDGETS, 0))
            best = top.results[0]
            out = {b: reconstruct(store, best.project, query=q.query, max_tokens=b)
                   for b in BUDGETS}
            return Answer(ranked_of(top.results), {b: r.text for b, r in out.items()},
                          {b: r.tokens for b, r in out.items()},
                          {b: (r.sessions or (None,))[0] for b, r in out.items()})
        return run

    systems: dict[str, System] = {}
    for mode in MODES:
        systems[f"search/{mode}"] = searcher(mode)
        systems[f"recall/{mode}"] = walker(variants.recall, mode)
        systems[f"predict/{mode}"] = walker(variants.predict, mode)
        systems[f"reconstruct/{mode}"] = reconstructor(mode)
    systems[f"search/hybrid{NO_RERANK}"] = searcher("hybrid", rerank=False)
    systems[f"recall/hybrid{NO_RERANK}"] = walker(variants.recall, "hybrid", rerank=False)
    systems[f"predict/hybrid{NO_RERANK}"] = walker(variants.predict, "hybrid", rerank=False)
    order = [f"{c}/{m}" for c in COMMANDS for m in (*MODES, f"hybrid{NO_RERANK}")]
    return {n: systems[n] for n in order if n in systems and (names is None or n in names)}


class TurnBaselines:
    """BM25, MiniLM and their RRF fusion over single turns, rendered like search results."""

    def __init__(self, conn: Any, cache: Path | None) -> None:
        from bench.baselines import BM25Index

        rows: dict[tuple[str, str, int], list[tuple[str, str, str, str]]] = {}
        for sid, agent, turn, project, start, text in conn.execute(
            "SELECT session_id, agent_id, turn, project, start_time, text FROM chunks"
            " ORDER BY session_id, agent_id, offset, part"
        ):
            rows.setdefault((sid, agent, turn), []).append((project, start, agent, text))
        self.docs = [(sid, parts[0][0], parts[0][1], parts[0][2],
                      "\n\n".join(p[3] for p in parts)) for (sid, _, _), parts in rows.items()]
        self.bm25 = BM25Index([(str(i), d[4]) for i, d in enumerate(self.docs)])
        self.cache = cache
        self._windows: Any = None
        self._owners: Any = None

    def _vectors(self) -> tuple[Any, Any]:
        import numpy as np

        from causantic.model.embedder import get_embedder

        if self._windows is not None:
            return self._windows, self._owners
        embedder = get_embedder()
        key = hashlib.sha256(f"{embedder.model_id}:{TURN_WINDOWS}".encode())
        for d in self.docs:
            key.update(hashlib.sha256(d[4].encode()).digest())
        path = None if self.cache is None else self.cache / f"turn-windows-{key.hexdigest()[:16]}.npz"
        if path is not None and path.exists():
            data = np.load(path)
            self._windows, self._owners = data["windows"], data["owners"]
        else:
            mats, owners = [], []
            for i, d in enumerate(self.docs):
                w = embedder.embed_windows(d[4], max_windows=TURN_WINDOWS)
                mats.append(w)
                owners += [i] * len(w)
            self._windows, self._owners = np.concatenate(mats), np.array(owners)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                np.savez(path, windows=self._windows, owners=self._owners)
        return self._windows, self._owners

    def rank(self, name: str, query: str) -> list[int]:
        """Document indices, best first."""
        if name == "bm25-turns":
            return [int(i) for i, _ in self.bm25.search(query, len(self.docs))]
        if name == "minilm-turns":
            import numpy as np

            from causantic.model.embedder import get_embedder

            windows, owners = self._vectors()
            best = np.full(len(self.docs), -np.inf, dtype=np.float32)
            np.maximum.at(best, owners, windows @ get_embedder().embed_query(query))
            return [int(i) for i in np.argsort(-best, kind="stable")]
        fused: dict[int, float] = {}
        for sub in ("bm25-turns", "minilm-turns"):
            for r, i in enumerate(self.rank(sub, query)[:100]):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + r + 1)
        return sorted(fused, key=lambda i: -fused[i])

    def system(self, name: str) -> System:
        from causantic.retrieval import render
        from causantic.retrieval.render import Hit
        from causantic.tokens import approx_tokens

        def run(q: Question) -> Answer:
            order = self.rank(name, q.query)[:40]
            hits = [Hit(str(i), self.docs[i][0], self.docs[i][1], self.docs[i][3],
                        self.docs[i][2], self.docs[i][2], 0.0, (), self.docs[i][4])
                    for i in order]
            texts, tokens = {}, {}
            for b in BUDGETS:
                title = f'Found {{n}} results for "{q.query}"'
                items, _ = render.fit([(render.header(h, k + 1), h.text)
                                       for k, h in enumerate(hits)], b - approx_tokens(title) - 10)
                texts[b] = f"{title}:\n\n{render.join(items)}"
                tokens[b] = approx_tokens(texts[b])
            return Answer([(h.session_id, h.text) for h in hits[:10]], texts, tokens)

        return run


# -- running -------------------------------------------------------------------------------


def evaluate(db: Path, questions: Sequence[Question], names: Sequence[str] | None = None,
             cache: Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Every question through every system: per-question scores and summaries."""
    from causantic.store import open_store

    per_system: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}
    with open_store(db, readonly=True) as store:
        problems = check_evidence(store.conn, questions)
        if problems:
            raise SystemExit("answers: the question set does not match the transcripts:\n  "
                             + "\n  ".join(problems[:20]))
        systems = causantic_systems(store, names)
        wanted = [b for b in BASELINES if names is None or b in names]
        if wanted:
            turns = TurnBaselines(store.conn, cache)
            systems.update({b: turns.system(b) for b in wanted})
        for name, system in systems.items():
            started = time.perf_counter()
            rows = []
            for q in questions:
                row: dict[str, Any] = {"id": q.id, **score(system(q), q)}
                rows.append(row)
            seconds[name] = round(time.perf_counter() - started, 2)
            per_system[name] = rows
            if progress:
                print(f"answers: {name} done in {seconds[name]} s", file=sys.stderr, flush=True)
    oracle = best_of(per_system, LISTS)
    if oracle:
        per_system[ORACLE] = oracle
    return {"per_question": per_system, "seconds": seconds,
            "summary": summaries(per_system, questions)}


def best_of(per_system: dict[str, list[dict[str, Any]]], names: Sequence[str]
            ) -> list[dict[str, Any]]:
    """Per question, the best each metric any of ``names`` reached ([] unless all ran);
    token counts are the larger of the two answers'.

    Not a system: the ceiling of a fusion that always trusted the right one of its two lists
    for the question at hand. Hybrid above it on the tune half and far below it on the report
    half is what a fusion fitted to the tune half looks like."""
    if not all(n in per_system for n in names):
        return []
    rows = []
    for same in zip(*(per_system[n] for n in names), strict=True):
        rows.append({"id": same[0]["id"], **{k: max(r[k] for r in same)
                                             for k in same[0] if k != "id"}})
    return rows


def summaries(per_system: dict[str, list[dict[str, Any]]],
              questions: Sequence[Question]) -> dict[str, Any]:
    """system -> half -> group ("all", a style, a kind) -> metrics."""
    by_id = {q.id: q for q in questions}
    out: dict[str, Any] = {}
    blind = all(q.half in BLIND_HALVES for q in questions)
    halves = (*BLIND_HALVES, BLIND) if blind else (*HALVES, "both")
    for name, rows in per_system.items():
        out[name] = {}
        for half in halves:
            picked = [r for r in rows if half in ("both", BLIND) or by_id[r["id"]].half == half]
            groups: dict[str, Any] = {"all": summarize([_metrics(r) for r in picked])}
            for style in STYLES:
                groups[style] = summarize([_metrics(r) for r in picked
                                           if by_id[r["id"]].style == style])
            for kind in KINDS:
                groups[f"kind:{kind}"] = summarize([_metrics(r) for r in picked
                                                    if by_id[r["id"]].kind == kind])
            out[name][half] = groups
    return out


def _metrics(row: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in row.items() if k != "id"}


def print_tables(result: dict[str, Any], halves: Sequence[str] = HALVES) -> list[str]:
    """Per half: the overall table, then ev@2k by style and ev@4k by kind (a half without
    questions, as a tiny run may leave, is skipped)."""
    out = []
    summary = result["summary"]
    for half in halves:
        if not any(by_half[half]["all"]["n"] for by_half in summary.values()):
            continue
        rows = []
        for name, by_half in summary.items():
            s = by_half[half]["all"]
            rows.append({"system": name, "n": s["n"], "strict@5": s["strict@5"],
                         "ev@2k": s["ev@2k"], "ev@4k": s["ev@4k"], "tok2k": s["tok2k"],
                         "tok4k": s["tok4k"]})
        out.append(print_table(f"Answers ({_name(half)}): strict@5, evidence within 2,000 / 4,000 "
                               "tokens returned, median tokens", rows))
        for metric, title in (("ev@2k", "evidence within 2,000 tokens"),
                              ("ev@4k", "evidence within 4,000 tokens")):
            rows = []
            for name, by_half in summary.items():
                g = by_half[half]
                row: dict[str, Any] = {"system": name}
                for style in STYLES:
                    row[f"{style} ({g[style]['n']})"] = g[style].get(metric, float("nan"))
                for kind in KINDS:
                    cell = g[f"kind:{kind}"]
                    row[f"{kind} q ({cell['n']})"] = cell.get(metric, float("nan"))
                rows.append(row)
            out.append(print_table(f"Answers ({_name(half)}): {title}, by style and by kind of "
                                   "question", rows))
        rows = []
        for name, by_half in summary.items():
            g = by_half[half]
            row = {"system": name}
            for style in STYLES:
                row[f"{style} strict@5"] = g[style].get("strict@5", float("nan"))
            for kind in KINDS:
                row[f"{kind} q strict@5"] = g[f"kind:{kind}"].get("strict@5", float("nan"))
            rows.append(row)
        out.append(print_table(f"Answers ({_name(half)}): strict@5 by style and kind", rows))
    return out


def _name(half: str) -> str:
    return "the whole blind set" if half == BLIND else f"{half} half"


# -- LoCoMo slice --------------------------------------------------------------------------


def heldout_conversations() -> tuple[str, ...]:
    """The LoCoMo conversations outside LOCOMO_CONVERSATIONS (never tuned on); () without data."""
    from bench import locomo

    if not locomo.DATA_ZIP.exists():
        return ()
    convs, _, _ = locomo.load(locomo.DATA_ZIP)
    return tuple(sorted({c.id for c in convs} - set(LOCOMO_CONVERSATIONS)))


def locomo_slice(halves: Sequence[str] = HALVES, tiny: bool = False,
                 names: Sequence[str] | None = None,
                 conversations: Sequence[str] | None = None) -> dict[str, Any] | None:
    """The LoCoMo conversations of LOCOMO_CONVERSATIONS through search, recall and baselines.

    With ``conversations`` (the held-out ones), those instead, unsplit: every question counts
    in the one ``held-out`` column."""
    from bench import locomo

    if not locomo.DATA_ZIP.exists():
        return None
    if tiny:
        convs, questions, _ = locomo.load(locomo.DATA_ZIP, [locomo.TINY_CONVERSATION],
                                          locomo.TINY_SESSIONS)
    else:
        convs, questions, _ = locomo.load(locomo.DATA_ZIP)
    keep = {locomo.TINY_CONVERSATION} if tiny else set(conversations or LOCOMO_CONVERSATIONS)
    questions = [q for q in questions if q.conv in keep]
    if tiny:
        questions = questions[:8]
    if conversations:
        halves = (HELD_OUT,)
        half_of = {id(q): HELD_OUT for q in questions}
    else:
        half_of = {id(q): HALVES[i % 2] for i, q in enumerate(questions)}
    db = locomo.build_db(convs)
    turns = {f"{t.conv}/{t.dia_id}": t for c in convs for _, ts in c.sessions for t in ts}
    session_of_dia = {f"{c.id}/{t.dia_id}": locomo.session_uuid(c.id, n)
                      for c in convs for n, ts in c.sessions for t in ts}
    baselines = locomo.TurnBaselines([c for c in convs if c.id in keep])
    from bench import variants
    from causantic.store import open_store

    results: dict[str, Any] = {}
    with open_store(db.path, readonly=True) as store:
        def causantic_method(kind: str, mode: str, rerank: bool = True
                             ) -> Callable[[Any], tuple[list[str], str, list[tuple[str, str]]]]:
            def run(q: Any) -> tuple[list[str], str, list[tuple[str, str]]]:
                top = variants.search(store, q.question, project=q.conv, limit=10,
                                      max_tokens=10**6, mode=mode, rerank=rerank)
                if kind == "search":
                    shown = variants.search(store, q.question, project=q.conv,
                                            max_tokens=LOCOMO_BUDGET, mode=mode, rerank=rerank)
                else:
                    fn = variants.recall if kind == "recall" else variants.predict
                    shown = fn(store, q.question, project=q.conv, max_tokens=LOCOMO_BUDGET,
                               search_mode=mode, rerank=rerank)
                return [h.session_id for h in top.results], shown.text, blocks(shown.text)
            return run

        def baseline_method(name: str) -> Callable[[Any], tuple[list[str], str, list[tuple[str, str]]]]:
            def run(q: Any) -> tuple[list[str], str, list[tuple[str, str]]]:
                if name == "hybrid-turns":
                    fused: dict[str, float] = {}
                    for keys in (_locomo_bm25_keys(baselines, q), _locomo_dense_keys(baselines, q)):
                        for r, k in enumerate(keys):
                            fused[k] = fused.get(k, 0.0) + 1.0 / (RRF_K + r + 1)
                    ans = baselines._answer(sorted(fused, key=lambda k: -fused[k]))
                else:
                    ans = (baselines.bm25 if name == "bm25-turns" else baselines.dense)(q)
                ranked = [session_of_dia[next(iter(r))] for r in ans.ranked[:10]]
                # Each shown turn is its own block (they are rendered under a date line only).
                return ranked, ans.text, ans.shown
            return run

        methods = {f"search/{m}": causantic_method("search", m) for m in MODES}
        methods[f"search/hybrid{NO_RERANK}"] = causantic_method("search", "hybrid", rerank=False)
        methods["recall/hybrid"] = causantic_method("recall", "hybrid")
        methods["predict/hybrid"] = causantic_method("predict", "hybrid")
        for name in BASELINES:
            methods[name] = baseline_method(name)
        methods = {k: v for k, v in methods.items() if names is None or k in names}
        for name, method in methods.items():
            tallies: dict[str, dict[str, float]] = {}
            for q in questions:
                need = [f"{q.conv}/{e}" for e in q.evidence]
                ranked, text, shown_blocks = method(q)
                body = norm(text)
                found = [locomo.turn_shown(turns[e].text, session_of_dia[e], body, shown_blocks)
                         for e in need]
                sessions = {session_of_dia[e] for e in need}
                row = {"all": float(all(found)), "any": float(any(found)),
                       "session@10": float(bool(sessions & set(ranked[:10])))}
                for half in (half_of[id(q)], "both"):
                    t = tallies.setdefault(half, {"n": 0.0, "all": 0.0, "any": 0.0,
                                                  "session@10": 0.0})
                    t["n"] += 1
                    for k, v in row.items():
                        t[k] += v
            results[name] = {h: {"n": int(t["n"]), **{k: round(v / t["n"], 3)
                                                      for k, v in t.items() if k != "n"}}
                             for h, t in tallies.items()}
    columns = halves if conversations else (*halves, "both")
    rows = []
    for name, by_half in results.items():
        row: dict[str, Any] = {"method": name}
        for half in columns:
            t = by_half.get(half, {})
            row[f"{half}: all / any / session@10"] = (
                f"{t['all']:.3f} / {t['any']:.3f} / {t['session@10']:.3f}" if t else "n/a")
        rows.append(row)
    counts = {h: results[next(iter(results))].get(h, {}).get("n", 0) for h in columns}
    what = "held-out conversations" if conversations else "slice"
    print_table(f"LoCoMo {what} {', '.join(sorted(keep))}, categories 1-4, project-scoped, "
                f"{LOCOMO_BUDGET:,}-token budget (questions: {counts})", rows)
    return {"conversations": sorted(keep), "budget": LOCOMO_BUDGET, "methods": results}



def _locomo_bm25_keys(baselines: Any, q: Any) -> list[str]:
    """The BM25 turn ranking of `bench.locomo.TurnBaselines`, 80 deep."""
    from causantic.retrieval.fts import fts_query

    match = fts_query(q.question)
    if not match:
        return []
    return [k for (k,) in baselines.conn.execute(
        "SELECT key FROM turns WHERE turns MATCH ? AND conv = ? ORDER BY bm25(turns) LIMIT 80",
        (match, q.conv))]


def _locomo_dense_keys(baselines: Any, q: Any) -> list[str]:
    """The MiniLM turn ranking of `bench.locomo.TurnBaselines` (best window), 80 deep."""
    import numpy as np

    from causantic.model.embedder import get_embedder

    vectors, owners, keys = baselines._conv_vectors(q.conv)
    scores = np.full(len(keys), -np.inf, dtype=np.float32)
    np.maximum.at(scores, owners, vectors @ get_embedder().embed_query(q.question))
    return [keys[i] for i in np.argsort(-scores, kind="stable")[:80]]


# -- entry points --------------------------------------------------------------------------


def run(tiny: bool = False, halves: Sequence[str] = SETS, names: Sequence[str] | None = None,
        with_locomo: bool = True) -> dict[str, Any]:
    """Build (or reuse) the databases, score every system, print and record.

    ``halves``: any of tune, report (the development set) and blind (`blind_set`)."""
    from bench.search_quality import build_db, cache_root

    questions = load_questions()
    dev = tuple(h for h in HALVES if h in halves)
    result: dict[str, Any] = {}
    if tiny and dev:
        result = _tiny(TRANSCRIPTS_DIR / "theogbrand__napoli-matcha" / "04", questions, 3, names)
        result["locomo"] = locomo_slice(dev, tiny=True) if with_locomo else None
    elif dev:
        db = build_db(cache_root() / "answers", [TRANSCRIPTS_DIR])
        asked = [q for q in questions if q.half in dev]
        result = evaluate(db, asked, names, cache=cache_root() / "answers-baselines")
        result["locomo"] = locomo_slice(dev, names=names) if with_locomo else None
        heldout = heldout_conversations() if with_locomo and "report" in dev else ()
        if heldout:
            result["locomo_heldout"] = locomo_slice(names=names, conversations=heldout)
    if BLIND in halves:
        result[BLIND] = blind_set(names, tiny=tiny)
    blind = load_questions(BLIND_FILE)
    result["questions"] = {
        "total": len(questions),
        **{h: sum(q.half == h for q in questions) for h in HALVES},
        **{s: sum(q.style == s for q in questions) for s in STYLES},
        **{k: sum(q.kind == k for q in questions) for k in KINDS},
        BLIND: len(blind),
    }
    print_table("Answers: the development set (and the blind set)", [result["questions"]])
    if dev:
        print_tables(result, dev)
    if result.get(BLIND):
        print_tables(result[BLIND], (*BLIND_HALVES, BLIND))
    if not tiny and names is None and with_locomo and tuple(halves) == SETS:
        write_result("answers", result, tiny)
    return result


def blind_set(names: Sequence[str] | None = None, tiny: bool = False) -> dict[str, Any]:
    """The blind set through every system, its sessions ingested with the shared transcripts
    (which are then distractors); ``tiny``: two questions of one of its sessions alone."""
    from bench.search_quality import build_db, cache_root

    questions = load_questions(BLIND_FILE)
    if tiny:
        one = sorted(BLIND_TRANSCRIPTS.glob("*/*/*/*/full.jsonl"))[0].parent
        return _tiny(one, questions, 2, names)
    db = build_db(cache_root() / "answers-blind", [TRANSCRIPTS_DIR, BLIND_TRANSCRIPTS])
    return evaluate(db, questions, names, cache=cache_root() / "answers-blind-baselines")


def _tiny(source: Path, questions: Sequence[Question], n: int,
          names: Sequence[str] | None) -> dict[str, Any]:
    """The first ``n`` questions about ``source``'s sessions, on a throw-away database of it."""
    from bench.search_quality import build_db
    from causantic.store import open_store

    with tempfile.TemporaryDirectory(prefix="causantic-answers-") as tmp:
        db = build_db(Path(tmp) / "db", [source])
        with open_store(db, readonly=True) as store:
            present = {s for (s,) in store.conn.execute("SELECT DISTINCT session_id FROM chunks")}
        picked = [q for q in questions if q.session in present][:n]
        return evaluate(db, picked, names, progress=False)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.answers [--tiny] [--half tune|report|both|blind] [--systems a,b]
    [--no-locomo]`` (without --half: all three; ``both``: tune and report)."""
    args = list(sys.argv[1:] if argv is None else argv)
    halves: Sequence[str] = SETS
    names = None
    if "--half" in args:
        h = args[args.index("--half") + 1]
        halves = HALVES if h == "both" else (h,)
    if "--systems" in args:
        names = args[args.index("--systems") + 1].split(",")
    run(tiny="--tiny" in args, halves=halves, names=names, with_locomo="--no-locomo" not in args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

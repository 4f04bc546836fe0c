"""Retrieval quality on LoCoMo: is the evidence turn of a question found?

Data: ``shared/bench/locomo/locomo10.zip`` (10 long two-person conversations, 1,986 questions
with the ids of the turns that answer them). It is CC BY-NC: it is read from the zip and every
derived file lives in the benchmark cache, never in the repository or the product.

Conversion (one Claude Code-shaped transcript per LoCoMo session, ingested with the normal
pipeline, ``ingest_paths``, redaction included, into a cached database):

- a conversation is a project (``cwd`` ``/locomo/conv-26`` -> project ``conv-26``); each
  LoCoMo session is one session file, its records timestamped from the session's date and
  time (turns 30 s apart);
- the speaker who opens a session is the *user* and the other the *assistant*, so every
  turn is one message and its reply, as in Claude Code (speakers strictly alternate in the
  data; with a fixed "speaker A = user", 124 sessions would open with an assistant reply);
- a turn's text is ``"<speaker name>: <text>"`` (questions name the speakers), plus
  ``[shares a photo: <caption>]`` for turns that carry an image caption. The baselines index
  exactly the same turn texts;
- each record's ``uuid`` is derived from its ``dia_id``, and the byte offset of every record
  is kept, so a stored chunk maps back to dia ids exactly: a chunk covers the records of its
  turn (from its ``offset`` to the next user record), confirmed by the turn's text appearing
  in the chunk's text (which settles chunks that are one part of a split turn).

Scoring (categories 1-4; 5 is adversarial and excluded as usual). A question is found when
*all* its evidence turns are found:

- ``@5`` / ``@10``: in the first 5 / 10 results (ranked modes only);
- ``1k`` / ``2k``: inside the first 1,000 / 2,000 tokens (3.5 characters each) of the text
  the method returns: the turn's text lies whole inside that prefix, within a result block of
  its session (`turn_shown`: the rule of ``bench.answers``' ev@2k and LoCoMo slice). An answer
  unit shows text beyond its match's chunk (the turn's reply, the messages around a chat
  match), which counts. The budget form is the fair one across chunk sizes.

Baselines computed here: BM25 (FTS5, the product's own query builder) and dense MiniLM
(``causantic.model.embedder``, best window) over single turns; their "returned text" is the turns,
each under a one-line date header, joined like search results. Turn vectors are cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
import uuid
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import SHARED_DIR, cli_main, print_table, write_result
from bench.corpus import cache_dir, private_dir, redact_function, schema_version

DATA_ZIP = SHARED_DIR / "bench" / "locomo" / "locomo10.zip"
GENERATOR_VERSION = 1
#: The data stores numbers only; these labels follow the common convention (mem0 and others).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BUDGETS = (1_000, 2_000)
TINY_CONVERSATION = "conv-26"
TINY_SESSIONS = 4
TINY_QUESTIONS_PER_CATEGORY = 3
PUBLISHED = [
    {"system": "mcp-memory-service (all-MiniLM-L6-v2)", "claim": "R@5 49.7 %"},
    {"system": "deja-vu", "claim": "69.8 %"},
    {"system": "MemPalace", "claim": "R@10 60.3 % (session level), 88.9 % (hybrid)"},
]
_NS = uuid.UUID("0b6f3c52-7d0e-4a41-9d55-3c8c1f0e2a77")
_WS_RE = re.compile(r"\s+")
_DIA_RE = re.compile(r"D:?(\d+):(\d+)")
_SEP = "\n\n---\n\n"


# -- the data ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiaTurn:
    """One LoCoMo turn as indexed by every method."""

    conv: str
    dia_id: str
    session: int
    speaker: str
    text: str  # "<speaker>: <text> [shares a photo: ...]"
    time: str  # ISO, UTC


@dataclass(frozen=True)
class Question:
    conv: str
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    id: str
    speakers: tuple[str, str]
    sessions: list[tuple[int, list[DiaTurn]]] = field(default_factory=list)


def load(zip_path: Path = DATA_ZIP, only: Sequence[str] | None = None,
         max_sessions: int | None = None
         ) -> tuple[list[Conversation], list[Question], dict[str, int]]:
    """Conversations, usable questions (categories 1-4, evidence present) and skip counts.

    ``only`` keeps those conversation ids; ``max_sessions`` keeps each one's first sessions
    (and the questions whose evidence lies in them).
    """
    convs: list[Conversation] = []
    questions: list[Question] = []
    skipped = {"adversarial": 0, "no_evidence": 0}
    with zipfile.ZipFile(zip_path) as zf:
        names = sorted(n for n in zf.namelist() if n.endswith(".json"))
        for name in names:
            conv_id = "conv-" + Path(name).stem
            if only is not None and conv_id not in only:
                continue
            doc = json.loads(zf.read(name))
            conv = _conversation(conv_id, doc)
            if max_sessions is not None:
                conv.sessions = conv.sessions[:max_sessions]
            convs.append(conv)
            known = {t.dia_id for _, turns in conv.sessions for t in turns}
            for qa in doc.get("qa", []):
                cat = int(qa.get("category", 0))
                if cat not in CATEGORIES:
                    skipped["adversarial"] += 1
                    continue
                evidence = tuple(dict.fromkeys(_evidence_ids(qa.get("evidence", []))))
                if not evidence or any(e not in known for e in evidence):
                    if max_sessions is None:
                        skipped["no_evidence"] += 1
                    continue
                questions.append(Question(conv_id, str(qa["question"]), cat, evidence))
    return convs, questions, skipped


def _conversation(conv_id: str, doc: dict[str, Any]) -> Conversation:
    conv = Conversation(conv_id, (doc["speaker_a"], doc["speaker_b"]))
    numbers = sorted(int(m.group(1)) for k in doc
                     if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(doc[k], list))
    for n in numbers:
        start = datetime.strptime(doc[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        turns = []
        for i, t in enumerate(doc[f"session_{n}"]):
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            ts = start + timedelta(seconds=30 * i)
            turns.append(DiaTurn(conv_id, t["dia_id"], n, t["speaker"], text,
                                 ts.strftime("%Y-%m-%dT%H:%M:%S.000Z")))
        conv.sessions.append((n, turns))
    return conv


def _evidence_ids(raw: Iterable[Any]) -> list[str]:
    """Evidence ids, repairing the data's slips ('D8:6; D9:17', 'D:11:26', space-joined)."""
    out = []
    for item in raw:
        for m in _DIA_RE.finditer(str(item)):
            out.append(f"D{m.group(1)}:{m.group(2)}")
    return out


# -- transcripts and the causantic database ---------------------------------------------------


def session_uuid(conv: str, session: int) -> str:
    return str(uuid.uuid5(_NS, f"{conv}:session_{session}"))


def write_transcripts(convs: Sequence[Conversation], folder: Path) -> dict[str, list[tuple[int, str, bool]]]:
    """One JSONL per session under ``folder/<project dir>/``; returns each file's records.

    The index maps a session id to ``(byte offset, dia_id, is_user)`` for each record.
    """
    index: dict[str, list[tuple[int, str, bool]]] = {}
    for conv in convs:
        cwd = f"/locomo/{conv.id}"
        project_dir = folder / ("-" + cwd.strip("/").replace("/", "-"))
        private_dir(project_dir)
        for n, turns in conv.sessions:
            sid = session_uuid(conv.id, n)
            records: list[tuple[int, str, bool]] = []
            lines: list[bytes] = []
            offset = 0
            parent = None
            opener = turns[0].speaker if turns else ""
            for t in turns:
                rid = str(uuid.uuid5(_NS, f"{conv.id}:{t.dia_id}"))
                is_user = t.speaker == opener
                rec: dict[str, Any] = {
                    "parentUuid": parent, "isSidechain": False, "userType": "external",
                    "cwd": cwd, "sessionId": sid, "version": "2.1.0", "gitBranch": "",
                    "type": "user" if is_user else "assistant", "uuid": rid,
                    "timestamp": t.time,
                }
                if is_user:
                    rec["message"] = {"role": "user", "content": t.text}
                else:
                    rec["message"] = {"id": "msg_" + rid.replace("-", ""), "type": "message",
                                      "role": "assistant", "model": "locomo",
                                      "content": [{"type": "text", "text": t.text}],
                                      "stop_reason": "end_turn"}
                line = (json.dumps(rec, ensure_ascii=False) + "\n").encode()
                records.append((offset, t.dia_id, is_user))
                lines.append(line)
                offset += len(line)
                parent = rid
            path = project_dir / f"{sid}.jsonl"
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(b"".join(lines))
            index[sid] = records
    return index


@dataclass
class LocomoDB:
    path: Path
    chunk_dias: dict[str, frozenset[str]]  # chunk id -> dia ids it holds
    ingest_seconds: float
    chunks: int
    vectors: int


def build_db(convs: Sequence[Conversation], zip_path: Path = DATA_ZIP) -> LocomoDB:
    """Convert, ingest (cached by data, conversation set and schema) and map chunks to turns."""
    from causantic.ingest.pipeline import ingest_paths
    from causantic.store import open_store

    key = hashlib.sha1()
    key.update(zip_path.read_bytes())
    key.update(",".join(c.id for c in convs).encode())
    redact = redact_function()
    key.update(f"{GENERATOR_VERSION}:{schema_version()}:{_embed_model()}".encode())
    folder = cache_dir() / "locomo" / key.hexdigest()[:12]
    db_path = folder / "memory.db"
    meta_path = folder / "build.json"
    turns = {t.dia_id: t for c in convs for _, ts in c.sessions for t in ts}
    by_conv_turns = {(c.id, t.dia_id): t for c in convs for _, ts in c.sessions for t in ts}
    if not meta_path.exists():
        private_dir(folder)
        for suffix in ("", "-wal", "-shm"):
            Path(str(db_path) + suffix).unlink(missing_ok=True)
        index = write_transcripts(convs, folder / "projects")
        started = time.perf_counter()
        with open_store(db_path) as store:
            report = ingest_paths(store, [folder / "projects"], redact)
        seconds = time.perf_counter() - started
        if report.problems:
            raise RuntimeError(f"LoCoMo ingest reported problems: {report.problems[:3]}")
        embedded = embed_pending(db_path)
        meta = {"index": index, "ingest_seconds": seconds, "embedded": embedded}
        fd = os.open(meta_path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(meta, f)
    meta = json.loads(meta_path.read_text())
    index = {sid: [tuple(r) for r in recs] for sid, recs in meta["index"].items()}
    conv_of_session = {session_uuid(c.id, n): c.id for c in convs for n, _ in c.sessions}
    chunk_dias: dict[str, frozenset[str]] = {}
    with open_store(db_path, readonly=True) as store:
        rows = store.conn.execute("SELECT id, session_id, offset, text FROM chunks").fetchall()
        vectors = count_vectors(store.conn)
    for cid, sid, offset, text in rows:
        recs = index.get(sid, [])
        conv = conv_of_session.get(sid, "")
        candidates = _turn_records(recs, offset)
        body = _norm(text)
        confirmed = [d for d in candidates if _norm(by_conv_turns[(conv, d)].text) in body]
        chunk_dias[cid] = frozenset(f"{conv}/{d}" for d in (confirmed or candidates))
    del turns
    return LocomoDB(db_path, chunk_dias, float(meta["ingest_seconds"]), len(rows), vectors)


def _turn_records(recs: Sequence[tuple[int, str, bool]], offset: int) -> list[str]:
    """Dia ids of the records of the turn that starts at ``offset``."""
    out: list[str] = []
    for off, dia, is_user in recs:
        if off < offset:
            continue
        if off > offset and is_user:
            break
        out.append(dia)
    return out


def _norm(text: str) -> str:
    return _WS_RE.sub(" ", text).strip()


def count_vectors(conn) -> int:  # type: ignore[no-untyped-def]
    """Stored chunk vectors (0 when the vector table does not exist)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "chunk_vectors_meta" in tables:
        return int(conn.execute("SELECT count(*) FROM chunk_vectors_meta").fetchone()[0])
    return 0


def _embed_model() -> str:
    """The model id vectors would be made with here, or '' (part of the cache key)."""
    import importlib.util

    from causantic.model.embedder import available

    if importlib.util.find_spec("causantic.ingest.embed") is None or not available():
        return ""
    from causantic.model import MODEL_ID

    return MODEL_ID


def embed_pending(db_path: Path) -> int:
    """Embed the stored chunks with the product's own embed step (0 if it cannot run here)."""
    try:
        from causantic.ingest.embed import embed_pending as product_embed_pending
    except ImportError:  # the embedding pipeline has not landed in this checkout
        return 0
    from causantic.model.embedder import available
    from causantic.store import open_store

    if not available():
        return 0
    with open_store(db_path) as store:
        return int(product_embed_pending(store).embedded)


# -- methods -------------------------------------------------------------------------------


@dataclass
class Answer:
    """What one method returned for one question."""

    ranked: list[frozenset[str]]  # dia ids per result, in rank order ([] when unranked)
    shown: list[tuple[str, str]]  # (session id, text) of the result blocks in the returned text
    text: str  # the returned text (budget BUDGETS[-1])


def search_answer(db: LocomoDB, ranked: Any, budget: Any) -> Answer:
    """An `Answer` from causantic's top-10 search (``ranked``) and its budgeted answer. A
    result counts every turn it shows a match of: its own chunk's and those folded or merged
    into it (`Hit.chunk_ids`: a chat turn next to a shown one joins that result)."""
    return Answer([frozenset().union(*(db.chunk_dias.get(c, frozenset()) for c in h.chunk_ids))
                   for h in ranked.results],
                  [(h.session_id, h.text) for h in budget.results], budget.text)


def turn_shown(turn: str, session: str, body: str, shown: Sequence[tuple[str, str]]) -> bool:
    """Whether a LoCoMo turn's text lies inside the answer (``body``, whitespace-normalised)
    within a result block of its session (``shown``: (session id or its prefix, block text))."""
    text = _norm(turn)
    return text in body and any(session.startswith(sid) and text in _norm(b) for sid, b in shown)


Method = Callable[[Question], Answer]


def search_method(store, db: LocomoDB, mode: str) -> Method | None:  # type: ignore[no-untyped-def]
    """causantic's own search in one mode, or None when that mode is not available."""
    from bench.latency import mode_works
    from causantic.retrieval.search import search

    if mode != "keyword" and (db.vectors == 0 or not mode_works(store, mode)):
        return None

    def answer(q: Question) -> Answer:
        ranked = search(store, q.question, project=q.conv, limit=10, max_tokens=1_000_000,
                        mode=mode)
        budget = search(store, q.question, project=q.conv, limit=60,
                        max_tokens=BUDGETS[-1], mode=mode)
        return search_answer(db, ranked, budget)

    return answer


def recall_method(store, db: LocomoDB) -> Method | None:  # type: ignore[no-untyped-def]
    """causantic's recall (hybrid seeds + chains), when it exists (issue 4)."""
    from bench.latency import find_episodic

    recall = find_episodic("recall")
    if recall is None:
        return None

    def answer(q: Question) -> Answer:
        result = recall(store, q.question, project=q.conv, max_tokens=BUDGETS[-1])
        return Answer([], [(h.session_id, h.text) for h in result.results], result.text)

    return answer


class TurnBaselines:
    """BM25 and dense retrieval over single turns, one conversation at a time."""

    def __init__(self, convs: Sequence[Conversation]) -> None:
        import apsw

        self.turns = {f"{t.conv}/{t.dia_id}": t for c in convs for _, ts in c.sessions for t in ts}
        self.conn = apsw.Connection(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE turns USING fts5(text, conv UNINDEXED, "
                          "key UNINDEXED, tokenize='porter unicode61')")
        with self.conn:
            self.conn.executemany("INSERT INTO turns(text, conv, key) VALUES (?,?,?)",
                                  [(t.text, t.conv, k) for k, t in self.turns.items()])
        self._vectors: Any = None
        self._owners: Any = None
        self._keys: list[str] = []
        self._masks: dict[str, Any] = {}

    def bm25(self, q: Question) -> Answer:
        from causantic.retrieval.fts import fts_query

        match = fts_query(q.question)
        keys: list[str] = []
        if match:
            keys = [k for (k,) in self.conn.execute(
                "SELECT key FROM turns WHERE turns MATCH ? AND conv = ? ORDER BY bm25(turns)"
                " LIMIT 80", (match, q.conv))]
        return self._answer(keys)

    def dense_available(self) -> bool:
        from causantic.model.embedder import available

        return available()

    def dense(self, q: Question) -> Answer:
        import numpy as np

        from causantic.model.embedder import get_embedder

        vectors, owners, keys = self._conv_vectors(q.conv)
        qv = get_embedder().embed_query(q.question)
        scores = np.full(len(keys), -np.inf, dtype=np.float32)
        np.maximum.at(scores, owners, vectors @ qv)  # a turn scores its best window
        top = np.argsort(-scores, kind="stable")[:80]
        return self._answer([keys[i] for i in top])

    def _conv_vectors(self, conv: str):  # type: ignore[no-untyped-def]
        """The window vectors of one conversation's turns, with local owner indices."""
        import numpy as np

        if conv not in self._masks:
            vectors, owners, keys = self._turn_vectors()
            local = [i for i, k in enumerate(keys) if k.startswith(conv + "/")]
            index = {g: j for j, g in enumerate(local)}
            rows = np.isin(owners, local)
            self._masks[conv] = (vectors[rows], np.array([index[o] for o in owners[rows]]),
                                 [keys[i] for i in local])
        return self._masks[conv]

    def _turn_vectors(self):  # type: ignore[no-untyped-def]
        if self._vectors is not None:
            return self._vectors, self._owners, self._keys
        import numpy as np

        from causantic.model.embedder import get_embedder

        embedder = get_embedder()
        keys = sorted(self.turns)
        digest = hashlib.sha1(embedder.model_id.encode())
        for k in keys:
            digest.update(f"{k}\x1f{self.turns[k].text}\x1e".encode())
        path = cache_dir() / "locomo" / f"turn-vectors-{digest.hexdigest()[:16]}.npz"
        if path.exists():
            data = np.load(path)
            vectors, owners = data["vectors"], data["owners"]
        else:
            # A turn's score is its best window, as for chunks (nearly every turn is one window).
            rows, owner_list = [], []
            for i, k in enumerate(keys):
                windows = embedder.embed_windows(self.turns[k].text)
                rows.append(windows)
                owner_list += [i] * len(windows)
            vectors, owners = np.concatenate(rows), np.array(owner_list)
            private_dir(path.parent)
            tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
            np.savez(tmp, vectors=vectors, owners=owners)
            os.replace(tmp, path)
        self._vectors, self._owners, self._keys = vectors, owners, keys
        return vectors, owners, keys

    def _answer(self, keys: list[str]) -> Answer:
        ranked = [frozenset([k]) for k in keys]
        limit = BUDGETS[-1] * 7 // 2
        parts: list[str] = []
        used = 0
        shown: list[tuple[str, str]] = []
        for k in keys:
            t = self.turns[k]
            item = f"{t.time[:16].replace('T', ' ')}\n{t.text}"
            cost = len(item) + (len(_SEP) if parts else 0)
            if used + cost > limit:
                break
            parts.append(item)
            shown.append((session_uuid(t.conv, t.session), t.text))
            used += cost
        return Answer(ranked[:10], shown, _SEP.join(parts))


# -- scoring -------------------------------------------------------------------------------


def score(questions: Sequence[Question], method: Method, turns: dict[str, DiaTurn],
          ranked: bool, progress: str = "") -> dict[str, Any]:
    """Per category (and overall): share of questions whose evidence is all found."""
    tallies: dict[str, dict[str, int]] = {}
    started = time.perf_counter()
    for i, q in enumerate(questions):
        if progress and i and i % 250 == 0:
            print(f"locomo: {progress} {i}/{len(questions)}", file=sys.stderr, flush=True)
        need = {f"{q.conv}/{e}" for e in q.evidence}
        a = method(q)
        found: dict[str, bool] = {}
        if ranked:
            for k in (5, 10):
                got = set().union(*a.ranked[:k]) if a.ranked else set()
                found[f"@{k}"] = need <= got
                found[f"any@{k}"] = bool(need & got)  # lenient: one evidence turn is enough
        for budget in BUDGETS:
            prefix = _norm(a.text[: budget * 7 // 2])
            found[f"{budget // 1000}k"] = all(
                turn_shown(turns[e].text, session_uuid(turns[e].conv, turns[e].session), prefix,
                           a.shown) for e in need)
        for cat in (CATEGORIES[q.category], "all"):
            tally = tallies.setdefault(cat, {"n": 0})
            tally["n"] += 1
            for name, ok in found.items():
                tally[name] = tally.get(name, 0) + int(ok)
    out: dict[str, Any] = {}
    for cat, tally in tallies.items():
        n = tally["n"]
        out[cat] = {"n": n, **{k: round(100.0 * v / n, 1) for k, v in tally.items() if k != "n"}}
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


# -- the benchmark ---------------------------------------------------------------------------


def run(tiny: bool = False) -> dict[str, Any]:
    """Convert, ingest, run every method on every question, print and write the tables."""
    if not DATA_ZIP.exists():
        print(f"### LoCoMo\n\nn/a: {DATA_ZIP} not found\n")
        return {"available": False}
    only = [TINY_CONVERSATION] if tiny else None
    convs, questions, skipped = load(DATA_ZIP, only, TINY_SESSIONS if tiny else None)
    if tiny:
        picked: list[Question] = []
        for cat in CATEGORIES:
            picked += [q for q in questions if q.category == cat][:TINY_QUESTIONS_PER_CATEGORY]
        questions = picked
    turns = {f"{t.conv}/{t.dia_id}": t for c in convs for _, ts in c.sessions for t in ts}
    db = build_db(convs)
    baselines = TurnBaselines(convs)
    from causantic.store import open_store

    with open_store(db.path, readonly=True) as store:
        methods: list[tuple[str, Method | None, bool]] = [
            ("BM25, single turns (baseline)", baselines.bm25, True),
            ("dense MiniLM, single turns (baseline)",
             baselines.dense if baselines.dense_available() else None, True),
        ]
        for mode in ("keyword", "vector", "hybrid"):
            methods.append((f"causantic search --mode {mode}", search_method(store, db, mode), True))
        methods.append(("causantic recall (hybrid + chains)", recall_method(store, db), False))
        results: dict[str, Any] = {
            name: score(questions, method, turns, ranked, "" if tiny else name) if method else None
            for name, method, ranked in methods
        }

    setup = {
        "conversations": len(convs), "sessions": sum(len(c.sessions) for c in convs),
        "turns": len(turns), "questions": len(questions),
        "skipped": ", ".join(f"{k} {v}" for k, v in skipped.items()),
        "chunks": db.chunks, "turns per chunk": round(len(turns) / max(db.chunks, 1), 2),
        "vectors": db.vectors, "ingest s": round(db.ingest_seconds, 3),
    }
    print_table("LoCoMo setup", [setup])
    print_tables(results, tiny)
    print_table("Published LoCoMo retrieval figures (each system's own claim; definitions differ)",
                PUBLISHED)
    payload = {"setup": setup, "categories": CATEGORIES, "methods": results, "published": PUBLISHED,
               "definition": "a question counts when all its evidence turns are found"}
    write_result("locomo", payload, tiny)
    return payload


def print_tables(results: dict[str, Any], tiny: bool = False) -> list[str]:
    """The two LoCoMo tables (top-k, budget): rows are methods, cells 'a / b' in %."""
    counts = next((r for r in results.values() if r), {})
    cats = [*CATEGORIES.values(), "all"]
    labels = {c: f"{c} (n={counts[c]['n']})" if c in counts else c for c in cats}
    out = []
    for title, keys in (("evidence in the top 5 / top 10 results", ("@5", "@10")),
                        ("evidence within the first 1,000 / 2,000 tokens returned", ("1k", "2k"))):
        rows = []
        for name, res in results.items():
            row: dict[str, Any] = {"method": name}
            for c in cats:
                cell = (res or {}).get(c) or {}
                row[labels[c]] = (f"{cell[keys[0]]:.1f} / {cell[keys[1]]:.1f}"
                                  if keys[0] in cell else "n/a")
            rows.append(row)
        out.append(print_table(f"LoCoMo {'(tiny) ' if tiny else ''}{title}, % of questions", rows))
    rows = []
    for name, res in results.items():
        cell = (res or {}).get("all") or {}
        if "@5" not in cell:
            continue
        rows.append({"method": name, "all evidence @5": cell["@5"], "all evidence @10": cell["@10"],
                     "any evidence @5": cell["any@5"], "any evidence @10": cell["any@10"]})
    out.append(print_table("LoCoMo, categories 1-4: strict (all evidence turns) vs lenient "
                           "(any evidence turn) in the top 5 / 10, % of questions", rows))
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.locomo [--tiny]``."""
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())

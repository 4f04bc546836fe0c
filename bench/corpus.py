"""A synthetic corpus of any size, grown from the shared transcripts, cached outside the repo.

The real transcripts under ``shared/transcripts/`` are ingested once with the normal pipeline
(redaction included) into a *base* database. A corpus of ``n`` chunks is then made of whole
sessions of that base: copy 0 is the real data unchanged, and copies 1, 2, ... are the same
sessions with new session and chunk ids, times shifted into the past (about five days per
copy, plus a random offset), and renamed projects (``cli-03``, ``spotter-11``: at most
``PROJECT_SLOTS`` names per real project). Edges are copied with their ids mapped, so chains,
sub-agent briefs and continuations survive.

Copies must not be duplicates of each other: search collapses identical and near-identical
texts at read time, so exact copies would make every query pay for deduplication it never
pays on real data, and rare words would be shared by every copy. So each copy renames its
*rare* words (those in at most ``RARE_DOCS`` base chunks) with a suffix of its own
(``daytona`` -> ``daytonaqb``): common words keep their document frequency, rare words stay
rare, and the vocabulary grows with the corpus as real memory's does. Block labels
(``[User]``, ``[Tool:Bash]``, ...) are kept as they are. Sessions are added in a seeded random order until
the corpus holds at least ``n`` chunks, so the same ``n`` always gives the same database.

Each copy is written in its own transaction, as incremental ingest would, so the FTS index
has the segment structure a real store grows. Optional vectors are random unit vectors
(seeded), written through the vector table of the store when that exists.

Cache: ``$CAUSANTIC_BENCH_CACHE`` or ``~/.cache/causantic-bench/``; files are named by the
generator version, the schema version and the size, so a schema change builds a new file.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import TRANSCRIPTS_DIR, cli_main, print_table

GENERATOR_VERSION = 3
RARE_DOCS = 8
SEED = 20260122
PROJECT_SLOTS = 16
SIZES = (1_000, 10_000, 100_000)
_NAMESPACE = uuid.UUID("5d1c8a44-0c43-4d6e-9a55-8f3e4f1b7a20")
_WORD_SPLIT = re.compile(r"([A-Za-z]{3,})")
_LABEL_SPLIT = re.compile(r"(\[(?:User|Assistant|Summary|Command expansion|Tool:[^\]\n]*"
                          r"|Result:[^\]\n]*)\])")


def cache_dir() -> Path:
    """Where benchmark databases and caches live (never inside the repository)."""
    override = os.environ.get("CAUSANTIC_BENCH_CACHE")
    folder = Path(override) if override else Path.home() / ".cache" / "causantic-bench"
    return private_dir(folder)


def private_dir(folder: Path) -> Path:
    """Create ``folder`` and any missing parents as 0700 (mkdir's parents get the umask)."""
    missing = []
    for p in (folder, *folder.parents):
        if p.exists():
            break
        missing.append(p)
    for p in reversed(missing):
        p.mkdir(mode=0o700, exist_ok=True)
    return folder


def redact_function():  # type: ignore[no-untyped-def]
    """The product's redact(text) -> (text, count) with default settings."""
    from causantic.config import load_settings
    from causantic.ingest.run import make_redact

    settings = load_settings(db=cache_dir() / "unused.db", env={"HOME": str(cache_dir())})
    return make_redact(settings)


def schema_version() -> int:
    """The newest schema version this checkout writes."""
    from causantic.store.schema import MIGRATIONS

    return len(MIGRATIONS)


def _transcripts_key() -> str:
    h = hashlib.sha1()
    for path in sorted(TRANSCRIPTS_DIR.rglob("*.jsonl")):
        st = path.stat()
        h.update(f"{path.relative_to(TRANSCRIPTS_DIR)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:10]


def base_db() -> Path:
    """The shared transcripts ingested once by the normal pipeline (cached)."""
    from causantic.ingest.pipeline import ingest_paths
    from causantic.store import open_store

    path = cache_dir() / f"base-v{GENERATOR_VERSION}-s{schema_version()}-{_transcripts_key()}.db"
    if path.exists():
        return path
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    _remove_db(tmp)
    with open_store(tmp) as store:
        ingest_paths(store, [TRANSCRIPTS_DIR], redact_function())
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _finish(tmp, path)
    return path


@dataclass(frozen=True)
class CorpusInfo:
    """What a built corpus holds."""

    path: Path
    chunks: int
    sessions: int
    projects: int
    edges: int
    vectors: int
    build_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "chunks": self.chunks, "sessions": self.sessions,
                "projects": self.projects, "edges": self.edges, "vectors": self.vectors,
                "build_seconds": round(self.build_seconds, 2)}


def corpus(n: int, *, vectors: bool = False) -> CorpusInfo:
    """A database of at least ``n`` chunks (see the module docstring); built once, then cached."""
    if n < 1:
        raise ValueError("a corpus needs at least one chunk")
    suffix = "-vec" if vectors else ""
    path = cache_dir() / f"corpus-v{GENERATOR_VERSION}-s{schema_version()}-{n}{suffix}.db"
    info_path = path.with_name(path.name + ".json")
    if path.exists() and info_path.exists():
        doc = json.loads(info_path.read_text())
        doc["path"] = path
        return CorpusInfo(**doc)
    started = time.perf_counter()
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    _remove_db(tmp)
    counts = _build(base_db(), tmp, n, vectors)
    _finish(tmp, path)
    info = CorpusInfo(path, *counts, time.perf_counter() - started)
    doc = info.as_dict()
    del doc["path"]
    fd = os.open(info_path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(doc) + "\n")
    return info


def _build(base: Path, target: Path, n: int, vectors: bool) -> tuple[int, int, int, int, int]:
    import apsw

    from causantic.store import open_store

    src = apsw.Connection(str(base), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        sessions = _rows(src, "SELECT * FROM sessions ORDER BY id")
        chunks = _rows(src, "SELECT * FROM chunks ORDER BY session_id, agent_id, offset, part")
        edges = src.execute("SELECT src, dst, kind, weight FROM edges").fetchall()
    finally:
        src.close()
    by_session: dict[str, list[dict[str, Any]]] = {}
    for c in chunks:
        by_session.setdefault(c["session_id"], []).append(c)
    order = [s for s in sessions if s["id"] in by_session]
    if not order:
        raise RuntimeError(f"no chunks in the base corpus built from {TRANSCRIPTS_DIR}")
    rare = _rare_words(c["text"] for c in chunks)
    rng = random.Random(SEED)
    total = copy = 0
    chunk_cols = [k for k in chunks[0] if k != "rowid"]
    with open_store(target) as store:
        conn = store.conn
        while total < n:
            picked = []
            for s in rng.sample(order, len(order)):
                if total >= n:
                    break
                picked.append(s)
                total += len(by_session[s["id"]])
            shift = timedelta(days=5 * copy, seconds=rng.randrange(86_400) if copy else 0)
            ids: dict[str, str] = {}
            session_rows, chunk_rows = [], []
            for s in picked:
                new_sid = s["id"] if copy == 0 else str(uuid.uuid5(_NAMESPACE, f"{copy}:{s['id']}"))
                session_rows.append(_session_copy(s, new_sid, copy, shift))
                for c in by_session[s["id"]]:
                    cid = c["id"] if copy == 0 else hashlib.sha256(
                        f"{copy}:{c['id']}".encode()).hexdigest()[:24]
                    ids[c["id"]] = cid
                    text = c["text"] if copy == 0 else _rename_rare(c["text"], rare, copy)
                    row = dict(c, id=cid, session_id=new_sid, file_id=None, text=text,
                               project=_project(c["project"], copy),
                               start_time=_shift(c["start_time"], shift),
                               end_time=_shift(c["end_time"], shift))
                    chunk_rows.append(tuple(row[k] for k in chunk_cols))
            edge_rows = [(ids[a], ids[b], kind, w) for a, b, kind, w in edges
                         if a in ids and b in ids]
            with conn:
                conn.executemany(
                    f"INSERT INTO sessions({','.join(sessions[0])}) "
                    f"VALUES ({','.join('?' * len(sessions[0]))})",
                    [tuple(r[k] for k in sessions[0]) for r in session_rows])
                conn.executemany(
                    f"INSERT INTO chunks({','.join(chunk_cols)}) "
                    f"VALUES ({','.join('?' * len(chunk_cols))})", chunk_rows)
                conn.executemany(
                    "INSERT OR IGNORE INTO edges(src, dst, kind, weight) VALUES (?,?,?,?)", edge_rows)
            copy += 1
        n_vectors = _add_vectors(store) if vectors else 0
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        one = lambda sql: int(conn.execute(sql).fetchone()[0])  # noqa: E731
        return (one("SELECT count(*) FROM chunks"), one("SELECT count(*) FROM sessions"),
                one("SELECT count(DISTINCT project) FROM chunks"), one("SELECT count(*) FROM edges"),
                n_vectors)


def _rare_words(texts) -> frozenset[str]:  # type: ignore[no-untyped-def]
    """Lower-cased words found in at most RARE_DOCS of the texts."""
    docs: dict[str, int] = {}
    for text in texts:
        for word in {w.lower() for w in _WORD_SPLIT.findall(text)}:
            docs[word] = docs.get(word, 0) + 1
    return frozenset(w for w, n in docs.items() if n <= RARE_DOCS)


def _rename_rare(text: str, rare: frozenset[str], copy: int) -> str:
    """The text with each rare word suffixed by the copy's own two letters (labels kept)."""
    suffix = chr(97 + copy // 26 % 26) + chr(97 + copy % 26)
    out = []
    for i, segment in enumerate(_LABEL_SPLIT.split(text)):
        if i % 2:  # a block label
            out.append(segment)
            continue
        parts = _WORD_SPLIT.split(segment)
        for j in range(1, len(parts), 2):
            if parts[j].lower() in rare:
                parts[j] += suffix.upper() if parts[j].isupper() else suffix
        out.append("".join(parts))
    return "".join(out)


def _add_vectors(store) -> int:  # type: ignore[no-untyped-def]
    """Random unit vectors (seeded), one window per chunk, and random token vectors, through
    the store's vector table.

    Random vectors cost KNN, fusion and chain scoring exactly what real ones do; they say
    nothing about quality (the quality benchmarks use the real model).
    """
    try:
        from causantic.store import vectors as vec_store  # issue 3
    except ImportError:
        return 0
    if not store.load_vec():
        return 0
    import numpy as np

    from causantic.model import DIM, MODEL_ID

    conn = store.conn
    vec_store.ensure_table(conn, DIM)
    rng = np.random.default_rng(SEED)
    # Grouped by project: vec0 inserts are ~10x faster in runs of one partition.
    rows = conn.execute("SELECT rowid, id, project, length(text) FROM chunks"
                        " ORDER BY project, rowid").fetchall()
    # Token vectors as many as a real chunk of that length stores (~4 characters a word
    # piece, two pieces a token, at most TOKEN_WINDOWS windows), cut from one random pool.
    from causantic.model.embedder import TOKEN_POOL, TOKEN_WINDOWS, WINDOW_CONTENT

    most = TOKEN_WINDOWS * WINDOW_CONTENT // TOKEN_POOL
    bits = np.packbits(rng.standard_normal((4 * most, DIM)) > 0, axis=1)
    written = 0
    for i in range(0, len(rows), 2_000):
        part = rows[i : i + 2_000]
        vecs = rng.standard_normal((len(part), DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        starts = rng.integers(0, 3 * most, len(part))
        items = [vec_store.EmbeddedChunk(
                     r, cid, project, vecs[j : j + 1],
                     bits[starts[j] : starts[j] + max(1, min(most, size // 8))].tobytes())
                 for j, (r, cid, project, size) in enumerate(part)]
        written += vec_store.write_vectors(conn, items, MODEL_ID)
    return written


def _rows(conn, sql: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    cur = conn.execute(sql)
    names = [d[0] for d in cur.getdescription()]
    return [dict(zip(names, r)) for r in cur]


def _session_copy(s: dict[str, Any], new_id: str, copy: int, shift: timedelta) -> dict[str, Any]:
    if copy == 0:
        return s
    return dict(s, id=new_id, project=_project(s["project"], copy),
                start_time=_shift(s["start_time"], shift), end_time=_shift(s["end_time"], shift),
                forked_from=(str(uuid.uuid5(_NAMESPACE, f"{copy}:{s['forked_from']}"))
                             if s["forked_from"] else None))


def _project(name: str, copy: int) -> str:
    return name if copy == 0 else f"{name}-{(copy - 1) % PROJECT_SLOTS + 1:02d}"


def _shift(ts: str | None, shift: timedelta) -> str | None:
    if not ts or not shift:
        return ts
    t = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC) - shift
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _finish(tmp: Path, path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    os.replace(tmp, path)


def run(tiny: bool = False) -> dict[str, Any]:
    """Build (or reuse) the corpora the latency benchmark uses and print what they hold."""
    sizes = (300,) if tiny else SIZES
    rows = []
    for n in sizes:
        info = corpus(n)
        rows.append({"target": n, **{k: v for k, v in info.as_dict().items() if k != "path"}})
    print_table("Synthetic corpora (cached in " + str(cache_dir()) + ")", rows)
    return {"corpora": rows}


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.corpus [--tiny]``: build the cached corpora."""
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())

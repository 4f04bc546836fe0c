"""Writing observations: validation, redaction, content-hash ids, exact and near duplicates.

Invariants:

- The id is `mem_` + a hash of the project and the *normalised* redacted text (case,
  whitespace and trailing punctuation ignored; numbers and identifiers kept), so an exact
  repeat is the same row, counted, and an automatic observation found again on re-ingest is
  the same row, not counted again unless it comes with new evidence.
- A near duplicate (cosine >= `NEAR_COSINE` with an earlier memory of the same project
  observed within `near_days` before it, and the *same identifiers*: numbers, paths, flags,
  names with `_ . / : @ -` or inner capitals) is linked to the earliest such memory with
  `duplicate_of`; readers collapse it under its original. Nothing is deleted. "port 8080"
  and "port 8081" are never duplicates: their identifier sets differ.
- Tombstones (scope 'memory' in `forgotten`) stop automatic observations from coming back;
  an explicit `remember` of the same text lifts the tombstone (the user said so).
- Vectors are computed here when the model is available, otherwise by `embed_memories`
  (called by `causantic embed` and the background worker).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw

from causantic.config import MemorySettings
from causantic.errors import UsageError
from causantic.memory import DEFAULT_IMPORTANCE, MAX_TEXT, ORIGINS, TYPES
from causantic.memory.scope import memory_project
from causantic.records import Record
from causantic.store import memories as sql
from causantic.store import redaction
from causantic.store.counts import existing_ids
from causantic.store.db import Store
from causantic.timestamps import iso_utc, parse_iso
from causantic.tokens import clip

NEAR_COSINE = 0.90
NEAR_DAYS = MemorySettings().near_days  # `[memory] near_days` as config.KEYS sets it

Redact = Callable[[str], tuple[str, int]]

_SPACE_RE = re.compile(r"\s+")
_IDENT_RE = re.compile(
    r"`[^`\n]{1,80}`"                       # anything in backticks
    r"|--?[A-Za-z][\w-]*"                   # flags
    r"|[\w.+-]*\d[\w.:/+-]*"                # anything with a digit: ports, versions, ids
    r"|\w+(?:[_./:@-]\w+)+"                 # snake_case, paths, hosts, a.b.c
    r"|[a-z]+[A-Z]\w*|[A-Z]{2,}\w*"         # camelCase, CONSTANTS
)


class Observed(Record):
    """What `observe` did: the memory's id, 'created' or 'repeated', its row now."""

    __slots__ = ("id", "status", "memory", "duplicate_of", "embedded")
    id: str
    status: str
    memory: sql.MemoryRow
    duplicate_of: str | None
    embedded: bool

    def __init__(self, id: str, status: str, memory: sql.MemoryRow, duplicate_of: str | None,
                 embedded: bool) -> None:
        self._init(id=id, status=status, memory=memory, duplicate_of=duplicate_of,
                   embedded=embedded)

    @property
    def text(self) -> str:
        m = self.memory
        what = {"created": "Remembered", "repeated": f"Already remembered (seen {m.count}×)",
                "known": "Already remembered"}[self.status]
        line = (f"{what}: {m.id} · {m.type} · importance {m.effective_importance:g}"
                f" · {m.project or 'all projects'}")
        if self.duplicate_of:
            line += f"\nNear duplicate of {self.duplicate_of}: shown together with it."
        if not self.embedded:
            line += "\n(No vector yet: keyword search finds it now, `causantic embed` adds meaning.)"
        return line

    def as_dict(self) -> dict[str, object]:
        return {"id": self.id, "status": self.status, "duplicate_of": self.duplicate_of,
                "embedded": self.embedded, "memory": memory_dict(self.memory), "text": self.text}


def memory_dict(m: sql.MemoryRow) -> dict[str, object]:
    """A memory as JSON (the `memories --json` and search result extras)."""
    return {
        "id": m.id, "project": m.project, "type": m.type, "text": m.text,
        "importance": m.importance, "effective_importance": m.effective_importance,
        "origin": m.origin, "count": m.count, "helpful": m.helpful, "harmful": m.harmful,
        "duplicate_of": m.duplicate_of, "session_id": m.session_id,
        "created_at": m.created_at, "last_seen_at": m.last_seen_at,
    }


def normalise(text: str) -> str:
    """The text an exact repeat must share: lower case, single spaces, no trailing punctuation."""
    return _SPACE_RE.sub(" ", text.lower()).strip().rstrip(".!;:,").strip()


def memory_id(project: str, text: str) -> str:
    digest = hashlib.sha1(f"{project}\0{normalise(text)}".encode()).hexdigest()
    return "mem_" + digest[:12]


def identifiers(text: str) -> frozenset[str]:
    """Numbers, paths, flags and code-like names in the text: near duplicates must share them."""
    return frozenset(m.group(0).strip("`").lower().rstrip(".,:;") for m in _IDENT_RE.finditer(text))


def now_iso() -> str:
    return iso_utc(datetime.now(UTC))




def prepare(
    conn: apsw.Connection,
    text: str,
    *,
    type: str = "general",
    importance: float | None = None,
    project: str = "",
    cites: Sequence[str] = (),
    session_id: str | None = None,
    origin: str = "explicit",
    created_at: str | None = None,
    redact: Redact | None = None,
    importance_table: Mapping[str, float] | None = None,
    meta: dict[str, object] | None = None,
) -> sql.NewMemory:
    """Validate, redact and hash one observation (nothing is written).

    Raises
    ------
    UsageError : empty text, an unknown type or origin, importance outside 1-10, a cited
        chunk that is not in memory.
    """
    if type not in TYPES:
        raise UsageError(f"unknown memory type {type!r}; use one of {', '.join(TYPES)}")
    if origin not in ORIGINS:
        raise UsageError(f"unknown origin {origin!r}")
    clean = text.strip()
    if not clean:
        raise UsageError("nothing to remember: the text is empty")
    if importance is not None and not 1 <= importance <= 10:
        raise UsageError(f"importance must be from 1 to 10, not {importance:g}")
    redactions = 0
    if redact is not None:
        clean, redactions = redact(clean)
    clean = clip(clean, MAX_TEXT, strip=True)
    chunk_ids = [resolve_chunk(conn, c) for c in cites]
    base = importance if importance is not None else (importance_table or DEFAULT_IMPORTANCE)[type]
    project = (project or "").strip()
    return sql.NewMemory(memory_id(project, clean), project, type, clean, float(base), origin,
                         session_id, created_at or now_iso(), redactions, tuple(chunk_ids), meta)


def resolve_chunk(conn: apsw.Connection, ref: str) -> str:
    """A cited chunk id, exact or a unique prefix of at least 8 characters."""
    ref = ref.strip()
    if existing_ids(conn, [ref]):
        return ref
    if len(ref) >= 8 and re.fullmatch(r"[0-9a-f]+", ref):
        found = sql.chunk_ids_from(conn, ref)
        if len(found) == 1:
            return found[0]
    raise UsageError(f"cannot cite chunk {ref!r}: no such chunk in memory (chunk ids come "
                     "from `causantic search --json`)")


def observe(
    store: Store,
    text: str,
    *,
    type: str = "general",
    importance: float | None = None,
    project: str = "",
    cites: Sequence[str] = (),
    session_id: str | None = None,
    origin: str = "explicit",
    redact: Redact | None = None,
    importance_table: Mapping[str, float] | None = None,
    embed: bool = True,
    model_dir: str | Path | None = None,
    near_days: float = NEAR_DAYS,
) -> Observed:
    """Store one observation (or count an exact repeat), embed it if the model is available,
    and link it to an earlier near duplicate. Needs a writable store.

    Raises
    ------
    UsageError : see `prepare`.
    """
    conn = store.conn
    if origin != "auto":  # automatic ones come from ingest, named as ingest names projects
        project = memory_project(conn, project, new_ok=True) or ""
    memory = prepare(conn, text, type=type, importance=importance, project=project, cites=cites,
                     session_id=session_id, origin=origin, redact=redact,
                     importance_table=importance_table)
    with conn:
        if origin != "auto":
            sql.unforget(conn, memory.id)
        elif sql.forgotten(conn, [memory.id]):
            raise UsageError(f"{memory.id} was forgotten; remember it explicitly to bring it back")
        status = sql.upsert(conn, memory)
    if embed:
        embed_memories(store, model_dir=model_dir, near_days=near_days, only_if_available=True)
    row = sql.get(conn, memory.id)
    assert row is not None
    embedded = bool(sql.vectors(conn, _model_id(), [row.rowid]))
    return Observed(memory.id, status, row, row.duplicate_of, embedded)


def _model_id() -> str:
    # deferred: hook fast path: loaded only when this runs
    from causantic.model import MODEL_ID

    return MODEL_ID


def embed_memories(
    store: Store,
    *,
    embedder: object | None = None,
    model_dir: str | Path | None = None,
    near_days: float = NEAR_DAYS,
    only_if_available: bool = False,
) -> int:
    """Embed memories without a vector, then link near duplicates; return how many were embedded.

    With ``only_if_available``, returns -1 (and writes nothing) when the model is missing
    instead of raising ModelUnavailable.
    """
    conn = store.conn
    model_id = getattr(embedder, "model_id", None) or _model_id()
    todo = sql.pending_vectors(conn, model_id)
    if not todo:
        return 0
    if embedder is None:
        # deferred: heavy: pulls numpy, only needed here
        from causantic.model import embedder as embed

        if only_if_available and not embed.available(model_dir):
            return -1
        embedder = embed.get_embedder(model_dir)
    vectors = [(rowid, embedder.embed_query(text).tobytes()) for rowid, text in todo]  # type: ignore[attr-defined]
    with conn:
        for rowid, vec in vectors:
            sql.write_vector(conn, rowid, model_id, vec)
        link_near_duplicates(conn, [r for r, _ in vectors], model_id, near_days)
    return len(vectors)


def link_near_duplicates(conn: apsw.Connection, rowids: Sequence[int], model_id: str,
                         near_days: float = NEAR_DAYS) -> int:
    """Point each given memory at the earliest earlier memory it nearly repeats; return links made."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    new = sql.select(conn, rowids=list(rowids), order="created")
    linked = 0
    for m in new:
        start = iso_utc(parse_iso(m.created_at, or_now=True) - timedelta(days=near_days))
        earlier = [e for e in sql.select(conn, project=m.project, include_global=False,
                                         created_after=start, order="created")
                   if e.id != m.id and (e.created_at, e.rowid) < (m.created_at, m.rowid)]
        if not earlier:
            continue
        vecs = sql.vectors(conn, model_id, [m.rowid] + [e.rowid for e in earlier])
        if m.rowid not in vecs:
            continue
        mine = np.frombuffer(vecs[m.rowid], dtype=np.float32)
        ids = identifiers(m.text)
        for e in earlier:
            other = vecs.get(e.rowid)
            if other is None or identifiers(e.text) != ids:
                continue
            if float(mine @ np.frombuffer(other, dtype=np.float32)) >= NEAR_COSINE:
                sql.link_duplicate(conn, m.id, e.id)
                linked += 1
                break
    return linked




def forget_memories(store: Store, refs: Sequence[str], *, dry_run: bool = True) -> dict[str, object]:
    """Preview or delete memories by id (or unique id prefix), leaving tombstones.

    Raises
    ------
    UsageError : an id that matches no memory, or several.
    """
    conn = store.conn
    ids: list[str] = []
    for ref in refs:
        found = sql.resolve_ids(conn, ref)
        if not found:
            raise UsageError(f"no memory {ref!r}; `causantic memories` lists their ids")
        if len(found) > 1:
            raise UsageError(f"memory id {ref!r} is ambiguous ({', '.join(found)}); give more of it")
        ids.append(found[0])
    ids = list(dict.fromkeys(ids))
    rows = [r for r in (sql.get(conn, i) for i in ids) if r is not None]
    lines = [f"  {r.id} · {r.type} · {_first(r.text)}" for r in rows]
    n = len(rows)
    noun = f"{n} memor{'y' if n == 1 else 'ies'}"
    if dry_run:
        text = "\n".join([f"Dry run: {noun} would be forgotten:", *lines,
                          "Nothing was deleted. To delete: dry_run=false (command line: --yes)."])
    else:
        notes: list[str] = []
        with redaction.for_good(conn, notes, skip=not ids):
            sql.delete(conn, ids, "forget: memory")
        text = "\n".join([f"Forgot {noun} (text, index entries, vector, citations and feedback "
                          "removed; tombstones keep them from coming back):", *lines,
                          *(f"Note: {note}." for note in notes)])
    return {"dry_run": dry_run, "memories": ids, "text": text}


def forget_auto_for_chunks(conn: apsw.Connection, chunk_ids: Sequence[str]) -> int:
    """Forget the automatic memories whose evidence is among these (forgotten) chunks.

    Their text was taken from those chunks, so it must go with them; explicit memories that
    merely cite a chunk stay (the user wrote them).
    """
    ids = sql.auto_citing(conn, chunk_ids)
    return sql.delete(conn, ids, "forget: evidence forgotten") if ids else 0


def _first(text: str, width: int = 90) -> str:
    return clip(text.strip().splitlines()[0] if text.strip() else "", width)

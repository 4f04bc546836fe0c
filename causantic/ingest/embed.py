"""The embedding pipeline: give every stored chunk its window vectors, resumably.

`embed_pending` lists the chunks without vectors (or, for `reindex`, with vectors from another
model), grouped by project, and embeds them one window per model run
(`Embedder.embed_windows_and_tokens`, the chunk's already-redacted text: window vectors and the
token vectors search's rerank reads). Every `batch_size` chunks it writes what it computed in one
short transaction, so a crash loses at most the open batch and a rerun redoes nothing that was
committed. No lock is held while the model runs; a chunk deleted, rewritten or embedded by
another process meanwhile is skipped at write time (see `store.vectors.write_vectors`).
Chunks that have vectors but no token vectors (embedded before they existed, or imported) get
them afterwards, from their first `TOKEN_WINDOWS` windows (`store.vectors.write_token_bits`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from causantic.errors import ModelUnavailable
from causantic.model import MODEL_ID
from causantic.store import vector_index
from causantic.store import vectors as vec_store
from causantic.store.db import Store
from causantic.wording import plural

if TYPE_CHECKING:
    import numpy as np

    from causantic.model.embedder import Embedder

DEFAULT_BATCH = 32


@dataclass
class EmbedReport:
    """What one embed (or reindex) run did."""

    model_id: str
    todo: int = 0  # chunks this run set out to embed
    embedded: int = 0  # chunks whose vectors it stored
    skipped: int = 0  # deleted, rewritten or embedded elsewhere while it ran
    windows: int = 0
    reused: int = 0  # chunks given a twin's vectors (a fork's copy of its parent's chunk)
    seconds: float = 0.0
    remaining: int = 0  # chunks still without vectors afterwards
    stale: int = 0  # chunks with vectors from another model afterwards
    swept: int = 0  # orphaned vec0 rows removed
    topics_joined: int = 0  # new chunks that joined a topic (nearest centroid, threshold)
    indexed: int = 0  # chunks (re)written into the compact vector index by its refresh
    tokened: int = 0  # chunks that had vectors and were given token vectors
    topics: dict[str, object] | None = None  # the automatic rebuild after it, if one ran
    topics_note: str = ""  # why an automatic rebuild that was due did not happen

    @property
    def rate(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "model_id": self.model_id,
            "todo": self.todo,
            "embedded": self.embedded,
            "skipped": self.skipped,
            "windows": self.windows,
            "reused": self.reused,
            "seconds": round(self.seconds, 3),
            "chunks_per_second": round(self.rate, 2),
            "remaining": self.remaining,
            "stale": self.stale,
            "topics_joined": self.topics_joined,
            "indexed": self.indexed,
            "tokened": self.tokened,
            **({"topics_rebuilt": self.topics} if self.topics else {}),
            **({"topics_note": self.topics_note} if self.topics_note else {}),
        }


Progress = Callable[[int, int, float], None]


def embed_pending(
    store: Store,
    *,
    embedder: Embedder | None = None,
    model_dir: str | None = None,
    reindex: bool = False,
    batch_size: int = DEFAULT_BATCH,
    limit: int | None = None,
    progress: Progress | None = None,
    topic_threshold: float | None = None,
) -> EmbedReport:
    """Embed the chunks that have no vectors (``reindex``: vectors from another model).

    Parameters
    ----------
    store : Store
        A writable store.
    embedder : Embedder, optional
        The model to use; `get_embedder(model_dir)` when omitted.
    reindex : bool
        Re-embed chunks whose vectors were made by a different model id.
    batch_size : int
        Chunks per write transaction.
    limit : int, optional
        Embed at most this many chunks (the rest stay pending).
    progress : callable, optional
        Called after each batch with (done, total, seconds elapsed).
    topic_threshold : float, optional
        When given and topics exist, each newly embedded chunk joins the nearest topic
        centroid within this angular distance (`causantic.topics.maintain.Assigner`).

    Raises
    ------
    ModelUnavailable
        The model or sqlite-vec cannot be loaded (nothing is written).
    """
    started = time.perf_counter()
    conn = store.conn
    model_id = embedder.model_id if embedder is not None else MODEL_ID
    report = EmbedReport(model_id)
    if store.load_vec():
        report.swept = vec_store.sweep_orphans(conn)
        report.indexed = vector_index.refresh(conn, model_id)
    todo = vec_store.pending(conn, model_id, stale=reindex)
    if limit is not None:
        todo = todo[: max(0, limit)]
    report.todo = len(todo)
    untokened = [] if limit is not None else vec_store.untokened(conn, model_id)
    if todo or untokened:  # the model is loaded only when there is work
        if embedder is None:
            # deferred: heavy: pulls numpy, only needed here
            from causantic.model.embedder import get_embedder

            embedder = get_embedder(model_dir)
    if todo:  # sqlite-vec is loaded only when there are vectors to write
        assert embedder is not None
        if not store.load_vec():
            raise ModelUnavailable("the sqlite-vec extension cannot be loaded; vectors stay pending")
        vec_store.ensure_table(conn, embedder.dim)
    assigner = None
    if todo and topic_threshold is not None:
        # deferred: heavy: pulls numpy, only needed here
        from causantic.topics.maintain import Assigner

        assigner = Assigner.load(conn, model_id, topic_threshold)
    for i in range(0, len(todo), batch_size):
        assert embedder is not None
        batch = todo[i : i + batch_size]
        items = []
        done: dict[str, tuple[np.ndarray, bytes | None]] = {}  # this batch's, by text
        for p, text in _still_current(conn, batch):
            # The model gives one text the same vectors every time, so a forked session's
            # copy of its parent's chunk takes the parent's (stored, or in this batch).
            known = done.get(text)
            if known is None:
                twin = vec_store.twin_vectors(conn, p.rowid, embedder.model_id)
                known = None if twin is None else _from_twin(twin)
            if known is not None:
                windows, bits = known
                report.reused += 1
            else:
                windows, tokens = embedder.embed_windows_and_tokens(text)
                bits = vector_index.sign_bits(tokens).tobytes()
            done[text] = (windows, bits)
            items.append(vec_store.EmbeddedChunk(p.rowid, p.chunk_id, p.project, windows, bits))
        stored = vec_store.write_vectors(conn, items, embedder.model_id)
        if assigner is not None and stored:
            report.topics_joined += assigner.assign(conn, [it.rowid for it in items])
        report.embedded += stored
        report.skipped += len(batch) - stored
        report.windows += sum(len(it.windows) for it in items)
        if progress is not None:
            progress(min(i + batch_size, len(todo)), len(todo), time.perf_counter() - started)
    if untokened:
        assert embedder is not None
        report.tokened = _give_tokens(conn, embedder, untokened, batch_size)
    after = vec_store.counts(conn)
    report.remaining = after.pending
    report.stale = after.stale(model_id)
    report.seconds = time.perf_counter() - started
    return report


def _from_twin(twin: tuple[list[bytes], bytes | None]) -> tuple[np.ndarray, bytes | None]:
    """A twin's stored window vectors as the (windows, dim) array the model would give."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    windows, bits = twin
    return np.stack([np.frombuffer(w, dtype=np.float32) for w in windows]), bits


def _give_tokens(conn: apsw.Connection, embedder: Embedder,
                 chunks: list[vec_store.PendingChunk], batch_size: int) -> int:
    """Token vectors for chunks that have vectors without them; how many were stored."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.model.embedder import TOKEN_WINDOWS

    stored = 0
    for i in range(0, len(chunks), batch_size):
        items = []
        for chunk, text in _still_current(conn, chunks[i : i + batch_size]):
            tokens = embedder.embed_windows_and_tokens(text, TOKEN_WINDOWS)[1]
            items.append((chunk, vector_index.sign_bits(tokens).tobytes()))
        stored += vec_store.write_token_bits(conn, items, embedder.model_id)
    return stored


def _still_current(conn: apsw.Connection, batch: Sequence[vec_store.PendingChunk]
                   ) -> Iterator[tuple[vec_store.PendingChunk, str]]:
    """The batch's chunks still stored as they were listed, with their text (one query);
    a chunk deleted or replaced since is left out."""
    texts = vec_store.chunk_texts(conn, [p.rowid for p in batch])
    for p in batch:
        current = texts.get(p.rowid)
        if current is not None and current[0] == p.chunk_id:
            yield p, current[1]


def summary(report: EmbedReport) -> str:
    """One line for the terminal."""
    if report.todo == 0:
        text = "No chunks waiting for vectors."
    else:
        text = (
            f"Embedded {plural(report.embedded, 'chunk')} ({plural(report.windows, 'window')}) "
            f"in {report.seconds:.1f} s, {report.rate:.1f} chunks/s"
        )
        if report.reused:
            text += f"; {report.reused} copied from identical chunks (forked sessions)"
        if report.skipped:
            text += f"; {report.skipped} skipped (changed meanwhile)"
        text += "."
    if report.tokened:
        text += f" Gave {plural(report.tokened, 'chunk')} token vectors for search's rerank."
    if report.topics_joined:
        text += f" {report.topics_joined} joined a topic."
    if report.remaining:
        text += f" {plural(report.remaining, 'chunk')} still without vectors."
    if report.stale:
        text += (f" {plural(report.stale, 'chunk')} {'has' if report.stale == 1 else 'have'} "
                 "vectors from another model: run "
                 "`causantic reindex`.")
    if report.topics:
        t = report.topics
        text += (f" Topics rebuilt ({t['reason']}): {plural(int(str(t['topics'])), 'topic')} "
                 f"from {t['chunks']} chunks in {float(str(t['seconds'])):.1f} s.")
    if report.topics_note:
        text += f" Topics not rebuilt: {report.topics_note}."
    return text

"""Token rerank: the fused candidates read again, word piece by word piece.

Both lists of hybrid search see a chunk whole: BM25 counts its terms, the vector side compares
one mean vector per window with the query's. Neither asks whether each part of the question
is answered somewhere in the chunk. This step does, in the manner of late interaction
(ColBERT's MaxSim), with the MiniLM model we already run: every word piece of the query is
matched with its most similar token of the chunk, and the chunk scores the mean of those
best matches. The model was not trained for this, but its contextual token vectors carry
enough: decided on the sets `bench.answers` may tune on, it (with the 60-deep lists it
made worth drawing, `fusion.MIN_DEPTH`) found the evidence within 2,000 tokens for 0.06 more
of the blind tune questions and 0.02 more of LoCoMo's held-out ones, and within 4,000 tokens
for 0.04 more of the fitted dev tune half (README, "Token rerank", for the report halves).

* The chunk side is stored at embed time (`Embedder.embed_windows_and_tokens`): the first
  `TOKEN_WINDOWS` windows' token vectors, averaged in pairs, kept as sign bits (48 bytes a
  token, at most 12 KB a chunk). The query side comes from the same model run as the
  query vector (`vector.query_pieces`), without stop words and punctuation.
* Only the first `DEPTH` fused candidates are read. Their MaxSim scores are scaled to [0, 1]
  among them and added with `WEIGHT` to the fused score (itself in [0, 1]), so the step
  reorders close calls and leaves the fusion's clear winners alone.
* When any of those candidates has no token vectors yet (a store embedded before they
  existed, until the next `embed`), the fused order stands: a partial rerank would push the
  chunks without them down for no reason of theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
import numpy as np

from causantic.model import DIM, MODEL_ID
from causantic.retrieval.fusion import THIN_FACTOR
from causantic.retrieval.vector import query_pieces
from causantic.store import vectors as vec_store

#: Fused candidates read again (a 10-result search draws its lists this deep: `fusion.depth`).
DEPTH = 60
#: Weight of the scaled MaxSim score next to the fused score.
WEIGHT = 0.3
#: Query words that say nothing about what is asked.
STOP_WORDS = frozenset(
    "the a an of to in on and or for is was were be been it that this with what how why when"
    " did do does we i you our my at by from as about which there their after before".split()
)


def rerank(conn: apsw.Connection, query: str,
           fused: list[tuple[str, float, tuple[str, ...]]], thin: set[str]
           ) -> list[tuple[str, float, tuple[str, ...]]]:
    """``fused`` (id, score, sources; best first) with its first `DEPTH` rescored (module
    docstring); unchanged when one of them has no (undamaged) token bits. A ``thin`` chunk's
    gain is scaled as its fused score was (`fusion.THIN_FACTOR`): a bare `/exit` matches
    "exit" perfectly and says nothing."""
    head = fused[:DEPTH]
    if len(head) < 2:
        return fused
    bits = {cid: b for cid, b in
            vec_store.token_bits(conn, [cid for cid, _, _ in head], MODEL_ID).items()
            if len(b) % (DIM // 8) == 0}  # a damaged blob counts as missing
    if len(bits) < len(head):
        return fused
    scores = maxsim(query_matrix(*query_pieces(query)), [bits[cid] for cid, _, _ in head])
    low, high = float(scores.min()), float(scores.max())
    scaled = (scores - low) / (high - low) if high > low else np.zeros_like(scores)
    out = [(cid, score + WEIGHT * float(s) * (THIN_FACTOR if cid in thin else 1.0), sources)
           for (cid, score, sources), s in zip(head, scaled)] + fused[DEPTH:]
    out.sort(key=lambda r: -r[1])  # stable: ties keep the fused order
    return out


def query_matrix(pieces: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """The query's piece vectors that carry meaning: words that are not `STOP_WORDS` or
    punctuation, and word continuations ("##..."); all of them if none does."""
    keep = [i for i, p in enumerate(pieces)
            if p.startswith("##") or (p.isalnum() and p.lower() not in STOP_WORDS)]
    return vectors[keep] if keep else vectors


def maxsim(query: np.ndarray, chunk_bits: Sequence[bytes]) -> np.ndarray:
    """Per chunk, the mean over query rows of their best cosine with one of its tokens.

    ``chunk_bits``: each chunk's token sign bits (`vector_index.sign_bits`, rows of DIM / 8
    bytes). A sign vector of unit length stands for each token; a chunk without tokens
    scores 0.
    """
    counts = [len(b) // (DIM // 8) for b in chunk_bits]
    scores = np.zeros(len(chunk_bits), dtype=np.float32)
    if not len(query) or not sum(counts):
        return scores
    packed = np.frombuffer(b"".join(chunk_bits), dtype=np.uint8).reshape(-1, DIM // 8)
    query = np.asarray(query, dtype=np.float32)
    # q . s for signs s = 2b - 1 of bits b, computed on the bits: no pass over a 1/-1 copy
    ones = query @ np.unpackbits(packed, axis=1).astype(np.float32).T
    sims = (2.0 * ones - query.sum(axis=1, keepdims=True)) / np.sqrt(DIM)
    starts = np.cumsum([0] + counts[:-1])
    present = np.array(counts) > 0
    best = np.maximum.reduceat(sims, starts[present], axis=1)  # (query rows, chunks)
    scores[present] = best.mean(axis=0)
    return scores

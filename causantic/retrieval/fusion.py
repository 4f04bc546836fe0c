"""Combining ranked lists and keeping results diverse: RRF, near-duplicates, MMR.

Pure Python at import time (hooks use keyword search through this module); numpy is imported
only inside `mmr`, which the vector and hybrid modes call with vectors already in hand.

* Reciprocal Rank Fusion: a chunk at 1-based rank r of a list gains ``1 / (RRF_K + r)``;
  gains add up over lists (k = 60, as in the RRF paper and DESIGN.md 2.4). Ranks, not raw
  scores, so BM25 and cosine need no calibration. Each list contributes its best
  ``max(30, 3 × limit)`` chunks: with k = 60 a chunk ranked ~20th by both lists outscores
  either list's first hit, so long tails (the OR-ed keyword query matches nearly everything)
  would bury what only one side found.
* Near-duplicates (read time only; nothing is deleted): a candidate is dropped when a better
  ranked kept candidate has the same normalised text, or shares most of its word 5-gram
  shingles (Jaccard >= 0.8, or >= 0.9 of the candidate's own shingles: a summary repeating
  a chunk, the same tool output twice), or, with vectors, has cosine >= 0.97 with it.
* Thin chunks (``/exit`` + "Bye!", ``/model`` + its echo: fewer than 20 words besides the
  block labels) match short queries in both lists, since BM25 favours short texts and a
  short text embeds close to any short question; their fused score is halved, so they rank
  after substantive chunks but still answer when nothing else does.
* MMR: picks results one by one maximising ``λ·relevance − (1−λ)·max cos(candidate, picked)``
  with relevance = fused score / best fused score and λ = 0.7 (the original causantic's
  default). Candidates without a vector count as novel.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

RRF_K = 60
MMR_LAMBDA = 0.7
#: Each ranked list feeds RRF with this many candidates per wanted result (at least 30).
DEPTH_PER_RESULT = 3
MIN_DEPTH = 30
NEAR_DUP_COSINE = 0.97
SHINGLE_WORDS = 5
NEAR_DUP_JACCARD = 0.8
NEAR_DUP_CONTAINMENT = 0.9
#: Below this many shingles a text is too short to call a near-duplicate (exact only).
MIN_SHINGLES = 12
#: Shingles sampled before a full comparison (see `similar_text`).
SAMPLE_SHINGLES = 32
#: A chunk with fewer words than this besides its block labels is "thin" (a bare slash
#: command and its one-line echo, an interrupted one-liner); its fused score is scaled.
THIN_WORDS = 20
THIN_FACTOR = 0.5

T = TypeVar("T")


def depth(limit: int) -> int:
    """How many candidates each list contributes to the fusion for ``limit`` results."""
    return max(MIN_DEPTH, limit * DEPTH_PER_RESULT)


def rrf(lists: Sequence[tuple[str, Sequence[str]]], k: int = RRF_K) -> list[tuple[str, float, tuple[str, ...]]]:
    """Fuse ranked id lists: [(source, ids best first), ...] -> [(id, score, sources)], best first.

    ``sources`` lists the sources that ranked the id, in the order the lists were given. Ties
    keep the order of first appearance (earlier list, better rank).
    """
    scores: dict[str, float] = {}
    sources: dict[str, list[str]] = {}
    for source, ids in lists:
        seen: set[str] = set()
        for rank, cid in enumerate(ids, start=1):
            if cid in seen:
                continue
            seen.add(cid)
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
            sources.setdefault(cid, []).append(source)
    order = sorted(scores, key=lambda c: -scores[c])  # stable: first appearance breaks ties
    return [(cid, scores[cid], tuple(sources[cid])) for cid in order]


_WORD_RE = re.compile(r"\w+")
_LABEL_RE = re.compile(r"^\[(?:User|Assistant|Summary|Tool:[^\]\n]*|Result:[^\]\n]*|Command[^\]\n]*"
                       r"|interrupted by user|…continued)\]", re.M)


def content_words(text: str, stop: int = THIN_WORDS) -> int:
    """Words of a chunk besides its block labels, counted up to ``stop``."""
    n = 0
    for _ in _WORD_RE.finditer(_LABEL_RE.sub(" ", text[: stop * 40])):
        n += 1
        if n >= stop:
            break
    return n


def is_thin(text: str) -> bool:
    """Whether a chunk says too little to rank with substantive ones (module docstring)."""
    return content_words(text) < THIN_WORDS


def shingles(text: str, n: int = SHINGLE_WORDS) -> frozenset[int]:
    """Hashes of the text's word n-grams (lower case, punctuation ignored)."""
    return _shingles(_WORD_RE.findall(text.lower()), n)


def _shingles(words: list[str], n: int = SHINGLE_WORDS) -> frozenset[int]:
    # Hashes, not tuples: a tuple recomputes its hash on every set lookup.
    if len(words) < n:
        return frozenset([hash(tuple(words))]) if words else frozenset()
    return frozenset(map(hash, zip(*(words[i:] for i in range(n)))))


def fingerprint(text: str) -> str:
    """A hash of the words of a text, whatever its punctuation, case or spacing."""
    return _fingerprint(_WORD_RE.findall(text.lower()))


def _fingerprint(words: list[str]) -> str:
    return hashlib.sha1(" ".join(words).encode()).hexdigest()


def signature(text: str) -> tuple[str, frozenset[int]]:
    """(fingerprint, shingles) of a text, reading its words once."""
    words = _WORD_RE.findall(text.lower())
    return _fingerprint(words), _shingles(words)


def similar_text(candidate: frozenset[int], kept: frozenset[int]) -> bool:
    """Whether a candidate's shingles repeat a kept text's (see the module docstring).

    Not symmetric: a candidate mostly contained in a kept text repeats it, but a candidate
    that contains a kept text plus much more does not.
    """
    if len(candidate) < MIN_SHINGLES or len(kept) < MIN_SHINGLES:
        return False
    if len(kept) < NEAR_DUP_CONTAINMENT * len(candidate):
        return False  # too small to hold 90 % of the candidate, or 80 % of the union
    # Either test needs >= 80 % of the candidate's shingles in `kept`. Hash order is random,
    # so the first SAMPLE_SHINGLES are a random sample: fewer than half of them in `kept`
    # rules a pair out for a microsecond instead of a set intersection (a real repeat
    # fails this with probability < 1e-5).
    sample = list(islice(candidate, SAMPLE_SHINGLES))
    if 2 * sum(h in kept for h in sample) < len(sample):
        return False
    common = len(candidate & kept)
    return (common / (len(candidate) + len(kept) - common) >= NEAR_DUP_JACCARD
            or common / len(candidate) >= NEAR_DUP_CONTAINMENT)


def drop_near_duplicates(
    items: Sequence[T],
    text_of: Callable[[T], str],
    id_of: Callable[[T], str],
    vectors: Mapping[str, np.ndarray] | None = None,
    keep: int | None = None,
) -> list[T]:
    """Keep items in order, dropping each that duplicates a kept one (text or vector).

    Stops once ``keep`` items are kept (the rest are not examined).
    """
    kept: list[T] = []
    prints: set[str] = set()
    kept_shingles: list[frozenset[int]] = []
    kept_vecs: list[np.ndarray] = []
    for item in items:
        if keep is not None and len(kept) >= keep:
            break
        fp, sh = signature(text_of(item))
        if fp in prints:
            continue
        if any(similar_text(sh, other) for other in kept_shingles):
            continue
        vec = vectors.get(id_of(item)) if vectors else None
        if vec is not None and any(float(vec @ v) >= NEAR_DUP_COSINE for v in kept_vecs):
            continue
        kept.append(item)
        prints.add(fp)
        kept_shingles.append(sh)
        if vec is not None:
            kept_vecs.append(vec)
    return kept


def select(
    items: Sequence[T],
    limit: int,
    *,
    id_of: Callable[[T], str],
    score_of: Callable[[T], float],
    text_of: Callable[[T], str],
    vectors: Mapping[str, np.ndarray],
    lam: float = MMR_LAMBDA,
) -> list[T]:
    """MMR over ranked items that also skips near-duplicates of what it already picked.

    Duplicates are checked only against picked items, lazily, so a pool of 60 costs about
    ``limit`` shingle comparisons each instead of all pairs. Without vectors this is the
    fused order minus duplicates.
    """
    import numpy as np

    if not items:
        return []
    n = len(items)
    top = max(score_of(it) for it in items) or 1.0
    rel = np.array([score_of(it) / top for it in items], dtype=np.float64)
    dim = next((len(v) for v in vectors.values()), 1)
    mat = np.zeros((n, dim), dtype=np.float32)
    has = np.zeros(n, dtype=bool)
    for i, it in enumerate(items):
        v = vectors.get(id_of(it))
        if v is not None:
            mat[i], has[i] = v, True
    max_sim = np.zeros(n, dtype=np.float64)
    free = np.ones(n, dtype=bool)
    picked: list[T] = []
    prints: set[str] = set()
    picked_shingles: list[frozenset[int]] = []
    while len(picked) < limit and free.any():
        gain = lam * rel - (1.0 - lam) * max_sim
        gain[~free] = -np.inf
        i = int(np.argmax(gain))  # first maximum: ties keep the fused order
        free[i] = False
        if has[i] and max_sim[i] >= NEAR_DUP_COSINE:
            continue
        fp, sh = signature(text_of(items[i]))
        if fp in prints:
            continue
        if any(similar_text(sh, other) for other in picked_shingles):
            continue
        picked.append(items[i])
        prints.add(fp)
        picked_shingles.append(sh)
        if has[i]:
            sims = (mat @ mat[i]).astype(np.float64)
            sims[~has] = 0.0
            np.maximum(max_sim, sims, out=max_sim)
    return picked


def mmr(
    candidates: Sequence[tuple[str, float]],
    vectors: Mapping[str, np.ndarray],
    limit: int,
    lam: float = MMR_LAMBDA,
) -> list[str]:
    """Order up to ``limit`` candidate ids by maximal marginal relevance.

    Parameters
    ----------
    candidates : [(id, score)], best first
        Scores are any relevance where higher is better (here: fused RRF scores).
    vectors : id -> unit vector
        Missing ids are treated as novel (no similarity to anything picked).
    limit : int
        How many to pick.
    lam : float
        Weight of relevance against novelty (1 = plain ranking).
    """
    import numpy as np

    if not candidates:
        return []
    top = max(s for _, s in candidates) or 1.0
    rel = np.array([s / top for _, s in candidates], dtype=np.float64)
    n = len(candidates)
    dim = next((len(v) for v in vectors.values()), 0)
    mat = np.zeros((n, max(dim, 1)), dtype=np.float32)
    has = np.zeros(n, dtype=bool)
    for i, (cid, _) in enumerate(candidates):
        v = vectors.get(cid)
        if v is not None:
            mat[i] = v
            has[i] = True
    max_sim = np.zeros(n, dtype=np.float64)
    chosen: list[int] = []
    free = np.ones(n, dtype=bool)
    for _ in range(min(limit, n)):
        gain = lam * rel - (1.0 - lam) * max_sim
        gain[~free] = -np.inf
        pick = int(np.argmax(gain))  # first maximum: ties keep the fused order
        chosen.append(pick)
        free[pick] = False
        if has[pick]:
            sims = (mat @ mat[pick]).astype(np.float64)
            sims[~has] = 0.0
            np.maximum(max_sim, sims, out=max_sim)
    return [candidates[i][0] for i in chosen]

"""Combining the keyword and vector lists and keeping results diverse: fusion, near-duplicates, MMR.

Pure Python at import time (hooks use keyword search through this module); numpy is imported
only inside `mmr` and `select`, which the vector and hybrid modes call with vectors in hand.

* Score fusion (`fuse`): each chunk scores ``w × k + (1 − w) × v``, with k its BM25 over the
  keyword list's best BM25 and v its cosine min-max scaled over the vector list (0 when a
  list lacks it). Each list contributes its best ``max(30, 3 × limit)`` chunks. The keyword
  weight w depends on the query (`keyword_weight`): 0.8 when the best keyword hit holds the
  query's rare terms (its BM25 is at least the query's summed IDF: an identifier, a
  distinctive phrase), 0.4 when it matches only a few common words (BM25 under 0.6 × the
  summed IDF: a paraphrase), linear in between. Scores rather than ranks: Reciprocal Rank
  Fusion (k = 60, the earlier fusion) gives a keyword-only first hit 1/61 while a chunk ranked
  ~10th by both lists gets 2/70, so a chunk's own distinctive words found it 40/40 by keyword
  and 33/40 in hybrid; and a paraphrase's answer found only by vectors lost to chunks
  sharing its common words (bench/results/search_quality.md has the before/after numbers).
* Near-duplicates (read time only; nothing is deleted): a candidate is dropped when a better
  ranked kept candidate has the same normalised text, or shares most of its word 5-gram
  shingles (Jaccard >= 0.8, or >= 0.9 of the candidate's own shingles: a summary repeating
  a chunk, the same tool output twice), or, with vectors, has cosine >= 0.97 with it. Of two
  such repeats the older one stays, in the better one's place (given ``time_of``): a later
  session quoting an answer must not stand in for the session that gave it.
* Thin chunks (``/exit`` + "Bye!", ``/model`` + its echo: fewer than 20 words besides the
  block labels) match short queries in both lists, since BM25 favours short texts and a
  short text embeds close to any short question: they do not set either list's best score,
  and their fused score is multiplied by 0.25, so they rank after substantive chunks but
  still answer when nothing else does. A chat exchange (only the user's message and the
  assistant's reply, no tool, command or summary) is thin only under 8 words ("thanks" /
  "you're welcome"): "Still working on opening a dance studio" is a short answer, not an
  echo (LoCoMo held-out conversations: any evidence +5 questions, none lost).
* MMR: picks results one by one maximising ``λ·relevance − (1−λ)·max cos(candidate, picked)``
  with relevance = fused score / best fused score and λ = 0.7 (the original causantic's
  default). Candidates without a vector count as novel.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Container, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, TypeVar

from causantic.retrieval.compaction import messages_only

if TYPE_CHECKING:
    import numpy as np

MMR_LAMBDA = 0.7
#: Each ranked list feeds `fuse` with this many candidates per wanted result (at least 60:
#: the token rerank lifts good candidates from deep in a list; with 30, as before it, the
#: blind and LoCoMo tune sets found fewer answers).
DEPTH_PER_RESULT = 6
MIN_DEPTH = 60
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
THIN_FACTOR = 0.25
#: A chat exchange (`is_thin`) is thin only under this many words.
CHAT_THIN_WORDS = 8
#: `fuse`: the keyword list's weight (the vector list gets the rest) goes from LOW to HIGH as
#: the best BM25 over the query's summed IDF goes from CONFIDENCE_LOW to CONFIDENCE_HIGH.
KEYWORD_WEIGHT_LOW = 0.4
KEYWORD_WEIGHT_HIGH = 0.8
CONFIDENCE_LOW = 0.6
CONFIDENCE_HIGH = 1.0

T = TypeVar("T")


def depth(limit: int) -> int:
    """How many candidates each list contributes to the fusion for ``limit`` results."""
    return max(MIN_DEPTH, limit * DEPTH_PER_RESULT)


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
    words = content_words(text)
    return words < CHAT_THIN_WORDS or (words < THIN_WORDS and not messages_only(text))


def shingles(text: str, n: int = SHINGLE_WORDS) -> frozenset[int]:
    """Hashes of the text's word n-grams (lower case, punctuation ignored)."""
    return _shingles(_WORD_RE.findall(text.lower()), n)


def _shingles(words: list[str], n: int = SHINGLE_WORDS) -> frozenset[int]:
    # Hashes, not tuples: a tuple recomputes its hash on every set lookup.
    if len(words) < n:
        return frozenset([hash(tuple(words))]) if words else frozenset()
    return frozenset(map(hash, zip(*(words[i:] for i in range(n)))))


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
    time_of: Callable[[T], str] | None = None,
) -> list[T]:
    """Keep items in order, dropping each that duplicates a kept one (text or vector).

    With ``time_of``, a duplicate older than the kept item it repeats takes that item's
    place (the original outlives its quotes). Stops once ``keep`` items are kept (the rest
    are not examined).
    """
    kept: list[T] = []
    prints: dict[str, int] = {}
    kept_shingles: list[frozenset[int]] = []
    kept_vecs: list[np.ndarray | None] = []
    for item in items:
        if keep is not None and len(kept) >= keep:
            break
        fp, sh = signature(text_of(item))
        vec = vectors.get(id_of(item)) if vectors else None
        j = prints.get(fp)
        if j is None:
            j = next((k for k, other in enumerate(kept_shingles) if similar_text(sh, other)), None)
        if j is None and vec is not None:
            j = next((k for k, v in enumerate(kept_vecs)
                      if v is not None and float(vec @ v) >= NEAR_DUP_COSINE), None)
        if j is not None:
            if time_of is not None and time_of(item) < time_of(kept[j]):
                kept[j] = item
            continue
        prints[fp] = len(kept)
        kept.append(item)
        kept_shingles.append(sh)
        kept_vecs.append(vec)
    return kept


def select(
    items: Sequence[T],
    limit: int,
    *,
    id_of: Callable[[T], str],
    score_of: Callable[[T], float],
    text_of: Callable[[T], str] | None,
    vectors: Mapping[str, np.ndarray],
    lam: float = MMR_LAMBDA,
    time_of: Callable[[T], str] | None = None,
) -> list[T]:
    """MMR over ranked items that also skips near-duplicates of what it already picked.

    The one MMR: picks items one by one maximising ``lam·relevance − (1−lam)·max cos(item,
    picked)``, relevance being the score over the best score; items without a vector count
    as novel; ties keep the given order. Duplicates are checked only against picked items,
    lazily, so a pool of 60 costs about ``limit`` shingle comparisons each instead of all
    pairs. Without vectors this is the fused order minus duplicates. With ``time_of``, a
    skipped duplicate older than the item it repeats takes that item's place (see
    `drop_near_duplicates`). ``text_of`` None: plain MMR, no duplicate is skipped.
    """
    # deferred: heavy: numpy, only needed here
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
    picked_rows: list[int] = []
    prints: dict[str, int] = {}
    picked_shingles: list[frozenset[int]] = []
    while len(picked) < limit and free.any():
        gain = lam * rel - (1.0 - lam) * max_sim
        gain[~free] = -np.inf
        i = int(np.argmax(gain))  # first maximum: ties keep the fused order
        free[i] = False
        j: int | None = None
        fp, sh = "", frozenset[int]()
        if text_of is not None:  # None: plain MMR, every pick is kept
            if has[i] and max_sim[i] >= NEAR_DUP_COSINE:
                j = -1  # some picked item's vector; found below only when the time matters
            if j is None or time_of:
                fp, sh = signature(text_of(items[i]))
            if j is None:
                j = prints.get(fp)
            if j is None:
                j = next((k for k, other in enumerate(picked_shingles) if similar_text(sh, other)),
                         None)
        if j is not None:
            if time_of is not None:
                if j == -1:
                    sims = [float(mat[r] @ mat[i]) if has[r] else -1.0 for r in picked_rows]
                    j = int(np.argmax(sims))
                if time_of(items[i]) < time_of(picked[j]):
                    picked[j] = items[i]
            continue
        picked.append(items[i])
        picked_rows.append(i)
        prints[fp] = len(picked) - 1
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
    """Order up to ``limit`` candidate ids by maximal marginal relevance (`select`, keeping
    every pick).

    Parameters
    ----------
    candidates : [(id, score)], best first
        Scores are any relevance where higher is better (here: fused scores).
    vectors : id -> unit vector
        Missing ids are treated as novel (no similarity to anything picked).
    limit : int
        How many to pick.
    lam : float
        Weight of relevance against novelty (1 = plain ranking).
    """
    picked = select(candidates, limit, id_of=lambda c: c[0], score_of=lambda c: c[1],
                    text_of=None, vectors=vectors, lam=lam)
    return [cid for cid, _ in picked]


def keyword_weight(top_bm25: float, query_idf: float) -> float:
    """The keyword list's weight in `fuse`, from how well its best chunk matches the query.

    ``top_bm25 / query_idf`` (the best BM25 over the summed IDF of the query's terms) is about
    1 or more when one chunk holds every rare term of the query (an identifier, a distinctive
    phrase) and well under 1 when the matches are on a few common words (a paraphrase); the
    weight goes linearly from `KEYWORD_WEIGHT_LOW` to `KEYWORD_WEIGHT_HIGH` between
    `CONFIDENCE_LOW` and `CONFIDENCE_HIGH`.
    """
    if query_idf <= 0 or top_bm25 <= 0:
        return KEYWORD_WEIGHT_LOW
    t = (top_bm25 / query_idf - CONFIDENCE_LOW) / (CONFIDENCE_HIGH - CONFIDENCE_LOW)
    return KEYWORD_WEIGHT_LOW + min(1.0, max(0.0, t)) * (KEYWORD_WEIGHT_HIGH - KEYWORD_WEIGHT_LOW)


def fuse(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    thin: Container[str] = frozenset(),
    weight: float = KEYWORD_WEIGHT_LOW,
) -> list[tuple[str, float, tuple[str, ...]]]:
    """Hybrid ranking: [(id, BM25)] and [(id, cosine)], best first -> [(id, score, sources)].

    Score = ``weight × k + (1 − weight) × v``, where k is BM25 over the list's best BM25 and v
    the cosine min-max scaled over the vector list (0 when a list lacks the chunk); the best
    is taken over chunks not in ``thin``, scaled values are capped at 1, and a thin chunk's
    score is multiplied by `THIN_FACTOR`. Ties keep the order of first appearance (keyword
    list first). See the module docstring for why scores rather than ranks.
    """
    def scaled(pairs: Sequence[tuple[str, float]], floor: float | None) -> dict[str, float]:
        if not pairs:
            return {}
        top = max((s for c, s in pairs if c not in thin), default=max(s for _, s in pairs))
        low = min(s for _, s in pairs) if floor is None else floor
        span = top - low
        if span <= 0:
            return {c: 1.0 for c, _ in pairs}
        return {c: min(1.0, max(0.0, (s - low) / span)) for c, s in pairs}

    k, v = scaled(keyword, 0.0), scaled(vector, None)
    out = []
    for cid in dict.fromkeys([c for c, _ in keyword] + [c for c, _ in vector]):
        score = weight * k.get(cid, 0.0) + (1.0 - weight) * v.get(cid, 0.0)
        if cid in thin:
            score *= THIN_FACTOR
        out.append((cid, score, tuple(n for n, d in (("keyword", k), ("vector", v)) if cid in d)))
    out.sort(key=lambda r: -r[1])  # stable: ties keep the order of first appearance
    return out

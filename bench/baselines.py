"""Plain retrieval baselines, reusable by any benchmark: Okapi BM25 and MiniLM over documents.

Both take documents as ``(doc_id, text)`` pairs and answer ``search(query, k) -> [(doc_id,
score)]`` best first, so a harness can compare causantic's search with "what a simple system
would do" on the same corpus. `single_turn_docs` builds the corpus used by
`bench/search_quality.py`: one document per conversation turn (all chunks of one user prompt
and what followed it, in one stream), read back from a causantic database.

* `BM25Index`: Okapi BM25 (k1 = 1.2, b = 0.75), lower-cased word tokens, no stemming, no stop
  words: the textbook baseline, independent of our FTS5 setup.
* `DenseIndex`: one MiniLM vector per document from its first 256 word pieces (the model's
  window), cosine ranking: the "just embed it" baseline, without windows or fusion. Vectors
  can be cached in a `.npy` file keyed by the texts and the model id.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np

_WORD_RE = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return _WORD_RE.findall(text.lower())


class BM25Index:
    """Okapi BM25 over in-memory documents."""

    def __init__(self, docs: Sequence[tuple[str, str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids = [d[0] for d in docs]
        self.k1, self.b = k1, b
        self.tf: list[Counter[str]] = [Counter(tokens(text)) for _, text in docs]
        self.lengths = [sum(tf.values()) for tf in self.tf]
        self.avg = sum(self.lengths) / max(1, len(self.lengths))
        df: Counter[str] = Counter()
        for tf in self.tf:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.postings: dict[str, list[int]] = {}
        for i, tf in enumerate(self.tf):
            for t in tf:
                self.postings.setdefault(t, []).append(i)

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """The k best documents for the query, best first (only documents sharing a term)."""
        scores: dict[int, float] = {}
        for term in set(tokens(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i in self.postings[term]:
                f = self.tf[i][term]
                norm = f + self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                scores[i] = scores.get(i, 0.0) + idf * f * (self.k1 + 1) / norm
        best = sorted(scores.items(), key=lambda kv: -kv[1])[:k]
        return [(self.ids[i], s) for i, s in best]


class DenseIndex:
    """MiniLM vectors (first window of each document), searched by cosine."""

    def __init__(self, docs: Sequence[tuple[str, str]], cache_dir: Path | None = None,
                 model_dir: str | None = None) -> None:
        from causantic.model.embedder import get_embedder

        self.embedder = get_embedder(model_dir)
        self.ids = [d[0] for d in docs]
        key = hashlib.sha256(self.embedder.model_id.encode())
        for _, text in docs:
            key.update(hashlib.sha256(text.encode()).digest())
        cache = None if cache_dir is None else Path(cache_dir) / f"dense-{key.hexdigest()[:16]}.npy"
        if cache is not None and cache.exists():
            self.matrix = np.load(cache)
        else:
            self.matrix = np.stack([self.embedder.embed_query(text) for _, text in docs]) if docs \
                else np.zeros((0, self.embedder.dim), dtype=np.float32)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                np.save(cache, self.matrix)

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """The k documents nearest the query (cosine), best first."""
        if not len(self.ids):
            return []
        sims = self.matrix @ self.embedder.embed_query(query)
        order = np.argsort(-sims, kind="stable")[:k]
        return [(self.ids[i], float(sims[i])) for i in order]


@dataclass(frozen=True)
class TurnDoc:
    """One conversation turn read back from a causantic database."""

    doc_id: str  # "<session>/<agent>/<turn>"
    session_id: str
    text: str


def single_turn_docs(conn: apsw.Connection) -> list[TurnDoc]:
    """One document per (session, agent stream, turn): its chunks' text in order."""
    docs: dict[tuple[str, str, int], list[str]] = {}
    for session, agent, turn, text in conn.execute(
        "SELECT session_id, agent_id, turn, text FROM chunks ORDER BY session_id, agent_id,"
        " offset, part"
    ):
        docs.setdefault((session, agent, turn), []).append(text)
    return [TurnDoc(f"{s}/{a}/{t}", s, "\n\n".join(parts)) for (s, a, t), parts in docs.items()]

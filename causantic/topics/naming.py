"""Topic names from their most distinctive terms: class-based TF-IDF, no LLM.

Every topic is one class, and the chunks in no topic form one more "background" class that
is never named but makes terms common everywhere score low. A term's weight in class ``c``
is (as BERTopic's c-TF-IDF, with chunk counts instead of raw word counts)::

    w(t, c) = share(t, c) * log(1 + A / F(t))

where ``share(t, c)`` is the fraction of the class's chunks that contain ``t``, ``F(t)`` the
number of chunks of all classes that contain it, and ``A`` the average number of chunks per
class. Counting chunks rather than occurrences keeps one long log or file dump that repeats a
word a hundred times from naming its topic. A term must occur in at least two chunks of the
class (one if the class has a single chunk).

Tokens: words and identifiers (``SandboxQueueProcessor``, ``SQLITE_BUSY``, ``embed_windows``,
``napoli-matcha``, ``hooks.py``) of 3 to 40 characters. Dropped: our block labels
(``[User]``, ``[Assistant]``, ``[Tool:Bash]``, ``[Result:Read]``, ...), ``[REDACTED:...]``
markers, URLs, the directories of paths (the file name is kept), numbers, hashes and
other digit-heavy tokens, and English and chat stop words. Terms are compared in lower case
and shown in their most frequent spelling. A term that is a near-copy of a better one
(``test``/``tests``, ``embed``/``embedding``) is skipped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: Terms kept per topic, and how many of them make its name.
TERMS = 10
NAME_TERMS = 3
#: Characters of a chunk read for naming (chunks are about 3,500 characters at most).
MAX_CHARS = 8000
BACKGROUND = -1

_LABEL_RE = re.compile(
    r"^\[(?:User|Assistant|Summary|Tool:[^\]\n]*|Result:[^\]\n]*|Command[^\]\n]*"
    r"|interrupted by user|…continued|… [^\]\n]*)\]", re.M)
_NOISE_RE = re.compile(r"\[REDACTED:[^\]]*\]|\x1b\[[0-9;]*[A-Za-z]|\b[a-z][a-z0-9+.-]*://\S+")
#: The directories of a path (the lookbehind makes a failed try cost one step inside words).
_DIRS_RE = re.compile(r"(?<![\w.~/-])(?:[\w.~-]*/)+")
_TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-][A-Za-z0-9_]+)*")
_DIGITS_RE = re.compile(r"[0-9]")
_HEX_RE = re.compile(r"^[0-9a-f]{7,}$")

STOP_WORDS = frozenset("""
a about above after again against all also am an and any are aren as at be because been
before being below between both but by can cannot could couldn did didn do does doesn doing
don down during each few for from further had hadn has hasn have haven having he her here hers
herself him himself his how i if in into is isn it its itself just let me more most mustn my
myself no nor not now of off on once only or other ought our ours ourselves out over own same
shan she should shouldn so some such than that the their theirs them themselves then there
these they this those through to too under until up very was wasn we were weren what when
where which while who whom why will with won would wouldn you your yours yourself yourselves
ll ve re etc e.g i.e via per yet still already yes yeah ok okay sure thanks thank please
hi hello hey great good perfect excellent nice right well also just like really actually
maybe perhaps probably might must may shall one two three first second third next last new
old same different another many much lot lots thing things something anything everything
nothing way ways time times make makes made making get gets got getting go goes going gone
see seen look looks looking looked use uses used using need needs needed want wants wanted
let lets know think thought try trying tried done do does work works working worked
user assistant tool result results summary continued redacted interrupted command
now here there true false null none nil undefined return returns
""".split())


@dataclass(frozen=True)
class TopicName:
    """A topic's name (its best terms joined) and its ranked terms."""

    name: str
    terms: list[str]


def tokens(text: str) -> list[str]:
    """The distinct candidate terms of a chunk's text, in their first spelling (module doc)."""
    return list(_terms(text, {}).values())


def _terms(text: str, memo: dict[str, str]) -> dict[str, str]:
    """lower-case term -> its first spelling in the text, for each distinct candidate term.

    ``memo`` maps a token to its lower case ('' = rejected): vocabularies repeat across
    chunks, so each distinct token is judged once per naming run.
    """
    text = _NOISE_RE.sub(" ", _LABEL_RE.sub(" ", text[:MAX_CHARS]))
    if "/" in text:
        text = _DIRS_RE.sub(" ", text)
    out: dict[str, str] = {}
    # In text order, not a set's: set order follows the per-process string hash seed, and
    # the first spelling seen decides the shown one, so names changed between runs.
    for tok in dict.fromkeys(_TOKEN_RE.findall(text)):
        low = memo.get(tok)
        if low is None:
            low = memo[tok] = _judge(tok)
        if low:
            out.setdefault(low, tok)
    return out


def _judge(tok: str) -> str:
    """The token's lower case if it can be a term, else ''."""
    if not 3 <= len(tok) <= 40:
        return ""
    low = tok.lower()
    if low in STOP_WORDS or low.startswith("redacted"):
        return ""
    digits = len(_DIGITS_RE.findall(tok))
    if digits and (digits * 3 > len(tok) or _HEX_RE.match(low)):
        return ""
    return low


def name_topics(
    classes: Mapping[int, Iterable[str]], *, terms: int = TERMS, name_terms: int = NAME_TERMS
) -> dict[int, TopicName]:
    """Name every class but ``BACKGROUND`` (-1) by class-based TF-IDF over its chunks' texts.

    Parameters
    ----------
    classes : mapping of class id -> chunk texts
        Topics by id; the chunks in no topic under ``BACKGROUND`` (used only for weights).
    terms, name_terms : int
        Terms kept per topic, and how many of them form the name.

    Returns
    -------
    dict of class id -> TopicName
        Every class but the background. A class with no usable term is named "(untitled)".
    """
    doc_freq: dict[int, Counter[str]] = {}
    sizes: dict[int, int] = {}
    other_spellings: dict[str, Counter[str]] = {}  # term -> its spellings other than lower case
    memo: dict[str, str] = {}
    for label, texts in classes.items():
        df: Counter[str] = Counter()
        n = 0
        for text in texts:
            n += 1
            seen = _terms(text, memo)
            df.update(seen.keys())
            for low, tok in [lt for lt in seen.items() if lt[0] != lt[1]]:
                other_spellings.setdefault(low, Counter())[tok] += 1
        doc_freq[label], sizes[label] = df, n
    total: Counter[str] = Counter()
    for df in doc_freq.values():
        total.update(df)
    avg = sum(sizes.values()) / max(1, len(sizes))
    out: dict[int, TopicName] = {}
    for label, df in doc_freq.items():
        if label == BACKGROUND:
            continue
        n = max(1, sizes[label])
        floor = min(2, n)
        scored = sorted(
            ((count / n * math.log(1.0 + avg / total[t]), t) for t, count in df.items()
             if count >= floor),
            key=lambda st: (-st[0], st[1]),
        )
        picked = _distinct((t for _, t in scored), terms)
        shown = [_spelling(t, total[t], other_spellings.get(t)) for t in picked]
        out[label] = TopicName(", ".join(shown[:name_terms]) or "(untitled)", shown)
    return out


def _spelling(term: str, chunks: int, others: Counter[str] | None) -> str:
    """The most frequent spelling of a term (per chunk; ties: lower case first)."""
    if not others:
        return term
    best, count = min(others.items(), key=lambda tc: (-tc[1], tc[0]))  # ties: by spelling
    return best if count > chunks - sum(others.values()) else term


def _distinct(ranked: Iterable[str], k: int) -> list[str]:
    """The first ``k`` terms, skipping near-copies of a kept one (a shared prefix of at least
    4 characters covering all but at most 4 characters of the longer term)."""
    kept: list[str] = []
    for term in ranked:
        if len(kept) >= k:
            break
        if any(_near_copy(term, other) for other in kept):
            continue
        kept.append(term)
    return kept


def _near_copy(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and long.startswith(short) and len(long) - len(short) <= 4

"""The answer unit: what a matched chunk is shown as, so that answers, not chunks, fill the budget.

A turn of Claude Code work is often several chunks: the prompt, tool calls and their output,
then the assistant's explanation, the edit that fixed it, the outcome. Search often matches
the prompt or a tool's output while the answer sits elsewhere in the same turn. So a search
result is shown as an *answer unit* (`units`):

* the matched chunk, compacted (`compaction.compact`);
* the turn's other assistant messages (each cut like the match's, `head_cut` to
  `ASSISTANT_CHARS`), chosen by `extract` within `UNIT_CHARS`: its conclusion (the last
  message) first, then those saying most of the query (`weights`: its words in any form,
  each by its rarity among the turn's messages), then the ones nearest the match; shown in
  conversation order, gaps marked ``[…]``;
* the turn's prompt (its head) when the match is not the turn's first chunk;
* a lower-ranked match in a turn already shown is compacted without the extras; in search
  (`fill`) it joins the unit of that turn (without the paragraphs the unit already shows),
  so each result is a distinct answer;
* when the query asks what followed something ("after X, what came next", "once X was
  done", `follows`), search's first unit is followed by the next turn of its stream (its
  prompt and its conclusion, `FOLLOW_CHARS`): the match is the situation, the answer is
  what came after it; a turn that is no work (a compaction summary, a bare "/compact" the
  assistant said nothing to) is passed over for the one after it;
* when it asks how something turned out ("what came out of the session where X", "the
  result of X", `asks_outcome`), the session the best matches point to most (`session_first`:
  reciprocal rank summed per session over the first `VOTE_DEPTH`) leads the answer with its
  matches, and search's first unit is followed by its stream's last assistant message
  (`OUTCOME_CHARS`): the matches find the session, the end tells how it ended;
* a conversational match (a turn that is only a message and its reply, no tools, in a stretch
  of such turns: a discussion, a chat) is shown between the message before it and the reply
  after it, for the best `CONTEXT_UNITS` matches (`conversational`): a turn boundary
  splits an exchange arbitrarily there, and a question asked at the end of one turn is
  answered at the start of the next; in search (`fill`) a chat unit whose turn is right
  before or after a chat result's turn of the same stream joins that result (the messages it
  does not already show, in conversation order), so one exchange is one passage under one
  header instead of two results repeating the message between them.

Matches are compacted by `causantic.retrieval.compaction` (tool output cut hard, what people
wrote kept). The stored text stays whole; this is rendering only. Pure Python: hooks render
through it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import apsw

from causantic.retrieval import freshness
from causantic.retrieval.compaction import (
    ASSISTANT_CHARS,
    blocks_of,
    compact,
    head_cut,
    messages_only,
    terms_of,
)
from causantic.retrieval.render import Hit
from causantic.store import chunks as chunk_store
from causantic.tokens import clip

#: Characters of a turn's prompt shown with a unit whose match is not the turn's first chunk.
PROMPT_CHARS = 300
#: An answer unit's characters at most (about 750 tokens): five fit a 4,000-token answer.
UNIT_CHARS = 2600
#: Characters of a stream's last message shown after the first unit of a "what came out of"
#: query (its conclusion, not the whole last turn: the budget still holds other answers).
OUTCOME_CHARS = 700
#: A "what came out of" question is about one session: the one its best this many candidates
#: point to most (`session_first`) leads the answer.
VOTE_DEPTH = 10
#: A later match of a turn already shown adds at most this much to that turn's unit ...
FOLD_CHARS = 1200
#: ... and a unit grows so by later matches to at most this many characters.
FOLDED_UNIT_CHARS = 2 * UNIT_CHARS
#: Characters of the next turn shown after the first unit of a "what came next" query.
FOLLOW_CHARS = 1300
#: The next turn shown is the first of this many that is work (`_works`): not a compaction
#: summary, not a bare command ("/compact", "! git pull") the assistant said nothing to.
NEXT_TURNS = 3
#: A question about what followed something: "after X, what did we do next", "once X was
#: done", "right after", "what happened after". Not "what came out of" (a session's outcome).
_NEXT_RE = re.compile(r"^\s*(after|once)\b|\bright after\b|\b(came|happened|do|did|ask|asked|was)"
                      r" next\b|\bwhat (came|happened) after\b|: what happened after\b", re.I)
#: A question about how something turned out: "what came out of the session where X", "the
#: result / outcome of X", "how did X turn out". Not "where did X end up" (a place, not an outcome).
_OUTCOME_RE = re.compile(r"\b(came|come|comes) out of\b|\b(result|outcome|upshot)s? of\b|"
                         r"\bhow did\b.{0,80}\b(turn out|work out|end)\b", re.I)
#: A compaction summary matching a "what came next" question stands for this many turns
#: before it (`behind_summaries`; predict's seeds: `chains`) ...
SUMMARY_TURNS = 2
#: ... unless the question is about the compaction itself ("right after it got compacted").
_COMPACTION_RE = re.compile(r"\bcompact", re.I)
#: How many of an answer's best units show the messages around a conversational match (at
#: most `_FILL_BATCH`: only the first batch's units get them). Five rather than two since
#: neighbouring chat turns are merged into one result (`fill`): the neighbours' messages no
#: longer cost a header and a repeated message each (LoCoMo held-out conversations, all
#: evidence 0.754 -> 0.765 with the merge; two: 0.744 -> 0.754).
CONTEXT_UNITS = 5
_BATCH = 200
#: Hits whose units are built at a time while filling an answer.
_FILL_BATCH = 6
#: The titles of what a first unit may show after its own turn: its stream's end, its next turn.
_ENDED = "how it ended"
_NEXT_TURN = "the next turn"
#: Where what `units` shows after a unit's own turn starts.
_AFTER_RE = re.compile(rf"\n\n\[… (?:{_ENDED}|{_NEXT_TURN})\]\n\n")


def _after(title: str) -> str:
    """The line that opens what a unit shows after its own turn (`_ENDED`, `_NEXT_TURN`)."""
    return f"\n\n[… {title}]\n\n"


#: What stands between the parts of a unit that are not next to each other.
_GAP = "\n\n[…]\n\n"
#: What a result adds to its unit's text in the rendered answer (header, separator), about.
_RESULT_CHARS = 80


# -- one unit per turn -----------------------------------------------------------------------


def positions(conn: apsw.Connection, chunk_ids: Sequence[str]
              ) -> dict[str, tuple[str, str, int, int, int]]:
    """chunk id -> (session, agent, turn, offset, part)."""
    return dict(chunk_store.positions(conn, dict.fromkeys(chunk_ids)))


def turns(conn: apsw.Connection, keys: Sequence[tuple[str, str, int]]
          ) -> dict[tuple[str, str, int], list[tuple[str, str]]]:
    """(session, agent, turn) -> [(chunk id, text)] of those turns, in stream order."""
    out: dict[tuple[str, str, int], list[tuple[str, str]]] = {}
    keys = list(dict.fromkeys(keys))
    for i in range(0, len(keys), _BATCH):
        for sid, agent, turn, cid, text in chunk_store.turn_texts(conn, keys[i: i + _BATCH]):
            out.setdefault((sid, agent, turn), []).append((cid, text))
    return out


def extract(turn: Sequence[tuple[str, str]], anchor: str, terms: Sequence[str],
            limit: int = UNIT_CHARS, before: bool = True) -> str:
    """The answer unit of `anchor` (a chunk id) within its turn's chunks (module docstring).

    ``before=False`` takes only what followed the anchor (and no prompt): for a recall,
    whose chain already tells what led to it.
    """
    ids = [cid for cid, _ in turn]
    if anchor not in ids:
        return ""
    at = ids.index(anchor)
    head = compact(turn[at][1], terms)
    # Candidates: (chunk position, block index, text) for assistant blocks of other chunks.
    cands: list[tuple[int, int, str]] = []
    for pos, (_, text) in enumerate(turn):
        if pos == at or (pos < at and not before):
            continue
        for j, block in enumerate(blocks_of(text)):
            if block.startswith("[Assistant"):
                cands.append((pos, j, block))
    prompt = prompt_of(turn) if at > 0 and before else ""
    room = limit - len(head) - len(prompt)
    chosen: dict[tuple[int, int], str] = {}
    if cands and room > 200:
        # What each message says of the query (over its whole text), then each cut as the
        # match is: a long conclusion taken whole left no room for the message that answered.
        said = dict(zip([(pos, j) for pos, j, _ in cands],
                        weights([block for _, _, block in cands], terms), strict=True))
        cands = [(pos, j, head_cut(block, ASSISTANT_CHARS, terms)) for pos, j, block in cands]
        last = cands[-1]

        def rank(c: tuple[int, int, str]) -> tuple[int, float, int]:
            return (0 if c is last else 1, -said[c[0], c[1]], abs(c[0] - at))

        for c in sorted(cands, key=rank):
            cost = len(c[2]) + 8
            if cost <= room:
                chosen[(c[0], c[1])] = c[2]
                room -= cost
            elif c is last and room > 300:
                cut = head_cut(c[2], room - 60, terms)
                chosen[(c[0], c[1])] = cut
                room -= len(cut) + 8
    parts = ([prompt] if prompt else []) + [chosen[k] for k in sorted(chosen) if k[0] < at]
    parts += [head] + [chosen[k] for k in sorted(chosen) if k[0] > at]
    return _GAP.join(parts)


#: Endings taken off a query word before it is looked for in a turn's messages (`stem`), the
#: first that leaves at least `_STEM_MIN` characters.
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s", "er")
_STEM_MIN = 4


def stem(word: str) -> str:
    """A query word without its ending ("highlighting" -> "highlight", "snapshots" ->
    "snapshot"), looked for as the start of a message's words: the answer says it in
    another form than the question."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _STEM_MIN:
            return word[: -len(suffix)]
    return word


def weights(messages: Sequence[str], terms: Sequence[str]) -> list[float]:
    """How much each of a turn's messages says of the query: the sum, over the query words
    (`stem`) some word of the message starts with, of the word's rarity among these
    messages (log((n + 1) / (df + 0.5)), n messages, df holding it). A word every narration
    message of the turn repeats ("test" in a test-writing turn) counts little; the one
    message naming what was asked counts most. Pure Python: a substring test per word and
    message, a word-start match only where it is found (about 0.4 ms a 2k search answer)."""
    starts = {s: re.compile(r"\b" + re.escape(s)) for s in dict.fromkeys(map(stem, terms))}
    said = [m.lower() for m in messages]
    found = [{s for s, at in starts.items() if s in m and at.search(m)} for m in said]
    n = len(messages)
    rarity = {s: math.log((n + 1) / (sum(s in f for f in found) + 0.5)) for s in starts}
    return [round(sum(rarity[s] for s in f), 2) for f in found]


def prompt_of(turn: Sequence[tuple[str, str]], limit: int = PROMPT_CHARS) -> str:
    """A turn's prompt (its first chunk's user message), cut to `limit` characters; "" when
    the turn does not start with one (a sub-agent's or a resumed stream's first turn)."""
    first = blocks_of(turn[0][1])[0] if turn else ""
    return head_cut(first, limit, ()) if first.startswith("[User") else ""


def last_said(texts: Sequence[str]) -> str | None:
    """The last assistant message among chunk texts (in stream order), or None."""
    said = [b for text in texts for b in blocks_of(text) if b.startswith("[Assistant")]
    return said[-1] if said else None


def with_conclusion(shown: str, last_chunk: str, terms: Sequence[str],
                    limit: int = ASSISTANT_CHARS) -> str:
    """A compacted match followed by its turn's last assistant message (how it ended)."""
    said = last_said([last_chunk])
    if said is None:
        return shown
    return f"{shown}\n\n[… how this turn ended]\n\n{head_cut(said, limit, terms)}"


def conversational(turn: Sequence[tuple[str, str]]) -> bool:
    """Whether a turn (its chunks) is one stored chunk of only messages: the user's and the
    assistant's text, no tool call, output, command or summary."""
    return len(turn) == 1 and messages_only(turn[0][1])


def in_context(text: str, before: Sequence[tuple[str, str]] | None,
               after: Sequence[tuple[str, str]] | None, terms: Sequence[str]) -> str:
    """A conversational unit between the message before its turn and the reply after it,
    each taken only from a conversational neighbour (module docstring)."""
    if before and conversational(before):
        text = f"{compact(blocks_of(before[0][1])[-1], terms)}\n\n{text}"
    if after and conversational(after):
        text = f"{text}\n\n{compact(blocks_of(after[0][1])[0], terms)}"
    return text


def follows(query: str) -> bool:
    """Whether the query asks what followed something ("after X, what came next")."""
    return bool(_NEXT_RE.search(query))


def asks_past_summaries(query: str) -> bool:
    """Whether a compaction summary matching the query stands for the turns it retells: a
    "what came next" question (`follows`) not about the compaction itself."""
    return follows(query) and not _COMPACTION_RE.search(query)


def behind_summaries(conn: apsw.Connection, hits: Sequence[Hit], query: str) -> list[Hit]:
    """Ranked candidates with each compaction summary replaced by the turn it retells.

    A summary (written when a session was compacted) retells the turns before it, so a
    "what came next" question often matches the retelling first; the situation is where it
    happened, and what came next is the turn after that, not the one after the summary. For
    such a question (`asks_past_summaries`), a summary takes the place of the best-ranked
    candidate of the `SUMMARY_TURNS` turns it follows in its stream (one not ranked above
    it), which moves up to the summary's rank and score; a summary with no such candidate
    stays (it may be all that is stored of those turns).
    """
    if not any(h.kind == "summary" for h in hits) or not asks_past_summaries(query):
        return list(hits)
    where = positions(conn, [h.chunk_id for h in hits])
    out: list[Hit] = []
    used: set[str] = set()
    for h in hits:
        if h.chunk_id in used:
            continue
        told = _retold(h, hits, where, used) if h.kind == "summary" else None
        if told is not None:
            h = told.replace(score=h.score, sources=h.sources)
        used.add(h.chunk_id)
        out.append(h)
    return out


def _retold(summary: Hit, hits: Sequence[Hit], where: dict[str, tuple[str, str, int, int, int]],
            used: set[str]) -> Hit | None:
    """The best-ranked candidate (not yet used) of the turns ``summary`` follows."""
    at = where.get(summary.chunk_id)
    if at is None:
        return None
    for h in hits:
        pos = where.get(h.chunk_id)
        if (h.kind != "summary" and h.chunk_id not in used and pos is not None
                and pos[:2] == at[:2] and at[2] - SUMMARY_TURNS <= pos[2] < at[2]):
            return h
    return None


def asks_outcome(query: str) -> bool:
    """Whether the query asks how something turned out ("what came out of the session where X")."""
    return not follows(query) and bool(_OUTCOME_RE.search(query))


def fill(conn: apsw.Connection, hits: Sequence[Hit], query: str, room: int) -> list[Hit]:
    """Search's results: the hits as answer units, one result per turn, in rank order.

    A later match inside a turn that already heads a result is part of that answer: its
    compacted text joins that unit (when the unit does not already hold it) instead of taking
    a result of its own, so the first results are distinct answers. Units are built in
    batches, in rank order, until `room` characters are filled (each costs a turn query and
    compaction: only what can be shown is built). A "what came next" or "what came out of"
    query's first unit also shows the next or last turn of its stream, and the best units of
    a conversation the messages around them (`units`); a "what came out of" query's answer
    starts with the matches of the session it is most likely about (`session_first`).
    """
    if asks_outcome(query):
        hits = session_first(hits)
    out: list[Hit] = []
    seen: set[tuple[str, str, int]] = set()
    heads: dict[tuple[str, str, int], int] = {}  # turn -> the index of the result it heads
    used = 0
    for i in range(0, len(hits), _FILL_BATCH):
        part = hits[i: i + _FILL_BATCH]
        where = positions(conn, [h.chunk_id for h in part])
        for h, text in units(conn, part, query, seen=seen, follow=True, where=where,
                             context=CONTEXT_UNITS):
            key = where[h.chunk_id][:3] if h.chunk_id in where else None
            j = heads.get(key) if key is not None else None
            if j is not None:
                grown = fold_in(out[j].text, text)
                if grown != out[j].text:
                    used += len(grown) - len(out[j].text)
                    out[j] = out[j].replace(text=grown, also=(*out[j].also, h.chunk_id))
                continue
            j = _beside(heads, key, out, text) if key is not None else None
            if key is not None and j is not None:
                later = heads.get((key[0], key[1], key[2] - 1)) == j
                new = unseen(text, out[j].text)
                if new:
                    grown = f"{out[j].text}\n\n{new}" if later else f"{new}\n\n{out[j].text}"
                    used += len(grown) - len(out[j].text)
                    out[j] = out[j].replace(text=grown, also=(*out[j].also, h.chunk_id),
                                            start_time=min(out[j].start_time, h.start_time))
                heads[key] = j
                continue
            if key is not None:
                heads[key] = len(out)
            out.append(h.replace(text=text))
            used += len(text) + _RESULT_CHARS
        if used > room:
            break
    return out


def _beside(heads: dict[tuple[str, str, int], int], key: tuple[str, str, int],
            out: Sequence[Hit], text: str) -> int | None:
    """The result a chat unit joins: one showing a turn right before or after its own in
    the same stream, when both are chat (messages only); None when there is none."""
    if not _chat(text):
        return None
    for turn in (key[2] - 1, key[2] + 1):
        j = heads.get((key[0], key[1], turn))
        if j is not None and _chat(out[j].text):
            return j
    return None


def _chat(unit: str) -> bool:
    """Whether a unit is only messages (each paragraph a `[User]` or `[Assistant]` block)."""
    return all(p.startswith(("[User]", "[Assistant]")) for p in unit.split("\n\n"))


def session_first(hits: Sequence[Hit], depth: int = VOTE_DEPTH) -> list[Hit]:
    """The hits with those of the session the first ``depth`` point to most moved first.

    A session scores the reciprocal rank (1/1, 1/2, ...) of each of its hits among the first
    ``depth``; the best session's hits come first, then the others, each in rank order. A
    question about what came out of a session is about one session, and its best single
    match is often in another one (a plan or a review that named the work: a third of the
    dev set's such questions), while the session asked about matches several times.
    """
    weight: dict[str, float] = {}
    for rank, h in enumerate(hits[:depth], 1):
        weight[h.session_id] = weight.get(h.session_id, 0.0) + 1.0 / rank
    if not weight:
        return list(hits)
    best = max(weight, key=lambda sid: weight[sid])  # ties: the better-ranked session
    return ([h for h in hits if h.session_id == best]
            + [h for h in hits if h.session_id != best])


def cut_ending(unit: str) -> str:
    """A unit without the stream ending `units` showed after it (``[… how it ended]`` and
    what follows), for a caller that shows the ending itself; other units are unchanged."""
    return unit.split(_after(_ENDED), 1)[0]


def shows_next_turn(unit: str) -> bool:
    """Whether `units` showed the next turn of its stream after this unit's own turn."""
    return _after(_NEXT_TURN) in unit


def with_next(unit: str, turn: str) -> str:
    """A unit followed by (what it shows of) the next turn of its stream (`shows_next_turn`)."""
    return unit + _after(_NEXT_TURN) + turn


def _joined(unit: str, extra: str) -> str:
    """`extra` added to its turn's part of `unit` (before a next turn or ending shown after it)."""
    at = _AFTER_RE.search(unit)
    if at is None:
        return unit + _GAP + extra
    return unit[: at.start()] + _GAP + extra + unit[at.start():]


def fold_in(unit: str, match: str) -> str:
    """``unit`` with what a later match of its turn adds (``match`` compacted: `_fold`) joined
    to its turn's part; ``unit`` itself when the match adds nothing. Search's one result per
    turn (`fill`), and predict's seed shown with the rest of its turn (`chains`)."""
    extra = _fold(match, unit)
    return _joined(unit, extra) if extra else unit


def _fold(match: str, unit: str) -> str:
    """What a later match of a turn adds to that turn's unit: its compacted text without the
    paragraphs the unit already shows (the unit's extract often took this chunk's assistant
    messages already), cut to `FOLD_CHARS`; nothing when nothing new is left or the unit has
    reached `FOLDED_UNIT_CHARS`."""
    room = min(FOLD_CHARS, FOLDED_UNIT_CHARS - len(unit) - len(_GAP))
    new = unseen(match, unit)
    if not new or room < 100:
        return ""
    return clip(new, room)


#: A paragraph this long that a unit already shows is not shown again by a folded match.
_REPEAT_CHARS = 40


def unseen(match: str, unit: str) -> str:
    """``match`` without its paragraphs (of `_REPEAT_CHARS` or more) that ``unit`` already
    holds, each run of them marked by one gap; "" when none of its own is left. A paragraph
    counts as held when most of it is lines the unit shows (the two may cut a long message
    at different lines)."""
    out: list[str] = []
    left_out = False
    for para in match.split("\n\n"):
        # the match's own gap marks join the run they border: one mark, never a stack of them
        if para == "[…]" or len(para) >= _REPEAT_CHARS and _held(para, unit):
            left_out = True
            continue
        if left_out and out:
            out.append("[…]")
        left_out = False
        out.append(para)
    if not any(len(p) >= _REPEAT_CHARS for p in out):
        return ""
    return "\n\n".join(out)


def _held(para: str, unit: str) -> bool:
    """Whether ``unit`` shows ``para``: whole, or at least half of it in lines it holds."""
    if para in unit:
        return True
    shown = sum(len(line) for line in para.split("\n")
                if len(line) >= _REPEAT_CHARS and line in unit)
    return shown * 2 >= len(para)


def units(conn: apsw.Connection, hits: Sequence[Hit], query: str,
          seen: set[tuple[str, str, int]] | None = None,
          follow: bool = False,
          where: dict[str, tuple[str, str, int, int, int]] | None = None,
          context: int = 0,
          ) -> list[tuple[Hit, str]]:
    """Each hit with its answer unit's text (module docstring), in rank order.

    ``seen`` holds the turns already shown in full (updated): pass the same set when
    building the units of one answer in several calls; ``where``: the hits' `positions` when
    the caller has them. ``follow``: the answer's first unit
    (``seen`` empty) is followed by the next turn of its stream when the query asks what came
    next (`follows`), or by its stream's last turn when it asks how something turned out
    (`asks_outcome`). ``context``: the answer's first ``context`` units (``seen`` empty),
    when conversational, are shown between the messages around them (`in_context`).
    """
    where = positions(conn, [h.chunk_id for h in hits]) if where is None else where
    keys = [where[h.chunk_id][:3] for h in hits if h.chunk_id in where]
    seen = set() if seen is None else seen
    first = keys[0] if follow and not seen and keys else None
    then, title = _then(conn, first, query) if first else (None, "")
    around = list(dict.fromkeys(keys))[:context] if not seen else []
    # Only a match that is itself a chat exchange can be a conversational turn: the turns
    # around the others are not read.
    chat = {where[h.chunk_id][:3] for h in hits
            if h.chunk_id in where and messages_only(h.text)}
    neighbours = [(s, a, t + d) for s, a, t in around if (s, a, t) in chat for d in (-1, 1)]
    # The turn shown after the first unit: for "what came next", the first of the next
    # `NEXT_TURNS` that is work (`_works`).
    tries = NEXT_TURNS if title == _NEXT_TURN else 1
    later = [(then[0], then[1], then[2] + d) for d in range(tries)] if then else []
    by_turn = turns(conn, keys + neighbours + later)
    then = next((k for k in later if k in by_turn and _works(by_turn[k])), then)
    terms = terms_of(query)
    out = []
    for h in hits:
        pos = where.get(h.chunk_id)
        if pos is None:
            out.append((h, compact(h.text, terms)))
            continue
        key = pos[:3]
        if key in seen:  # its turn's answer is already shown: this match adds only itself
            out.append((h, compact(h.text, terms)))
            continue
        seen.add(key)
        turn = by_turn.get(key, [])
        text = extract(turn, h.chunk_id, terms, UNIT_CHARS) or compact(h.text, terms)
        shows_then = then is not None and key == first
        if key in around and conversational(turn):
            text = in_context(text, by_turn.get((key[0], key[1], key[2] - 1)),
                              None if shows_then else by_turn.get((key[0], key[1], key[2] + 1)),
                              terms)
        following = by_turn.get(then) if then is not None and shows_then else None
        if then is not None and following:
            after = (ending(following, terms) if title == _ENDED
                     else extract(following, following[0][0], terms, FOLLOW_CHARS))
            text += _after(title) + after
            seen.add(then)
        out.append((freshness.with_turn(h, (t for _, t in turn)), text))
    return out


def _works(turn: Sequence[tuple[str, str]]) -> bool:
    """Whether a turn is work that followed its stream's previous turn: the assistant said
    something in it, and it is not a compaction summary (which retells the turns before it)."""
    first = turn[0][1] if turn else ""
    return (not first.startswith(("[Summary", "[…continued"))
            and last_said([text for _, text in turn]) is not None)


def ending(turn: Sequence[tuple[str, str]], terms: Sequence[str],
           limit: int = OUTCOME_CHARS) -> str:
    """How a stream ended: its last turn's last assistant message, cut to `limit` characters
    (the whole last turn, compacted, when it has no assistant message)."""
    said = last_said([text for _, text in turn])
    if said is not None:
        return head_cut(said, limit, terms)
    return extract(turn, turn[-1][0], terms, limit)


def _then(conn: apsw.Connection, first: tuple[str, str, int], query: str
          ) -> tuple[tuple[str, str, int] | None, str]:
    """The turn shown after the first unit, and its title: the next turn for "what came
    next", the stream's last turn for "what came out of" (when that is a later turn)."""
    session, agent, turn = first
    if follows(query):
        return (session, agent, turn + 1), _NEXT_TURN
    if asks_outcome(query):
        last = chunk_store.stream_end(conn, session, first=False, agent_id=agent)
        end = positions(conn, [last]).get(last) if last else None
        if end is not None and end[2] > turn:
            return (session, agent, end[2]), _ENDED
    return None, ""

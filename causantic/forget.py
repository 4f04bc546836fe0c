"""`forget`: delete memory by project, session, time range or query, and keep it forgotten.

Selection (all given criteria must hold):

- `project`, `session_id`: exact names (`list-projects`, `list-sessions`);
- `after` / `before`: a chunk is in the range when its start time is at or after `after` and
  before `before` (ISO dates or times; no zone = UTC);
- `query` + `threshold`: chunks similar to the query. With stored vectors of the current
  model, similarity is the cosine between the query's embedding and the chunk's best window
  (sqlite-vec KNN over the nearest `MAX_K` windows); without them it is the IDF-weighted share
  of the query's terms the chunk contains (`retrieval.prompt.term_coverage`). The preview
  says which one was used.

A call previews by default (`dry_run=True`) and deletes only when told. Deleting removes the
chunks' text, their FTS entries (trigger), edges (foreign-key cascade), vectors
(`store.vectors.drop_chunk_vectors`, and the meta trigger), and any other row that references
a chunk by foreign key with `ON DELETE CASCADE` (topic memberships), and the automatic
memories drawn from those chunks (`causantic.memory.observe.forget_auto_for_chunks`, which
tombstones them). Tombstones in `forgotten` keep a re-ingest from bringing the data back:
scope `session` when whole sessions are forgotten (criteria are only project and/or session),
otherwise scope `chunk` (content-hash ids). Deleted text leaves the file itself: SQLite and
FTS5 secure-delete, then `VACUUM` and a WAL checkpoint (`store.redaction.for_good`); what stays is the
tombstones and the list of transcript files read. Limitation: a chunk-scope tombstone names one version of a chunk; if the chunk belonged
to a turn that was still growing, a later re-read renders a different chunk (new id) that is
not covered.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from causantic.errors import UsageError
from causantic.memory.forgetting import forget_matching, matching
from causantic.memory.observe import forget_auto_for_chunks
from causantic.model import MODEL_ID
from causantic.retrieval.projects import resolve_project
from causantic.retrieval.prompt import term_coverage
from causantic.store import chunks as chunk_store
from causantic.store import files as file_table
from causantic.store import forgotten as tombstones
from causantic.store import redaction
from causantic.store import sessions as session_store
from causantic.store import topics as topic_store
from causantic.store.db import Store
from causantic.timestamps import iso_utc, parse_when
from causantic.tokens import clip

DEFAULT_THRESHOLD = 0.6
PREVIEW = 5


@dataclass(frozen=True)
class Match:
    """One chunk selected for forgetting."""

    rowid: int
    chunk_id: str
    session_id: str
    project: str
    start_time: str
    text: str
    score: float | None = None  # similarity to the query, when there was one


@dataclass(frozen=True)
class ForgetResult:
    """What was (or would be) forgotten, and the text the CLI and MCP tool report."""

    dry_run: bool
    chunks: int
    sessions: list[str]
    scope: str  # "session" | "chunk"
    similarity: str | None  # "vector" | "keyword" | None (no query)
    text: str
    matches: list[Match] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, object]:
        return {
            "dry_run": self.dry_run,
            "chunks": self.chunks,
            "sessions": self.sessions,
            "scope": self.scope,
            "similarity": self.similarity,
            "chunk_ids": [m.chunk_id for m in self.matches],
            "text": self.text,
        }


def forget(
    store: Store,
    *,
    project: str | None = None,
    session_id: str | None = None,
    after: str | None = None,
    before: str | None = None,
    query: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    dry_run: bool = True,
    model_dir: Path | None = None,
) -> ForgetResult:
    """Preview (default) or delete the chunks matching every given criterion.

    Raises
    ------
    UsageError : no criterion, an empty query, a bad time or threshold, an unknown project.
    """
    after_ts, before_ts = _time(after, "after"), _time(before, "before")
    if query is not None and not query.strip():
        raise UsageError("forget: the query is empty; give words to match or leave it out")
    if not 0.0 < threshold <= 1.0:
        raise UsageError(f"forget: threshold must be in (0, 1], not {threshold}")
    if not any((project, session_id, after_ts, before_ts, query)):
        raise UsageError(
            "forget needs at least one of: project, session, after/before, query "
            "(it never forgets everything at once)"
        )
    if after_ts and before_ts and after_ts >= before_ts:
        raise UsageError(f"forget: after ({after}) must be earlier than before ({before})")
    conn = store.conn
    if project:
        project = resolve_project(conn, project)
    if session_id:
        session_id = _full_session_id(conn, session_id.strip(), project)
    matches = _select(conn, project, session_id, after_ts, before_ts)
    similarity = None
    if query is not None:
        matches, similarity = _by_query(conn, matches, query, threshold, project, model_dir)
    whole = query is None and after_ts is None and before_ts is None
    scope = "session" if whole else "chunk"
    sessions = sorted({m.session_id for m in matches})
    memories = matching(store, project=project, session_id=session_id, after=after_ts,
                        before=before_ts, query=query, threshold=threshold, model_dir=model_dir)
    reason = _reason(project, session_id, after, before, query)
    notes: list[str] = []
    with redaction.for_good(conn, notes, skip=dry_run or not (matches or memories)):
        if not dry_run and matches:
            _delete(conn, matches, sessions if whole else [], reason)
        also = forget_matching(store, memories, dry_run=dry_run, reason=reason)
    text = _render(matches, sessions, scope, similarity, dry_run, threshold,
                   _criteria(project, session_id, after, before, query))
    if whole and sessions:
        text += _transcripts_note(file_table.session_paths(conn, sessions))
    if also:
        text = _with_memories(text, also, dry_run)
    if notes:
        text += "".join(f"\nNote: {note}." for note in notes)
    return ForgetResult(dry_run, len(matches), sessions, scope, similarity, text, matches)


def _with_memories(text: str, also: str, dry_run: bool) -> str:
    """The chunk report with the memories' lines before its closing instruction."""
    text = text.replace("Nothing to forget: no chunks match", "No chunks match", 1)
    tail = "\nNothing was deleted. To delete: dry_run=false (command line: --yes)."
    if tail in text:
        return text.replace(tail, f"\n{also}{tail}", 1)
    return f"{text}\n{also}" + (f"\n{tail.lstrip()}" if dry_run else "")


# -- selection -----------------------------------------------------------------------------


def _full_session_id(conn: apsw.Connection, prefix: str, project: str | None) -> str:
    """The stored session whose id is or starts with ``prefix`` (listings show 8 characters)."""
    found = session_store.resolve_prefix(conn, prefix, project)
    if found is None:
        # deferred: only on this error path
        from causantic.retrieval.scope import hidden_session_note

        hidden = hidden_session_note(conn, prefix)
        if hidden:
            raise UsageError(f"forget: {hidden}")
        where = f" of project {project!r}" if project else ""
        raise UsageError(f"forget: no session{where} starts with {prefix!r}; "
                         "`causantic list-sessions` shows them")
    return found


def _select(
    conn: apsw.Connection,
    project: str | None,
    session_id: str | None,
    after: str | None,
    before: str | None,
) -> list[Match]:
    return [Match(*row) for row in chunk_store.select_chunks(conn, project, session_id, after, before)]


def _by_query(
    conn: apsw.Connection,
    candidates: list[Match],
    query: str,
    threshold: float,
    project: str | None,
    model_dir: Path | None,
) -> tuple[list[Match], str]:
    scores = _vector_scores(conn, query, project, model_dir)
    method = "vector"
    if scores is None:

        method = "keyword"
        coverage = term_coverage(conn, query, [m.rowid for m in candidates])
        scores = {r: c for r, (c, _, _) in coverage.items()}
    kept = [
        Match(m.rowid, m.chunk_id, m.session_id, m.project, m.start_time, m.text, scores[m.rowid])
        for m in candidates
        if scores.get(m.rowid, 0.0) >= threshold
    ]
    kept.sort(key=lambda m: (-(m.score or 0.0), m.start_time))
    return kept, method


def _vector_scores(
    conn: apsw.Connection, query: str, project: str | None, model_dir: Path | None
) -> dict[int, float] | None:
    """chunk rowid -> best-window cosine, or None when vectors cannot be used here."""
    # deferred: heavy: pulls numpy, only needed here
    from causantic.model import embedder as embed
    from causantic.store import vectors

    if not vectors.table_exists(conn, vectors.META_TABLE) or not vectors.has_model(conn, MODEL_ID):
        return None
    if not vectors.table_exists(conn) or not embed.available(model_dir):
        return None
    if not vectors.ensure_vec(conn):
        return None
    vec = embed.get_embedder(model_dir).embed_query(query)
    best: dict[int, float] = {}
    for rowid, _window, dist in vectors.knn(conn, vec.tobytes(), vectors.MAX_K, project):
        cos = 1.0 - dist * dist / 2.0
        if cos > best.get(rowid, -2.0):
            best[rowid] = cos
    current = vectors.current_chunks(conn, list(best), MODEL_ID)
    return {r: s for r, s in best.items() if r in current}


# -- deletion ------------------------------------------------------------------------------


def _delete(conn: apsw.Connection, matches: list[Match], whole_sessions: list[str], reason: str) -> None:
    """One transaction: vectors, chunks, tombstones, emptied session rows.

    Deleting a chunk row takes with it, by trigger or foreign-key cascade: its FTS entry,
    its edges, its vector bookkeeping row, its topic membership and its session's stored
    state (recomputed on demand); its vectors' index entries and topics left empty go here.
    """
    # deferred: heavy: pulls numpy, only needed here
    from causantic.store import vector_index, vectors

    rowids = [m.rowid for m in matches]
    with conn:
        vectors.drop_chunk_vectors(conn, rowids)
        vector_index.remove(conn, {m.project for m in matches}, rowids)
        chunk_store.delete_rowids(conn, rowids)
        if whole_sessions:
            tombstones.add_tombstones(conn, "session", [(s, reason) for s in whole_sessions])
            session_store.delete_sessions(conn, whole_sessions)
        else:
            tombstones.add_tombstones(conn, "chunk", [(m.chunk_id, reason) for m in matches])

        forget_auto_for_chunks(conn, [m.chunk_id for m in matches])  # their text came from these
        topic_store.drop_empty(conn)  # named after the deleted chunks alone


# -- text ----------------------------------------------------------------------------------


def _render(
    matches: list[Match],
    sessions: list[str],
    scope: str,
    similarity: str | None,
    dry_run: bool,
    threshold: float,
    criteria: str,
) -> str:
    if not matches:
        extra = ""
        if similarity:
            extra = f" at similarity ≥ {threshold:.0%} ({_method(similarity)})"
        return f"Nothing to forget: no chunks match {criteria}{extra}."
    n, s = len(matches), len(sessions)
    what = f"{n} chunk{'s' if n != 1 else ''} in {s} session{'s' if s != 1 else ''}"
    lines = []
    if dry_run:
        lines.append(f"Dry run: {what} would be forgotten ({criteria}).")
    else:
        lines.append(f"Forgot {what} ({criteria}): text, index entries, vectors and edges removed.")
    if scope == "session":
        lines.append(
            f"{'Would leave' if dry_run else 'Left'} {s} session tombstone{'s' if s != 1 else ''}: "
            "a re-ingest will not bring these sessions back."
        )
    else:
        lines.append(
            f"{'Would leave' if dry_run else 'Left'} {n} chunk tombstone{'s' if n != 1 else ''}: "
            "a re-ingest will not bring these chunks back."
        )
    scores = [m.score for m in matches if m.score is not None]
    if scores:
        lines.append(
            f"Similarity ({_method(similarity)}), threshold {threshold:.0%}: max {max(scores):.0%}, "
            f"median {statistics.median(scores):.0%}, min {min(scores):.0%}."
        )
    lines.append("")
    lines.append("Top matches:" if scores else "First chunks:")
    for i, m in enumerate(matches[:PREVIEW], 1):
        score = f"[{m.score:.0%}] " if m.score is not None else ""
        lines.append(
            f"  {i}. {score}{m.start_time[:16].replace('T', ' ')} {m.project} · session "
            f"{m.session_id[:8]} · \"{_first_line(m.text)}\""
        )
    if n > PREVIEW:
        lines.append(f"  … and {n - PREVIEW} more")
    if scores and n > 20 and threshold < 0.99:
        lines.append(
            f"Many matches: a higher threshold (e.g. {min(0.99, threshold + 0.1):.2f}) is narrower."
        )
    if dry_run:
        lines.append("")
        lines.append("Nothing was deleted. To delete: dry_run=false (command line: --yes).")
    return "\n".join(lines)


def _transcripts_note(paths: list[str]) -> str:
    """Where Claude Code's own copies are: forget never touches them (they are not ours)."""
    if not paths:
        return ""
    shown = "\n".join(f"  {p}" for p in paths[:PREVIEW])
    more = f"\n  … and {len(paths) - PREVIEW} more" if len(paths) > PREVIEW else ""
    return ("\nClaude Code's own transcripts of these sessions stay where they are (it deletes "
            f"them after cleanupPeriodDays); delete them too if they must go:\n{shown}{more}")


def _method(similarity: str | None) -> str:
    return "vector cosine" if similarity == "vector" else "share of the query's terms"


def _first_line(text: str, width: int = 80) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not (line.startswith("[") and line.endswith("]")):
            return clip(line, width)
    return ""


def _criteria(project, session_id, after, before, query) -> str:
    parts = []
    if project:
        parts.append(f'project "{project}"')
    if session_id:
        parts.append(f"session {session_id}")
    if after:
        parts.append(f"from {after}")
    if before:
        parts.append(f"before {before}")
    if query:
        parts.append(f'query "{query.strip()}"')
    return ", ".join(parts)


def _reason(project, session_id, after, before, query) -> str:
    return "forget: " + _criteria(project, session_id, after, before, query)


def _time(value: str | None, name: str) -> str | None:
    """An ISO date/time as stored (`YYYY-MM-DDTHH:MM:SS.mmmZ`, UTC), or None."""
    if value is None or not str(value).strip():
        return None
    try:
        when = parse_when(str(value))
    except ValueError:
        raise UsageError(
            f"forget: {name} must be an ISO date or time such as 2026-01-31 or "
            f"2026-01-31T14:00Z, not {value!r}"
        ) from None
    return iso_utc(when)

"""`reconstruct`: what happened recently, or in one session, as a timeline or a briefing.

- **timeline**: the chosen chunks in time order, one `=== Session … ===` header per session
  and a time line per chunk (sub-agent chunks say so), each compacted as answers are
  (`compaction.compact`: tool output cut hard), as in the briefing. When the budget is tight the NEWEST
  chunks are kept (what happened last matters most when resuming) and the title says how
  many older ones were left out.
- **briefing**: for resuming work: the last session's state (branch, last request, outcome,
  commits, open todos, errors and whether they were resolved, files edited and read,
  commands), a line on the sessions before it, then as much of its most recent conversation
  as fits (newest kept).

- **about a question** (`query`): "what happened in the session where X". The session is
  the one search's best match (hybrid, in the project, within the time range) belongs to, or
  the selected one (`session`, `previous_session`). The answer names it (id prefix, project,
  times, branch, title), then shows in conversation order, gaps marked ``[…]``: what it set
  out to do (its opening prompt, and the next one when the first is a bare slash command),
  the turns matching the question as answer units (`answer.fill`: the match compacted with
  its turn's conclusion, one per turn, best first until the budget is spent; a request the
  user interrupted before any answer with the next turn's answer, `_answered`), and how it
  ended (its main stream's last assistant message, `answer.ending`). The opening and the
  ending take at most `OPENING_SHARE` and `ENDING_SHARE` of the budget; the matches the rest.
  When search chose the session, the header names the other sessions among its best matches
  (`_also_matching`), and the budget the chosen session leaves shows their matches as search
  renders them, under `ELSEWHERE` (`Answer.others`): that choice is wrong for about a third
  of questions. `mode` does not apply.

Selection (all given filters apply together): `session` (a prefix of at least 8 characters),
`previous_session` (the session before the newest one, or before `current_session`),
`days_back`, `start`/`end` (ISO dates or times, UTC unless they carry an offset; a date-only
`end` includes that whole day). Without any, a timeline covers the project's most recent
chunks and a briefing its newest session.

This module is SQL and string work only (no numpy, onnxruntime or mcp) so the session-start
hook can call `briefing` within its time budget. Everything takes an apsw connection; a
question (`query`) needs search, imported only then, which uses the `Store` when given one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

import apsw

from causantic.config import ANSWER_TOKENS, HARD_INJECTION_CAP, SESSION_START_CHARS
from causantic.derive_state import SessionState, load_state
from causantic.errors import UsageError
from causantic.retrieval import render
from causantic.retrieval.projects import resolve_project
from causantic.retrieval.render import Answer, Hit, short_time
from causantic.store import timeline
from causantic.store.projects import has_chunks
from causantic.timestamps import days_ago, iso_utc, parse_when
from causantic.tokens import approx_tokens, char_limit, clip_line, tokens_for_chars
from causantic.transcripts.project import worktree_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from causantic.store.db import Store

MODES = ("timeline", "briefing")
_MIN_SHORTENED = 210  # do not show less than ~60 tokens of a chunk
#: With a question: the most of the budget the opening prompt(s) and the ending may take ...
OPENING_SHARE = 0.1
ENDING_SHARE = 0.1
#: ... and how deep search's list is read for the matches inside the chosen session.
ABOUT_DEPTH = 40
#: A question's answer names up to this many other sessions among search's first `ALSO_DEPTH`.
ALSO_SHOWN = 2
ALSO_DEPTH = 10
#: The title above the other sessions' matches (`_elsewhere`), and the least room for them.
ELSEWHERE = "Other sessions that match (ask with a session id for one of them):"
_MIN_ELSEWHERE_CHARS = 600
_ABOUT_MODE = "about"
#: A part of an answer about a question: (when, its first turn, its last turn, title, text).
_Part = tuple[str, tuple[str, str, int], tuple[str, str, int], str, str]
#: The least room (characters) a unit that does not fit whole is rebuilt for; less is left out.
_REBUILD_MIN = 3 * _MIN_SHORTENED
_GAP = "\n\n[…]\n\n"
#: What a part adds to its text: its title line and the gap before it, about.
_PART_CHARS = 60
_TODO_MARKS = {"completed": "x", "in_progress": "~"}


class _Selection:
    __slots__ = ("project", "session", "since", "until", "words", "empty_reason")

    def __init__(
        self,
        project: str,
        session: str | None = None,
        since: str | None = None,  # inclusive, on end_time
        until: str | None = None,  # exclusive, on start_time
        words: str = "",
        empty_reason: str | None = None,  # set when the selection cannot match anything
    ) -> None:
        self.project = project
        self.session = session
        self.since = since
        self.until = until
        self.words = words
        self.empty_reason = empty_reason


def reconstruct(
    db: apsw.Connection | Store,
    project: str | None,
    *,
    query: str | None = None,
    mode: str = "timeline",
    session: str | None = None,
    previous_session: bool = False,
    current_session: str | None = None,
    days_back: int | None = None,
    start: str | None = None,
    end: str | None = None,
    max_tokens: int = ANSWER_TOKENS,
    max_chars: int | None = None,
    now: datetime | None = None,
    checkout: str | None = None,
) -> Answer:
    """Rebuild what happened in a project as a timeline or a briefing, or answer `query`
    about one session (module docstring). `db`: a connection, or the open `Store` (a
    question's search then reuses it, vectors included). `project` may be None when
    `session` is given (a session id names its project), and for a question without
    `previous_session` (search answers it from any project's sessions). `checkout`: the
    working tree the caller is in; a briefing without a session resumes its newest session
    (`briefing`).

    Raises
    ------
    UsageError : unknown project or mode, no project and no session, a session prefix
        shorter than 8 characters or matching several sessions (or, without a project, none),
        an unreadable date, or `start` after `end`.
    """
    started = time.perf_counter()
    conn = db if isinstance(db, apsw.Connection) else db.conn
    if mode not in MODES:
        raise UsageError(f"unknown reconstruct mode {mode!r}; use timeline or briefing")
    # Without a project a question is answered from any project's sessions; the rest need
    # one, or a session id that names it.
    if not project and (session or previous_session or not (query and query.strip())):
        project = _project_of_session(conn, session)
    project = resolve_project(conn, project) or ""
    sel = _select(conn, project, session=session, previous_session=previous_session,
                  current_session=current_session, days_back=days_back, start=start, end=end,
                  now=now)
    limit = char_limit(max_tokens, max_chars)
    if query is not None and query.strip():
        if sel.empty_reason:
            return _result(query, _ABOUT_MODE, [], sel.empty_reason, started)
        return _about(db, sel, query, limit, started)
    if sel.empty_reason:
        return _result(sel.words, mode, [], sel.empty_reason, started)
    if mode == "briefing":
        sid, newer = ((sel.session, None) if sel.session
                      else _resumed_session(conn, sel, current_session, checkout))
        if sid is None:
            return _result(sel.words, mode, [],
                           f'No session of project "{project}" in that time range.', started)
        text, hits = _briefing(conn, project, sid, limit, sel, newer)
        return _result(sel.words, mode, hits, text, started, sessions=(sid,))
    return _timeline(conn, sel, limit, started)


def briefing(
    conn: apsw.Connection,
    project: str,
    *,
    max_chars: int = SESSION_START_CHARS,
    exclude_session: str | None = None,
    session: str | None = None,
    checkout: str | None = None,
) -> str:
    """A briefing for resuming work in `project`, at most `max_chars` characters (SQL only).

    The session is `session` (a full id or a prefix of at least 8 characters) or else the
    project's newest session other than `exclude_session` (pass the id of the session that is
    starting); given the `checkout` (working tree) work resumes in, the newest session of
    that checkout when it has one, with a line naming the project's newer session elsewhere.
    `max_chars` is clamped to 9,500 (Claude Code truncates injected context over 10,000
    characters). Returns a one-line text when the project has no (other) session; never
    raises for an unknown project (hooks must not fail), only for a bad `session`.
    """
    cap = max(0, min(max_chars, HARD_INJECTION_CAP))
    if not has_chunks(conn, project):
        return render.cap(f'No memory of project "{project}" yet.', cap)
    sel = _Selection(project, words=f"project {project}")
    if session:
        sel = _Selection(project, session=_resolve_session(conn, project, session))
        if sel.session is None:
            return render.cap(_unknown_session(conn, project, session), cap)
    if sel.session:
        return _briefing(conn, project, sel.session, cap, sel)[0]
    sid, newer = _resumed_session(conn, sel, exclude_session, checkout)
    if sid is None:
        return render.cap(f'No earlier session of project "{project}" in memory.', cap)
    return _briefing(conn, project, sid, cap, sel, newer)[0]


# -- selection ------------------------------------------------------------------------------


def _select(
    conn: apsw.Connection,
    project: str,
    *,
    session: str | None,
    previous_session: bool,
    current_session: str | None,
    days_back: int | None,
    start: str | None,
    end: str | None,
    now: datetime | None,
) -> _Selection:
    words = [f"project {project}"]
    since = until = None
    if start:
        since = _parse_time(start, "--from", end_of_day=False)
        words.append(f"from {start}")
    if end:
        until = _parse_time(end, "--to", end_of_day=True)
        words.append(f"to {end}")
    if since and until and since >= until:
        raise UsageError(f"--from {start} is not before --to {end}")
    if days_back is not None:
        if days_back < 1:
            raise UsageError("--days-back must be at least 1")
        cutoff = iso_utc(days_ago(days_back, now))
        since = max(since or cutoff, cutoff)
        words.append(f"last {days_back} days")
    sid = None
    if session:
        sid = _resolve_session(conn, project, session)
        words.append(f"session {session[:8]}")
        if sid is None:
            return _Selection(project, None, since, until, ", ".join(words),
                              _unknown_session(conn, project, session))
    if previous_session:
        sid_prev = _previous_session(conn, project, current_session or sid)
        words.append("previous session")
        if sid_prev is None:
            return _Selection(project, None, since, until, ", ".join(words),
                              f'No session of project "{project}" before that one.')
        sid = sid_prev
    return _Selection(project, sid, since, until, ", ".join(words))


def _resolve_session(conn: apsw.Connection, project: str, prefix: str) -> str | None:
    """The full id of the project's session starting with `prefix`, or None."""
    # Here, not at the top: store.sessions imports dataclasses (~6 ms), and the session-start
    # hook's usual briefing names no session.
    from causantic.store.sessions import resolve_prefix

    return resolve_prefix(conn, prefix, project)


def _project_of_session(conn: apsw.Connection, prefix: str | None) -> str:
    """The project of the session `prefix` names, looked for in every project."""
    # deferred: as in _resolve_session
    from causantic.store.projects import chunk_project
    from causantic.store.sessions import resolve_prefix

    if not prefix or not prefix.strip():
        raise UsageError("name a project or a session; `causantic list-projects` shows the projects")
    sid = resolve_prefix(conn, prefix)
    project = chunk_project(conn, sid) if sid else None
    if project is None:
        elsewhere = _hidden_note(conn, prefix.strip())
        if elsewhere:
            raise UsageError(elsewhere)
        raise UsageError(f'no session starting with "{prefix.strip()}" in memory; '
                         "`causantic list-sessions --project NAME` lists a project's sessions")
    return project


def _hidden_note(conn: apsw.Connection, prefix: str) -> str | None:
    # deferred: only on this error path
    from causantic.retrieval.scope import hidden_session_note

    return hidden_session_note(conn, prefix)


def _unknown_session(conn: apsw.Connection, project: str, prefix: str) -> str:
    return _hidden_note(conn, prefix) or (
        f'No session starting with "{prefix}" in project "{project}"; '
        f"`causantic list-sessions --project {project}` lists them."
    )


def _previous_session(conn: apsw.Connection, project: str, current: str | None) -> str | None:
    """The session before `current` (or before the newest session when `current` is None).

    "Before" means it started earlier; among those, the one active last. A `current` not in
    memory yet (a session that is just starting) makes the newest stored session previous.
    """
    if current:
        current = timeline.session_in_project(conn, project, current) or current
    else:
        current = _newest_session(conn, _Selection(project), exclude=None)
    first = timeline.session_start(conn, current)
    return timeline.latest_session_before(conn, project, current or "", first)


def _newest_session(conn: apsw.Connection, sel: _Selection, exclude: str | None) -> str | None:
    """The session holding the newest chunk within the selection's time range."""
    return timeline.newest_session(conn, sel.project, exclude=exclude, since=sel.since,
                                   until=sel.until)


def _resumed_session(conn: apsw.Connection, sel: _Selection, exclude: str | None,
                     checkout: str | None) -> tuple[str | None, str | None]:
    """(the session a briefing resumes, the project's newer session elsewhere or None).

    Work resumes where it was left in the same working tree: with worktrees in parallel, the
    project's newest session is often another branch's. So the newest session of `checkout`
    wins when there is one; the project's newest, if newer, is named beside it."""
    newest = _newest_session(conn, sel, exclude)
    if not checkout or newest is None or timeline.checkout_of(conn, newest) == checkout:
        return newest, None
    here = timeline.newest_session_in(conn, sel.project, checkout, exclude=exclude,
                                      since=sel.since, until=sel.until)
    return (here, newest) if here is not None else (newest, None)


def _parse_time(value: str, flag: str, *, end_of_day: bool) -> str:
    try:
        return iso_utc(parse_when(value, end_of_day=end_of_day))
    except ValueError:
        raise UsageError(
            f"{flag} {value!r} is not a date or time; use e.g. 2026-03-02 or 2026-03-02T09:30"
        ) from None




# -- timeline -------------------------------------------------------------------------------


def _newest_chunks(
    conn: apsw.Connection, sel: _Selection, main_only: bool = False
) -> Iterator[Hit]:
    """The selection's chunks, newest first, compacted as answers are (what the user and the
    assistant wrote kept, tool output cut hard), so one long output does not fill the room."""
    # deferred: it compiles its patterns at import, and only timelines and briefings need them
    from causantic.retrieval.compaction import compact

    for hit in timeline.newest_chunks(conn, sel.project, session=sel.session,
                                      main_only=main_only, since=sel.since, until=sel.until):
        yield hit.replace(text=compact(hit.text))


def _chunk_label(hit: Hit) -> str:
    label = f"[{short_time(hit.start_time)} UTC"
    if hit.agent_id:
        label += f" · sub-agent {hit.agent_id}"
    return label + "]"


def _fill_newest(
    hits: Iterator[Hit], room: int, per_session: int
) -> tuple[list[tuple[Hit, str]], bool]:
    """Take chunks newest first while they fit in `room` characters; shorten the last one."""
    taken: list[tuple[Hit, str]] = []
    sessions: set[str] = set()
    used = 0
    truncated = False
    for hit in hits:
        extra = per_session if hit.session_id not in sessions else 0
        sep = len(render.SEPARATOR) if taken else 0
        label = _chunk_label(hit)
        cost = extra + sep + len(label) + 1 + len(hit.text)
        if used + cost <= room:
            taken.append((hit, hit.text))
            sessions.add(hit.session_id)
            used += cost
            continue
        left = room - used - extra - sep - len(label) - 1
        if left >= _MIN_SHORTENED:
            taken.append((hit, render.shorten(hit.text, left)))
        truncated = True
        break
    return taken, truncated


def _session_header(conn: apsw.Connection, session_id: str) -> str:
    first, last, branch, title = timeline.session_span(conn, session_id)
    span = f"{short_time(first)} – {_same_day(first, last)} UTC"
    extra = f", branch {branch}" if branch else ""
    named = f" {clip_line(title, 80)}" if title else ""
    return f"=== Session {session_id[:8]} ({span}{extra}){named} ==="


def _same_day(first: str | None, last: str | None) -> str:
    if first and last and first[:10] == last[:10]:
        return short_time(last)[11:]
    return short_time(last or "")


def _render_timeline(conn: apsw.Connection, taken: list[tuple[Hit, str]]) -> str:
    parts: list[str] = []
    current = None
    for hit, body in taken:
        if hit.session_id != current:
            current = hit.session_id
            parts.append(("\n\n" if parts else "") + _session_header(conn, current) + "\n\n")
        elif parts:
            parts.append(render.SEPARATOR)
        parts.append(f"{_chunk_label(hit)}\n{body}")
    return "".join(parts)


def _timeline(
    conn: apsw.Connection, sel: _Selection, limit: int, started: float
) -> Answer:
    title_room = min(260, limit // 4)
    taken, truncated = _fill_newest(_newest_chunks(conn, sel), limit - title_room, 140)
    if not taken:
        what = "in that session" if sel.session else "in that time range"
        text = f'No chunks of project "{sel.project}" {what}.'
        if truncated:
            text = (f"Not even the newest chunk fits in {limit} characters; "
                    "raise --max-tokens or --max-chars.")
        return _result(sel.words, "timeline", [], render.cap(text, limit), started, truncated)
    taken.reverse()
    body = _render_timeline(conn, taken)
    sessions = tuple(dict.fromkeys(h.session_id for h, _ in taken))
    hits = [h for h, _ in taken]
    first, last = hits[0].start_time, max(h.end_time for h in hits)
    title = (
        f"Timeline of {sel.words}: {len(hits)} chunk{'s' if len(hits) != 1 else ''} from {len(sessions)} "
        f"session{'s' if len(sessions) != 1 else ''}, {short_time(first)} – "
        f"{_same_day(first, last)} UTC, oldest first."
    )
    if truncated:
        title += " " + _truncation_note(conn, sel, taken)
    text = f"{title}\n\n{body}"
    return _result(sel.words, "timeline", hits, render.cap(text, limit), started, truncated, sessions)


def _truncation_note(conn: apsw.Connection, sel: _Selection, taken: list[tuple[Hit, str]]) -> str:
    left_out = timeline.count_chunks(conn, sel.project, session=sel.session, since=sel.since,
                                     until=sel.until) - len(taken)
    shortened = taken[0][1] != taken[0][0].text
    notes = []
    if left_out > 0:
        notes.append(f"{left_out} older chunk{'s' if left_out != 1 else ''} did not fit the "
                     "budget and were left out (newest kept)")
    if shortened:
        notes.append("the oldest chunk shown is shortened")
    return "; ".join(notes).capitalize() + "." if notes else ""


# -- briefing -------------------------------------------------------------------------------


def _briefing(
    conn: apsw.Connection, project: str, sid: str, limit: int, sel: _Selection,
    newer: str | None = None,
) -> tuple[str, list[Hit]]:
    state = load_state(conn, sid)
    if state is None:
        return render.cap(_unknown_session(conn, project, sid[:8]), limit), []
    sections = _state_sections(conn, state, project)
    if newer:
        sections.insert(1, (2, _newer_elsewhere(conn, project, newer)))
    # The state gets at most 60 % of the room; the conversation takes the rest.
    state_text = _fit_sections(sections, int(limit * 0.6))
    room = limit - len(state_text) - 60
    convo = _Selection(project, session=sid, since=sel.since, until=sel.until)
    taken, truncated = _fill_newest(_newest_chunks(conn, convo, main_only=True), room, 0)
    if not taken:
        return render.cap(state_text, limit), []
    taken.reverse()
    head = "## Most recent conversation" + (" (newest kept)" if truncated else "")
    parts = [f"{_chunk_label(h)}\n{b}" for h, b in taken]
    text = f"{state_text}\n\n{head}\n\n{render.join(parts)}"
    return render.cap(text, limit), [h for h, _ in taken]


def _state_sections(
    conn: apsw.Connection, state: SessionState, project: str
) -> list[tuple[int, str]]:
    """(priority, text) in display order; a lower priority number is dropped last."""
    rel = _relative(state.cwd)
    span = f"{short_time(state.start_time)} – {_same_day(state.start_time, state.end_time)} UTC"
    branch = f", branch {state.branch}" if state.branch else ""
    out: list[tuple[int, str]] = [
        (0, f"# Briefing: {project}, last session {state.session_id[:8]} ({span}{branch})")
    ]
    if state.title:
        out.append((6, f"Title: {state.title}"))
    if state.last_request:
        out.append((1, f"Last request: {clip_line(state.last_request, 300)}"))
    if state.outcome:
        out.append((2, f"Outcome: {clip_line(state.outcome, 400)}"))
    done = []
    if state.commits:
        done.append("committed " + "; ".join(state.commits[-3:]))
    done += [a for a in state.actions if a != "committed" or not state.commits]
    if state.pull_requests:
        done.append("PR " + ", ".join(state.pull_requests[-2:]))
    if done:
        out.append((3, "Done: " + "; ".join(done)))
    if state.open_todos:
        lines = [f"- [{_TODO_MARKS.get(t.get('status', ''), ' ')}] {clip_line(t.get('content', ''), 160)}"
                 for t in state.open_todos[:10]]
        out.append((2, _counted("Open todos", len(lines), len(state.open_todos), "first") + "\n"
                    + "\n".join(lines)))
    unresolved = state.unresolved
    if unresolved:
        lines = [f"- {e.tool} {_subject(e.subject, rel)}: {clip_line(e.message, 160)}"
                 for e in unresolved[-5:]]
        out.append((3, _counted("Unresolved errors", len(lines), len(unresolved)) + "\n"
                    + "\n".join(lines)))
    resolved = [e for e in state.errors if e.resolved]
    if resolved:
        lines = [f"- {e.tool} {_subject(e.subject, rel)}: {clip_line(e.message, 120)} → {e.how}"
                 for e in resolved[-3:]]
        out.append((7, _counted("Resolved errors", len(lines), len(resolved)) + "\n"
                    + "\n".join(lines)))
    if state.edited:
        out.append((4, _file_line("Files edited", state.edited, rel)))
    read_only = _read_only(state.files, state.edited, state.cwd)
    if read_only:
        out.append((8, _file_line("Files read or searched", read_only, rel)))  # Grep/Glob paths too
    if state.commands:
        shown = state.commands[-6:]
        out.append((5, _counted("Commands", len(shown), len(state.commands)) + "\n"
                    + "\n".join(f"- `{clip_line(c, 160)}`" for c in shown)))
    earlier = _earlier_sessions(conn, project, state)
    if earlier:
        out.append((9, "Earlier sessions:\n" + "\n".join(earlier)))
    return out


def _newer_elsewhere(conn: apsw.Connection, project: str, session_id: str) -> str:
    """The line naming the project's newer session in another working tree."""
    span = timeline.session_span(conn, session_id)
    checkout = timeline.checkout_of(conn, session_id)
    worktree = worktree_name(checkout, project)
    where = (f" in worktree {worktree}" if worktree else " in the main checkout" if checkout
             else "")
    branch = f", branch {span.git_branch}" if span.git_branch else ""
    what = span.title or timeline.first_prompt(conn, session_id)
    return (f"Newer work in another checkout: session {session_id[:8]}{where} "
            f"({short_time(span.last)} UTC{branch})" + (f": {clip_line(what, 120)}" if what else ""))


def _counted(label: str, shown: int, total: int, which: str = "last") -> str:
    """A section's heading: "Resolved errors (5):", or "(last 3 of 5)" when some are left out."""
    return f"{label} ({total}):" if shown == total else f"{label} ({which} {shown} of {total}):"


def _fit_sections(sections: list[tuple[int, str]], room: int) -> str:
    kept = list(sections)
    while kept and len("\n".join(t for _, t in kept)) > room:
        worst = max(range(len(kept)), key=lambda i: (kept[i][0], i))
        if kept[worst][0] == 0:
            break
        kept.pop(worst)
    return render.cap("\n".join(t for _, t in kept), room)


def _earlier_sessions(conn: apsw.Connection, project: str, state: SessionState) -> list[str]:
    out = []
    for sid, first, title in timeline.earlier_sessions(conn, project, state.start_time,
                                                       state.session_id):
        about = title or timeline.first_prompt(conn, sid) or ""
        out.append(f"- {sid[:8]} ({short_time(first)[:10]}): {clip_line(about or '', 140)}")
    return out


def _relative(cwd: str | None) -> str:
    return cwd.rstrip("/") + "/" if cwd else ""


def _subject(subject: str, rel: str) -> str:
    if not subject:
        return ""
    return f"`{clip_line(subject.replace(rel, '') if rel else subject, 100)}`"


def _read_only(files: list[str], edited: list[str], cwd: str | None) -> list[str]:
    """The files a session read or searched worth naming: not those it edited (listed
    already), not its own folder (a search of the whole project), not Claude Code's scratch
    output of background tasks (`/tmp/claude-<uid>/<project>/tasks/<id>.output`)."""
    skip = set(edited) | ({cwd.rstrip("/")} if cwd else set())
    return [f for f in files if f not in skip
            and not (f.endswith(".output") and Path(f).parent.name == "tasks")]


def _file_line(label: str, files: list[str], rel: str) -> str:
    recent = files[::-1][:10]  # most recently touched first
    names = [f.removeprefix(rel) if rel else f for f in recent]
    more = f", and {len(files) - len(recent)} more" if len(files) > len(recent) else ""
    return f"{label} ({len(files)}): " + ", ".join(names) + more


# -- about a question -----------------------------------------------------------------------


def _about(db: apsw.Connection | Store, sel: _Selection, query: str, limit: int,
           started: float) -> Answer:
    """The session a question is about: its header, opening, matching turns and ending."""
    # deferred: search and answer units (and, for vectors, numpy) load only for a question,
    # never on the session-start hook's path
    from causantic.retrieval import answer, compaction
    from causantic.retrieval.search import search

    store = _as_store(db)
    conn = store.conn
    found = search(store, query, project=sel.project or None, limit=ABOUT_DEPTH,
                   max_tokens=10**6, answers=False)
    hits = [h for h in found.results if _in_range(h, sel)]
    sid = sel.session or (hits[0].session_id if hits else None)
    if sid is None:
        among = f'of project "{sel.project}" ' if sel.project else "in memory "
        text = f'No session {among}matches "{render.quote_query(query)}".'
        return _result(query, _ABOUT_MODE, [], render.cap(text, limit), started)
    matches = [h for h in hits if h.session_id == sid]
    terms = compaction.terms_of(query)
    # Other sessions among search's best, when it chose: its choice may be the wrong one.
    others = [] if sel.session else [
        s for s in dict.fromkeys(h.session_id for h in hits[:ALSO_DEPTH]) if s != sid][:ALSO_SHOWN]
    head = _about_header(conn, sel.project or _project_of_session(conn, sid), sid, query,
                         found.notice, chosen=not sel.session, others=others)
    opening = _opening(conn, sid, int(limit * OPENING_SHARE))
    end_key, ending = _ending(conn, sid, terms, int(limit * ENDING_SHARE))
    # The best match shows what came next when the question asks so, and a sub-agent's best
    # match how that sub-agent ended (its report); the main stream's end is shown last.
    units = [h.replace(text=answer.cut_ending(h.text)) if not h.agent_id else h
             for h in answer.fill(conn, matches, query, limit)]
    units, plain = _answered(conn, units, terms)
    # The opening or the ending may already be inside a matching turn's unit: then its room
    # goes to the matches (a second fit, string work only but for one rebuilt unit).
    room = limit - len(head) - len(opening[1]) - len(ending) - 3 * _PART_CHARS
    shown, truncated = _fit_units(conn, units, room, terms)
    held = [p for p in (opening[1], ending) if p and any(_holds(h.text, p) for h in shown)]
    if held:
        shown, truncated = _fit_units(conn, units, room + sum(map(len, held)), terms)
    where = answer.positions(conn, [h.chunk_id for h in shown])
    shown = _once(shown, plain, where)
    # The opening first, the ending last, the matches by time.
    parts: list[_Part] = []
    if opening[1] and not any(_holds(h.text, opening[1]) for h in shown):
        parts.append(("", opening[0], opening[0], "How it started", opening[1]))
    for h in shown:
        pos = where.get(h.chunk_id)
        key = (pos[0], pos[1], pos[2]) if pos else (h.session_id, h.agent_id, -9)
        last = (key[0], key[1], key[2] + 1) if answer.shows_next_turn(h.text) else key
        title = "Matching turn" + (f" (sub-agent {h.agent_id})" if h.agent_id else "")
        title += f", {short_time(h.start_time)} UTC"
        if h.changed:  # set by search (`freshness.mark`)
            title += f" · {render.changed_note(h.changed)}"
        parts.append((h.start_time, key, last, title, h.text))
    if ending and not any(_holds(h.text, ending) for h in shown):
        parts.append(("\uffff", end_key, end_key, "How it ended", ending))
    body = _in_order(parts)
    if not shown:
        why = ("Its matching turns do not fit this budget" if matches
               else "No turn of this session matches the question")
        body = f"({why}; its start and end:)\n\n" + body
    text = f"{head}\n\n{body}"
    # When search chose the session, the budget its matches leave shows the other sessions'.
    more, elsewhere = ("", []) if sel.session else _elsewhere(conn, hits, sid, query,
                                                               limit - len(text))
    text = render.cap(text + more, limit)
    return _result(query, _ABOUT_MODE, shown, text, started, truncated, (sid,), elsewhere)


def _elsewhere(conn: apsw.Connection, hits: list[Hit], sid: str, query: str, room: int
               ) -> tuple[str, list[Hit]]:
    """Search's matches in other sessions, as search shows them (answer units, best first),
    in the ``room`` characters the chosen session left; their text and the units shown.

    The chosen session is search's best match's, and that choice is wrong for about a third
    of questions; when its own matches run out, the rest of the budget shows where else the
    answer may be (a session id away from a full answer)."""
    # deferred: see _about
    from causantic.retrieval import answer

    room -= len(render.SEPARATOR) + len(ELSEWHERE) + 2
    rest = [h for h in hits if h.session_id != sid]
    if room < _MIN_ELSEWHERE_CHARS or not rest:
        return "", []
    units = answer.fill(conn, rest, query, room)
    items, used = render.fit([(render.header(h, i + 1), h.text) for i, h in enumerate(units)],
                             tokens_for_chars(room), room)
    if not items:
        return "", []
    return f"{render.SEPARATOR}{ELSEWHERE}\n\n{render.join(items)}", units[:used]


def _as_store(db: apsw.Connection | Store) -> Store:
    if not isinstance(db, apsw.Connection):
        return db
    # deferred: store.db (dataclasses, the vector extension's lookup) only for a question
    from causantic.store.db import Store

    return Store(db, Path(db.filename), readonly=True)


def _in_range(hit: Hit, sel: _Selection) -> bool:
    return ((sel.since is None or hit.end_time >= sel.since)
            and (sel.until is None or hit.start_time < sel.until))


def _about_header(conn: apsw.Connection, project: str, sid: str, query: str,
                  notice: str | None, chosen: bool, others: Sequence[str] = ()) -> str:
    """The answer's title: the session, and why it is the one (`chosen`: search's best match
    is in it; else it was named), then the ``others`` search also matched (`_also_matching`)."""
    first, last, branch, title = timeline.session_span(conn, sid)
    span = f"{short_time(first or '')} – {_same_day(first, last)} UTC"
    extra = f", branch {branch}" if branch else ""
    named = f"\nTitle: {clip_line(title, 160)}" if title else ""
    why = "where it matches best" if chosen else "as asked"
    head = (f'# Session {sid[:8]} of project {project} ({span}{extra}): '
            f'"{render.quote_query(query)}", {why}{named}')
    if others:
        head += "\n" + _also_matching(conn, others)
    return f"{notice}\n{head}" if notice else head


def _also_matching(conn: apsw.Connection, sessions: Sequence[str]) -> str:
    """The line naming other sessions search matched, each with its day and title: when the
    chosen session is the wrong one, the right one is a question with its id away."""
    named = []
    for sid in sessions:
        first, _, _, title = timeline.session_span(conn, sid)
        about = f', "{clip_line(title, 60)}"' if title else ""
        named.append(f"{sid[:8]} ({(first or '')[:10]}{about})")
    return f"Also matching: {'; '.join(named)} (ask with a session id for one of them)"


def _opening(conn: apsw.Connection, sid: str, room: int) -> tuple[tuple[str, str, int], str]:
    """The session's main-stream opening prompt (and the next one when the first is only a
    slash command), at most `room` characters, with the turn it ends in."""
    # deferred: see _about
    from causantic.retrieval import answer

    key = (sid, "", 0)
    turns = answer.turns(conn, [(sid, "", 0), (sid, "", 1)])
    said: list[str] = []
    for t in (0, 1):
        prompt = answer.prompt_of(turns.get((sid, "", t), []), room)
        if prompt:
            said.append(prompt)
            key = (sid, "", t)
        if said and not _bare_command(said[-1]):
            break
    return key, render.cap("\n\n".join(said), room) if said else ""


def _bare_command(prompt: str) -> bool:
    """A prompt that is only a slash command (`/clear`, `/superpowers:brainstorm`)."""
    lines = [x for x in prompt.split("\n")[1:] if x.strip()]
    return bool(lines) and lines[0].startswith("/") and len(lines[0].split()) == 1


def _ending(conn: apsw.Connection, sid: str, terms: Sequence[str], room: int
            ) -> tuple[tuple[str, str, int], str]:
    """How the session's main stream ended (`answer.ending`), with its last turn."""
    # deferred: see _about
    from causantic.retrieval import answer
    from causantic.store import chunks as chunk_store

    last = chunk_store.stream_end(conn, sid, first=False)
    pos = answer.positions(conn, [last]).get(last) if last else None
    if pos is None:
        return (sid, "", -1), ""
    key = (pos[0], pos[1], pos[2])
    turn = answer.turns(conn, [key]).get(key, [])
    return key, render.cap(answer.ending(turn, terms, room), room) if turn else ""


def _fit_units(conn: apsw.Connection, units: list[Hit], room: int, terms: Sequence[str]
               ) -> tuple[list[Hit], bool]:
    """The units, best first, while they fit `room` characters. The first that does not is
    built again for the room left (`answer.extract`: the match, its turn's conclusion first,
    then what else fits) when that is enough for a useful unit; the rest are left out."""
    # deferred: see _about
    from causantic.retrieval import answer

    shown: list[Hit] = []
    used = 0
    for h in units:
        cost = len(h.text) + _PART_CHARS
        if used + cost <= room:
            shown.append(h)
            used += cost
            continue
        left = room - used - _PART_CHARS
        if left >= _REBUILD_MIN:
            pos = answer.positions(conn, [h.chunk_id]).get(h.chunk_id)
            turn = answer.turns(conn, [pos[:3]]).get(pos[:3], []) if pos else []
            text = answer.extract(turn, h.chunk_id, terms, left) or h.text
            shown.append(h.replace(text=render.shorten(text, left)))
        return shown, True
    return shown, False


def _answered(conn: apsw.Connection, units: list[Hit], terms: Sequence[str]
              ) -> tuple[list[Hit], dict[str, tuple[tuple[str, str, int], str]]]:
    """The units, a turn the user interrupted before any answer followed by the next turn's
    answer (its last assistant message): the request was sent again or rephrased there, and
    that is what came of it (unless a better-ranked unit shows that turn). Also, for each unit
    so grown, that next turn and the unit's text without it (for when the next turn's own
    unit is shown too). Only such units cost queries."""
    # deferred: see _about
    from causantic.retrieval import answer, compaction

    cut = {h.chunk_id for h in units
           if compaction.INTERRUPTED in h.text and not answer.last_said([h.text])
           and not answer.shows_next_turn(h.text)}
    if not cut:
        return units, {}
    where = answer.positions(conn, [h.chunk_id for h in units])
    nexts: dict[str, tuple[str, str, int]] = {}
    before: set[tuple[str, str, int]] = set()  # turns of better-ranked units
    for h in units:
        pos = where.get(h.chunk_id)
        if pos is None:
            continue
        nxt = (pos[0], pos[1], pos[2] + 1)
        if h.chunk_id in cut and nxt not in before:
            nexts[h.chunk_id] = nxt
        before.add(pos[:3])
    if not nexts:
        return units, {}
    by_turn = answer.turns(conn, list(nexts.values()))
    out = []
    plain: dict[str, tuple[tuple[str, str, int], str]] = {}
    for h in units:
        turn = by_turn.get(nexts[h.chunk_id], []) if h.chunk_id in nexts else []
        said = answer.ending(turn, terms) if answer.last_said([t for _, t in turn]) else ""
        if said:
            plain[h.chunk_id] = (nexts[h.chunk_id], h.text)
            h = h.replace(text=answer.with_next(h.text, said))
        out.append(h)
    return out, plain


def _once(shown: list[Hit], plain: dict[str, tuple[tuple[str, str, int], str]],
          where: dict[str, tuple[str, str, int, int, int]]) -> list[Hit]:
    """The shown units, an interrupted request's next-turn answer (`_answered`) cut again
    when that turn's own unit is shown and holds it: shown once, there."""
    if not plain:
        return shown
    by_turn = {where[h.chunk_id][:3]: h.text for h in shown if h.chunk_id in where}
    out = []
    for h in shown:
        turn, text = plain.get(h.chunk_id, (None, ""))
        own = by_turn.get(turn) if turn is not None else None
        added = h.text[len(text):]
        out.append(h.replace(text=text) if own is not None and text and h.text.startswith(text)
                   and _holds(own, added.split("]\n\n", 1)[-1]) else h)
    return out


def _holds(unit: str, part: str) -> bool:
    """Whether a unit already shows a part (its first line of text)."""
    lines = [x for x in part.split("\n")[1:] if x.strip()]
    return bool(lines) and lines[0][:120] in unit


def _gap(before: tuple[str, str, int], key: tuple[str, str, int]) -> str:
    """What stands between two parts: nothing for the same or the next turn of a stream,
    else a `[…]` line that counts the main stream's turns left out."""
    if key[:2] != before[:2] or before[2] < 0 or key[2] < 0:
        return _GAP
    skipped = key[2] - before[2] - 1
    if skipped <= 0:
        return "\n\n"
    if key[1]:
        return _GAP
    return f"\n\n[… {skipped} turn{'s' if skipped != 1 else ''} left out]\n\n"


def _in_order(parts: list[_Part]) -> str:
    """The parts in time order, `[…]` between parts that are not the same or consecutive
    turns of one stream (`_gap`)."""
    out: list[str] = []
    before: tuple[str, str, int] | None = None
    for _, first, last, title, text in sorted(parts, key=lambda p: p[0]):
        if before is not None:
            out.append(_gap(before, first))
        out.append(f"## {title}\n{text}")
        before = last
    return "".join(out)


# -- shared ---------------------------------------------------------------------------------


def _result(
    words: str,
    mode: str,
    hits: list[Hit],
    text: str,
    started: float,
    truncated: bool = False,
    sessions: tuple[str, ...] = (),
    others: list[Hit] | None = None,
) -> Answer:
    return Answer(words, mode, hits, text, approx_tokens(text),
                  (time.perf_counter() - started) * 1000, others=others, truncated=truncated,
                  sessions=sessions)

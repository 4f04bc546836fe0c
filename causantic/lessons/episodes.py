"""Error episodes of a session, computed from its stored chunks (no LLM).

For every distinct error signature (see `causantic.lessons.signature`) in a session: when it
first and last happened, the failed attempts (each failing command or file, oldest first),
and, if something later resolved it, what: the resolving call (the same command or tool
succeeding, an edit of a file the error names, or the assistant saying it was fixed, the rules
of `causantic.derive_state`), the files edited between the last failure and the fix, other
commands that changed things on the way (`npm install`, `go mod tidy`), the first commit that
followed, and the chunk ids of each. Errors nothing resolved are kept as "seen, never solved".

Texts come from stored chunks, which were redacted before they were stored; a lesson holds
nothing that is not already in memory. Lesson ids hash the session and the signature, so
recomputing a session gives the same rows (`refresh` replaces a session's lessons in the
caller's transaction: ingest calls it for every session it touched).
"""

from __future__ import annotations

import json

import apsw

from causantic import derive_state as st
from causantic.lessons.signature import Signature, digest, error_line
from causantic.store import lessons as table
from causantic.store.lessons import LessonRow
from causantic.store.projects import chunk_project
from causantic.tokens import clip

_MAX_ATTEMPTS = 5
_MAX_FILES = 6
_READ_ONLY = ("ls", "cat", "head", "tail", "grep", "rg", "find", "pwd", "echo", "wc", "which", "sed",
              "awk", "jq", "tree", "sleep", "date", "stat", "file", "diff", "less", "git status",
              "git diff", "git log", "git show", "git branch", "git rev-parse", "gh pr view",
              "gh pr diff", "go doc", "go env")


class _Event:
    __slots__ = ("index", "chunk", "time", "tool", "subject", "ok", "body", "text")

    def __init__(self, index: int, chunk: str, time: str, tool: str = "", subject: str = "",
                 ok: bool = True, body: str = "", text: str = "") -> None:
        self.index, self.chunk, self.time = index, chunk, time
        self.tool, self.subject, self.ok, self.body, self.text = tool, subject, ok, body, text


def session_events(conn: apsw.Connection, session_id: str) -> list[_Event]:
    """Tool results (with the call they answer) and assistant texts of a session, in order."""
    rows = table.event_chunks(conn, session_id)
    events: list[_Event] = []
    reader = st.SessionReader()  # pairs results with calls; a call with no output is done
    where: dict[int, tuple[str, str]] = {}  # a call's index -> its chunk and time
    for chunk_id, agent, time, text, meta in rows:
        for index, label, body, call, done in reader.read(text, agent, st.silent_calls(meta)):
            if label.startswith("Tool:"):
                where[index] = (chunk_id, time)
            events += [_Event(c.index, *where[c.index], c.tool, c.subject) for c in done]
            if label == "Assistant":
                events.append(_Event(index, chunk_id, time, text=body))
            elif label.startswith("Result:"):
                failed = label.endswith(" error")
                tool = label[7:].removesuffix(" error").strip()
                events.append(_Event(index, chunk_id, time, tool, call.subject if call else "",
                                     not failed, body))
    events.sort(key=lambda e: e.index)  # a call with no output is known when its round ends
    return events


def compute_lessons(conn: apsw.Connection, session_id: str) -> list[LessonRow]:
    """The lessons of one session (see the module docstring); [] when it has no chunks."""
    project = chunk_project(conn, session_id)
    if project is None:
        return []
    return lessons_from_events(session_id, project, session_events(conn, session_id))


def lessons_from_events(session_id: str, project: str, events: list[_Event]) -> list[LessonRow]:
    """The lessons of a session's events (all of them, or the first n: a replay)."""
    calls = [e for e in events if e.tool]
    groups: dict[str, list[tuple[_Event, Signature, str]]] = {}
    for e in calls:
        if e.ok or e.body.strip().startswith(st._NOT_ERRORS):
            continue
        message = error_line(e.tool, e.body)
        sig = Signature(e.tool, e.subject, message)
        groups.setdefault(sig.sig_hash, []).append((e, sig, message))
    out = []
    for sig_hash, occurrences in groups.items():
        first, sig, message = occurrences[0]
        last = occurrences[-1][0]
        fix = _fix(events, calls, last, message)
        attempts = list(dict.fromkeys(e.subject or e.tool for e, _, _ in occurrences))
        out.append(LessonRow(
            id=digest(session_id, sig_hash),
            session_id=session_id,
            project=project,
            time=first.time,
            tool=first.tool,
            program=sig.program,
            error_class=sig.error_class,
            signature=sig.message,
            sig_hash=sig_hash,
            msg_hash=sig.msg_hash,
            informative=int(sig.informative),
            error=occurrences[-1][2],
            subject=clip(last.subject, 300),
            occurrences=len(occurrences),
            attempts=json.dumps([clip(a, 200) for a in attempts[-_MAX_ATTEMPTS:]]),
            resolved=int(fix is not None),
            fix=fix.description if fix else "",
            fix_command=fix.command if fix else "",
            fix_files=json.dumps(fix.files if fix else []),
            fix_time=fix.time if fix else "",
            fix_commit=fix.commit if fix else "",
            error_chunk=last.chunk,
            fix_chunk=fix.chunk if fix else "",
            change_chunks=json.dumps(fix.change_chunks if fix else []),
        ))
    out.sort(key=lambda r: (r.time, r.id))
    return out


class _Fix:
    __slots__ = ("description", "command", "files", "time", "commit", "chunk", "change_chunks")

    def __init__(self, description: str, command: str, files: list[str], time: str,
                 commit: str, chunk: str, change_chunks: list[str]) -> None:
        self.description, self.command, self.files = description, command, files
        self.time, self.commit, self.chunk, self.change_chunks = time, commit, chunk, change_chunks


def _fix(events: list[_Event], calls: list[_Event], failed: _Event, message: str) -> _Fix | None:
    """What resolved the failure `failed` (its last occurrence), or None."""
    later = [c for c in calls if c.index > failed.index]
    resolver: _Event | None = None
    said = ""
    if failed.tool == "Bash" and failed.subject:
        resolver = next((c for c in later if c.tool == "Bash" and c.ok
                         and st.same_command(failed.subject, c.subject)), None)
    elif failed.subject:
        resolver = next((c for c in later if c.ok and c.tool == failed.tool
                         and c.subject == failed.subject), None)
    if resolver is None:
        named = [m.group(1).lstrip("./") for m in st._PATH_IN_TEXT_RE.finditer(message)]
        resolver = next((c for c in later if c.ok and c.tool in st._EDIT_TOOLS
                         and any(n and c.subject.endswith(n) for n in named)), None)
    if resolver is None:
        for e in events:
            if not e.tool and failed.index < e.index <= failed.index + st._SAID_WINDOW:
                m = st._FIXED_RE.search(e.text)
                if m:
                    resolver, said = e, clip(st._sentence(e.text, m.start()), 160)
                    break
    if resolver is None:
        return None
    between = [c for c in calls if failed.index < c.index <= resolver.index and c.ok]
    edits = [c for c in between if c.tool in st._EDIT_TOOLS and c.subject]
    files = list(dict.fromkeys(c.subject for c in edits))[-_MAX_FILES:]
    changes = [c.subject for c in between if c.tool == "Bash" and c is not resolver
               and not st.same_command(failed.subject, c.subject) and _changes_things(c.subject)]
    parts = []
    if files:
        parts.append("edited " + ", ".join(st._short_path(f) for f in files[-3:])
                     + (f" (+{len(files) - 3} more)" if len(files) > 3 else ""))
    if changes:
        parts.append("ran " + ", ".join(f"`{clip(c, 80)}`" for c in changes[-2:]))
    if resolver.tool == "Bash":
        parts.append(f"then `{clip(resolver.subject, 100)}` passed")
    elif resolver.tool and resolver.tool not in st._EDIT_TOOLS:
        parts.append(f"then {resolver.tool} of {st._short_path(resolver.subject)} worked")
    elif said:
        parts.append(f'the assistant said "{said}"')
    note = _first_sentence(events, failed.index, resolver.index)
    if note and not said:
        parts.insert(0, f'"{note}"')
    commit = _commit_after(calls, resolver.index)
    return _Fix(
        description="; ".join(parts) or f"edited {st._short_path(resolver.subject)}",
        command=resolver.subject if resolver.tool == "Bash" else "",
        files=files,
        time=resolver.time,
        commit=commit,
        chunk=resolver.chunk,
        change_chunks=list(dict.fromkeys(c.chunk for c in edits)),
    )


def _first_sentence(events: list[_Event], start: int, end: int) -> str:
    """What the assistant said first after the failure, before the fix: usually the diagnosis
    ("The lint wants the error wrapped"); '' when it said nothing in between."""
    for e in events:
        if start < e.index < end and not e.tool and e.text.strip():
            text = " ".join(e.text.split())
            cut = min((i for i in (text.find(". "), text.find(": ")) if i > 20), default=-1)
            return clip(text[: cut + 1] if cut > 0 else text, 140)
    return ""


def _changes_things(command: str) -> bool:
    """A command that may have changed the project (not a read-only look around)."""
    words = " ".join(st._command_words(command)[:2])
    return bool(words) and not any(words == p or words.startswith(p + " ") for p in _READ_ONLY)


def _commit_after(calls: list[_Event], index: int) -> str:
    """The short sha of the first commit reported after `index` ('' if none)."""
    for c in calls:
        if c.index >= index and c.ok and c.tool == "Bash":
            m = st._COMMIT_RE.search(c.body)
            if m:
                return m.group(2)[:12]
    return ""


def refresh(conn: apsw.Connection, session_ids: set[str] | list[str]) -> int:
    """Recompute and store the lessons of these sessions (inside the caller's transaction)."""
    n = 0
    for sid in sorted(set(session_ids)):
        rows = compute_lessons(conn, sid)
        table.replace_session(conn, sid, rows)
        n += len(rows)
    return n


def rebuild_all(conn: apsw.Connection) -> int:
    """Recompute every session's lessons (one transaction); the number of lessons."""
    with conn:
        sessions = table.sessions_with_chunks(conn)
        table.delete_orphans(conn)
        n = refresh(conn, sessions)
    return n  # after the block: apsw types `with conn` as one that may swallow errors

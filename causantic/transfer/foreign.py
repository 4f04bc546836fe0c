"""Records from other memory tools, written into causantic's store as chunks.

An importer (`claude_mem`, `episodic_memory`) reads the other tool's files without its
software and yields `ForeignSession`s and `ForeignRecord`s; `write` turns them into chunks,
sessions and `next` edges, in one transaction:

- Each session gets its own id, prefixed by the source (`claude-mem:<session>`), so imported
  records never mix into the chains of a transcript causantic ingests itself.
- A record keeps its original time and project; its chunk's `meta` says where it came from
  (`source`, `source_table`, `source_id`).
- Text is redacted like everything else before it is stored.
- A session kept out of memory (`[ingest] exclude`, `.nocausantic`: `causantic.ingest.exclude`)
  is not imported: judged by its folder when the other tool recorded one, else by its
  project's name.
- The chunk id hashes the source, table, row key and (redacted) text, so importing the same
  store again adds nothing, and a record edited in the other tool comes in as a new chunk.
- Records of a session are ordered by time (`offset` = milliseconds since the epoch) and
  linked with `next` edges by the ordinary linker, so recall and predict walk them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from causantic.ingest.chunking import Chunk, Redact
from causantic.ingest.exclude import Exclusions
from causantic.ingest.linking import link_session
from causantic.store.chunks import forgotten_keys, insert_chunks
from causantic.store.db import Store
from causantic.store.sessions import SessionRow, upsert_session
from causantic.timestamps import iso_utc, parse_iso
from causantic.tokens import approx_tokens
from causantic.wording import plural


@dataclass(frozen=True)
class ForeignSession:
    """A session of the other tool (id already prefixed with the source)."""

    id: str
    project: str
    title: str | None = None
    cwd: str | None = None


@dataclass(frozen=True)
class ForeignRecord:
    """One record of the other tool, as it becomes one chunk."""

    source: str  # 'claude-mem', 'episodic-memory'
    table: str  # where it came from in the other tool
    key: str  # its id there
    session_id: str
    time: str  # ISO, UTC
    text: str
    kind: str = "turn"  # 'turn' | 'summary'
    turn: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class ForeignReport:
    """What an import from another tool read and added (or, dry run, would add)."""

    source: str
    path: str
    dry_run: bool = False
    read: dict[str, int] = field(default_factory=dict)
    sessions: int = 0
    chunks_added: int = 0
    chunks_present: int = 0
    edges_added: int = 0
    redactions: int = 0
    kept_out: dict[str, int] = field(default_factory=dict)  # why -> sessions not imported
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "path": self.path, "dry_run": self.dry_run,
                "read": self.read, "sessions": self.sessions, "chunks_added": self.chunks_added,
                "chunks_present": self.chunks_present, "edges_added": self.edges_added,
                "redactions": self.redactions, "kept_out": self.kept_out, "notes": self.notes}

    @property
    def text(self) -> str:
        read = ", ".join(f"{n} {name}" for name, n in self.read.items()) or "nothing"
        verb = "Would import" if self.dry_run else "Imported"
        lines = [f"{verb} from {self.source} ({self.path}): read {read}; "
                 f"+{self.chunks_added} chunks ({self.chunks_present} already present) in "
                 f"{self.sessions} sessions, +{self.edges_added} edges, "
                 f"{self.redactions} secrets redacted."]
        lines += kept_out_lines(self.kept_out)
        lines += self.notes
        if self.dry_run:
            lines.append("(dry run: nothing was written)")
        return "\n".join(lines)


def kept_out_lines(kept_out: dict[str, int]) -> list[str]:
    """One line per reason sessions were left out of an import."""
    return [f"Not imported: {plural(n, 'session')} kept out of memory ({why})."
            for why, n in kept_out.items()]


def iso_from_epoch(value: object, fallback: object = None) -> str | None:
    """Milliseconds (or seconds) since the epoch, or an ISO string, as causantic's UTC ISO."""
    if isinstance(value, int | float) and value > 0:
        seconds = value / 1000 if value > 1e11 else float(value)
        return iso_utc(datetime.fromtimestamp(seconds, UTC))
    if isinstance(fallback, str) and fallback:
        try:
            when = parse_iso(fallback)
        except ValueError:
            return None
        return iso_from_epoch(when.timestamp() * 1000)
    return None


def _offset(iso: str) -> int:
    return int(parse_iso(iso).timestamp() * 1000)


def to_chunks(records: Iterable[ForeignRecord], redact: Redact) -> list[Chunk]:
    """Redact, hash and order records as chunks (part numbers break ties in time)."""
    chunks: list[Chunk] = []
    seen: dict[tuple[str, int], int] = {}
    for r in sorted(records, key=lambda r: (r.session_id, r.time, r.table, r.key)):
        text, redactions = redact(r.text)
        offset = _offset(r.time)
        part = seen.get((r.session_id, offset), 0)
        seen[(r.session_id, offset)] = part + 1
        digest = hashlib.sha256(
            f"{r.source}\x1f{r.table}\x1f{r.key}\x1f{text}".encode()).hexdigest()[:24]
        meta = {**r.meta, "source": r.source, "source_table": r.table, "source_id": r.key}
        chunks.append(Chunk(id=digest, session_id=r.session_id, agent_id="", offset=offset,
                            part=part, turn=r.turn, kind=r.kind, start_time=r.time,
                            end_time=r.time, text=text, tokens=approx_tokens(text),
                            redactions=redactions, meta=meta))
    return chunks


class _Rollback(Exception):
    pass


def write(store: Store, sessions: Iterable[ForeignSession], records: Iterable[ForeignRecord],
          redact: Redact, report: ForeignReport, exclusions: Exclusions | None = None) -> None:
    """Store the records (sessions first, then chunks, then `next` edges) in one transaction;
    with `report.dry_run`, do the same and roll it back. Records of sessions `exclusions`
    keeps out are dropped before anything is redacted or stored (counted in
    `report.kept_out`)."""
    by_id = {s.id: s for s in sessions}
    if exclusions is not None:
        records = _not_kept_out(records, by_id, exclusions, report)
    chunks = to_chunks(records, redact)
    spans: dict[str, tuple[str, str]] = {}
    for c in chunks:
        first, last = spans.get(c.session_id, (c.start_time, c.end_time))
        spans[c.session_id] = (min(first, c.start_time), max(last, c.end_time))
    conn = store.conn
    try:
        with conn:
            forgotten = forgotten_keys(conn, "session", list(spans))
            projects: dict[str, str] = {}
            for sid, (start, end) in sorted(spans.items()):
                s = by_id.get(sid) or ForeignSession(sid, "unknown")
                projects[sid] = s.project
                if sid in forgotten:
                    continue
                upsert_session(conn, SessionRow(
                    id=sid, project=s.project, project_path=None, cwd=s.cwd, git_branch=None,
                    title=s.title, start_time=start, end_time=end, continued=False,
                    forked_from=None))
            added = insert_chunks(conn, chunks, projects, None)
            report.chunks_added += added
            report.chunks_present += len(chunks) - added
            report.redactions += sum(c.redactions for c in chunks)
            report.sessions += len(spans)
            report.edges_added += sum(link_session(conn, sid) for sid in sorted(spans))
            if report.dry_run:
                raise _Rollback
    except _Rollback:
        pass


def _not_kept_out(records: Iterable[ForeignRecord], sessions: dict[str, ForeignSession],
                  exclusions: Exclusions, report: ForeignReport) -> list[ForeignRecord]:
    """The records whose session is not kept out of memory (a session the other tool did
    not describe is judged as project "unknown")."""
    why: dict[str, str | None] = {}
    kept: list[ForeignRecord] = []
    for r in records:
        if r.session_id not in why:
            s = sessions.get(r.session_id) or ForeignSession(r.session_id, "unknown")
            reason = why[r.session_id] = exclusions.session_reason(s.cwd, s.project)
            if reason:
                report.kept_out[reason] = report.kept_out.get(reason, 0) + 1
        if not why[r.session_id]:
            kept.append(r)
    return kept

"""`causantic redact --rescan`: redact again what older versions stored.

Stores written before a redaction fix still hold what the older rules missed. A rescan reads
every stored text (chunk text and metadata, session titles / working directories / branches,
session states, topic names and terms, reasons given to `forget`) and writes back the ones the
current redactor changes. A chunk whose text changed loses its vector (the schema's triggers
drop its vector meta and topic membership, `drop_chunk_vectors` its vec0 rows), so the next
`causantic embed` embeds the redacted text; its FTS entry is replaced by the triggers too.

Safety with other processes: chunks are redacted in batches, each batch written in its own
short transaction, compare-and-set on the old text, so readers never wait long and a chunk a
concurrent ingest rewrote is left alone. Running it again finds nothing to change
(redaction is idempotent). While it runs, the connection zeroes freed pages
(`PRAGMA secure_delete`) and FTS5 removes deleted terms from its index pages
(`secure-delete`). At the end the FTS index is merged into one segment (terms of rows deleted
earlier stay in old segments until a merge), the file is rewritten from its live rows
(`VACUUM`: text deleted by earlier versions lingers in unused page space) and the WAL is
checkpointed and truncated, so old text lingers neither in the file, the index nor the WAL.
The merge and the VACUUM are the long writes; readers keep reading meanwhile (WAL), writers
wait for them. Finally the store records `RULES_VERSION`, which `causantic doctor` compares
with the current rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import apsw

from causantic.ingest.chunking import Redact
from causantic.ingest.scrub import scrub_value
from causantic.lessons.episodes import rebuild_all
from causantic.redact import RULES_VERSION
from causantic.store import redaction as table
from causantic.store.counts import any_chunks
from causantic.store.db import Store

BATCH = 200


@dataclass
class RescanReport:
    """What a rescan changed."""

    chunks_scanned: int = 0
    chunks_changed: int = 0
    vectors_dropped: int = 0
    sessions_changed: int = 0
    states_changed: int = 0
    topics_changed: int = 0
    memories_changed: int = 0
    secrets: int = 0
    rules_before: int = 0
    rules_after: int = RULES_VERSION
    wal_checkpointed: bool = True
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "chunks_scanned": self.chunks_scanned,
            "chunks_changed": self.chunks_changed,
            "vectors_dropped": self.vectors_dropped,
            "sessions_changed": self.sessions_changed,
            "states_changed": self.states_changed,
            "topics_changed": self.topics_changed,
            "memories_changed": self.memories_changed,
            "secrets_redacted": self.secrets,
            "rules_before": self.rules_before,
            "rules_after": self.rules_after,
            "wal_checkpointed": self.wal_checkpointed,
            "notes": self.notes,
        }

    @property
    def text(self) -> str:
        lines = [
            f"rescanned {self.chunks_scanned:,} chunks under redaction rules {self.rules_after}"
            f" (stored under {self.rules_before or 'older'}): {self.secrets:,} secrets redacted",
            f"- chunks changed: {self.chunks_changed:,}"
            + (f" ({self.vectors_dropped:,} vectors dropped; `causantic embed` redoes them)"
               if self.vectors_dropped else ""),
            f"- session titles/paths changed: {self.sessions_changed:,}",
            f"- session states changed: {self.states_changed:,}",
            f"- topic names changed: {self.topics_changed:,}",
            f"- remembered observations changed: {self.memories_changed:,}",
        ]
        lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines)


def rescan(store: Store, redact: Redact, *, batch: int = BATCH) -> RescanReport:
    """Redact every stored text again with ``redact``; see the module docstring."""
    conn = store.conn
    report = RescanReport(rules_before=table.rules_version(conn))
    table.secure_delete_on(conn)
    with conn:
        table.fts_secure_delete(conn, True)
    try:
        _chunks(store, redact, batch, report)
        _small_tables(store, redact, report)
        _derived(store, redact, report)
        with conn:
            table.set_rules_version(conn, RULES_VERSION)
    finally:
        with conn:
            table.fts_secure_delete(conn, False)
    changed = (report.chunks_changed or report.sessions_changed or report.states_changed
               or report.memories_changed)
    if changed or report.rules_before < RULES_VERSION:  # old rules: deleted rows may linger
        try:
            with conn:
                table.fts_optimize(conn)
            table.vacuum(conn)
        except apsw.BusyError:
            report.notes.append(
                "another process was writing, so the file was not compacted; old text may "
                "linger in unused page space until `causantic redact --rescan` runs again"
            )
    busy, _, _ = table.checkpoint(conn)
    if busy:
        report.wal_checkpointed = False
        report.notes.append(
            "another process kept the WAL open; old pages leave it at its next checkpoint"
        )
    return report


def _chunks(store: Store, redact: Redact, batch: int, report: RescanReport) -> None:
    # deferred: heavy: pulls numpy, only needed here
    from causantic.store.vectors import drop_chunk_vectors

    conn = store.conn
    after = 0
    while True:
        rows = table.chunk_batch(conn, after, batch)  # read outside any write transaction
        if not rows:
            return
        after = rows[-1][0]
        report.chunks_scanned += len(rows)
        changes = []
        for rowid, _sid, text, meta in rows:
            new_text, n = redact(text)
            new_meta, m = _redact_json(meta, redact)
            if n or m:
                changes.append((rowid, text, new_text, meta, new_meta, n, m))
        if not changes:
            continue
        with conn:
            dropped = [c[0] for c in changes if c[5]]
            drop_chunk_vectors(conn, dropped)
            for rowid, text, new_text, meta, new_meta, n, m in changes:
                if n:
                    written = table.update_chunk(conn, rowid, text, new_text, new_meta, n)
                else:
                    written = table.update_chunk_meta(conn, rowid, meta, new_meta)
                if written:
                    report.chunks_changed += 1
                    report.secrets += n + m
            report.vectors_dropped += len(dropped)


def _small_tables(store: Store, redact: Redact, report: RescanReport) -> None:
    """Sessions, states, topics and forget reasons: few rows, one transaction each."""
    conn = store.conn
    with conn:
        for row in table.session_rows(conn):
            new = [row[0]]
            n = 0
            for value in row[1:]:
                if value:
                    value, k = redact(value)
                    n += k
                new.append(value)
            if n:
                table.update_session(conn, row, new)
                report.sessions_changed += 1
                report.secrets += n
    with conn:
        for sid, state in table.state_rows(conn):
            new_state, n = _redact_json(state, redact)
            if n:
                table.update_state(conn, sid, state, new_state)
                report.states_changed += 1
                report.secrets += n
    with conn:
        for topic_id, name, terms in table.topic_rows(conn):
            new_name, n = redact(name)
            new_terms, m = _redact_json(terms, redact)
            if n or m:
                table.update_topic(conn, topic_id, (name, terms), (new_name, new_terms))
                report.topics_changed += 1
                report.secrets += n + m
        for scope, key, reason in table.forgotten_reasons(conn):
            new_reason, n = redact(reason)
            if n:
                table.update_reason(conn, scope, key, reason, new_reason)


def _derived(store: Store, redact: Redact, report: RescanReport) -> None:
    """Explicit memories and lessons: remembered text is redacted like chunks; lessons are
    derived from the (now redacted) chunks and session states, so they are derived again."""
    conn = store.conn
    with conn:
        for rowid, text, meta in table.memory_rows(conn):
            new_text, n = redact(text)
            new_meta, m = _redact_json(meta, redact)
            if n or m:
                table.update_memory(conn, rowid, (text, meta), (new_text, new_meta))
                report.memories_changed += 1
                report.secrets += n + m
        for feedback_id, reason in table.feedback_reasons(conn):
            new_reason, n = redact(reason)
            if n:
                table.update_feedback_reason(conn, feedback_id, reason, new_reason)
    if report.chunks_changed or report.states_changed:

        with conn:
            rebuild_all(conn)


def _redact_json(doc: str, redact: Redact) -> tuple[str, int]:
    """A stored JSON document with every string redacted (unparsable: redacted as text)."""
    try:
        value = json.loads(doc)
    except ValueError:
        return redact(doc)
    new, n = scrub_value(value, redact)
    if not n:
        return doc, 0
    return json.dumps(new, ensure_ascii=False, separators=(",", ":"), sort_keys=True), n


def needs_rescan(conn) -> bool:
    """Whether the store holds chunks redacted under older rules than the current ones."""
    return table.rules_version(conn) < RULES_VERSION and any_chunks(conn)

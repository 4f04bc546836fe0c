"""Import obra/episodic-memory's conversation archive without episodic-memory.

Layout (obra/episodic-memory `src/paths.ts`, `src/sync.ts`): the archive folder
(`$EPISODIC_MEMORY_CONFIG_DIR`, `$PERSONAL_SUPERPOWERS_DIR`, `$XDG_CONFIG_HOME/superpowers` or
`~/.config/superpowers`, then `conversation-archive/`) holds verbatim copies of Claude Code
transcripts, `<project folder>/<session>.jsonl` (sub-agent files included), each with an
optional `<session>-summary.txt` its model wrote. The archive keeps transcripts Claude Code
has since deleted (after `cleanupPeriodDays`), which is exactly what is worth carrying over.

- The transcripts go through causantic's own ingest (redaction, chunking, causal links, the
  project from each record's `cwd`, original times); chunk ids are content hashes of the
  transcript, so a session also still present in `~/.claude/projects` is stored once.
  Chunks first read from the archive get `meta.source = "episodic-memory"`.
- Each summary becomes a `summary` chunk in session `episodic-memory:<session>`, with the
  project and end time of the session it summarises.
- Sessions kept out of memory (`[ingest] exclude`, `.nocausantic`) are not imported, nor
  their summaries.
- The episodic-memory index (`conversation-index/db.sqlite`) is derived from the archive and
  is not read.

A dry run imports into a temporary copy of the database and reports what changed there.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from causantic.config import Settings
from causantic.errors import UsageError
from causantic.ingest.exclude import Exclusions, file_cwd
from causantic.store import transfer as sql
from causantic.store.db import open_store
from causantic.store.sessions import get_session
from causantic.transfer.foreign import (
    ForeignRecord,
    ForeignReport,
    ForeignSession,
    iso_from_epoch,
    write,
)
from causantic.wording import plural

SOURCE = "episodic-memory"
_SUMMARY = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
                      r"-summary\.txt$", re.I)


def import_archive(settings: Settings, archive: Path, *, dry_run: bool = False) -> ForeignReport:
    """Ingest the archive's transcripts and summaries into `settings.db_path`.

    Raises
    ------
    UsageError : `archive` is not a folder holding transcripts or summaries.
    """
    archive = Path(archive)
    if not archive.is_dir():
        raise UsageError(f"no episodic-memory archive at {archive} (a folder of project "
                         "folders with <session>.jsonl files)")
    transcripts = sorted(archive.rglob("*.jsonl"))
    summaries = sorted(p for p in archive.rglob("*-summary.txt") if _SUMMARY.search(p.name))
    if not transcripts and not summaries:
        raise UsageError(f"{archive} holds no transcripts (*.jsonl) or summaries; is it "
                         "episodic-memory's conversation-archive folder?")
    report = ForeignReport(SOURCE, str(archive), dry_run=dry_run,
                           read={"transcripts": len(transcripts), "summaries": len(summaries)})
    if not dry_run:
        _import(settings, archive, transcripts, summaries, report)
        return report
    with tempfile.TemporaryDirectory(prefix="causantic-dry-run-") as tmp:
        copy = Path(tmp) / "memory.db"
        if Path(settings.db_path).exists():
            sql.copy_database(Path(settings.db_path), copy)
        _import(settings.replace(db_path=copy), archive, transcripts, summaries, report)
    return report


def _import(settings: Settings, archive: Path, transcripts: list[Path], summaries: list[Path],
            report: ForeignReport) -> None:
    # deferred: heavy: pulls numpy, only needed here
    from causantic.ingest.run import make_redact, run_ingest

    if transcripts:
        ingested = run_ingest(settings, [archive])
        report.chunks_added += ingested.chunks_added
        report.edges_added += ingested.edges_added
        report.redactions += ingested.redactions
        report.sessions += len(ingested.sessions)
        report.notes += [f"warning: {p}" for p in ingested.problems]
        report.notes += [f"Not imported: {plural(n, 'transcript file')} kept out of memory "
                         f"({why})." for why, n in ingested.kept_out.items()]
    with open_store(settings.db_path) as store:
        with store.conn:
            sql.mark_source(store.conn, str(archive.resolve()), SOURCE)
        sessions, records = [], []
        for path in summaries:
            session_id = _SUMMARY.search(path.name).group(1)  # type: ignore[union-attr]
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            if not text:
                continue
            known = get_session(store.conn, session_id)
            when = (known.end_time if known and known.end_time
                    else iso_from_epoch(path.stat().st_mtime))
            sid = f"{SOURCE}:{session_id}"
            # A session kept out of memory was not ingested: its folder is then read from
            # the transcript beside the summary, so the summary is kept out too.
            sessions.append(ForeignSession(
                sid, known.project if known else path.parent.name,
                title=f"episodic-memory summary of {session_id[:8]}",
                cwd=known.cwd if known else file_cwd(path.with_name(f"{session_id}.jsonl"))))
            records.append(ForeignRecord(SOURCE, "summary", session_id, sid, str(when),
                                         f"[Summary from episodic-memory]\n{text}",
                                         kind="summary", meta={"summarises": session_id}))
        write(store, sessions, records, make_redact(settings), report,
              Exclusions(settings.ingest.exclude))

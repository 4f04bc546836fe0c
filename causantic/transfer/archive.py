"""`causantic export` / `causantic import`: memory as a versioned JSON Lines archive.

Format (version 1; gzip-compressed when the file name ends in `.gz`), one JSON object a line:

    {"format": "causantic-export", "version": 1, "created_at": "...", "schema": 6,
     "filters": {"project": null, "since": null}, "vectors": false}
    {"table": "sessions", "row": {"id": "...", "project": "...", ...}}
    {"table": "chunks", "row": {"id": "...", "text": "...", ...}}
    ...
    {"table": "vectors", "row": {"chunk_id": "...", "model_id": "...", "embedded_at": "...",
                                 "windows": ["<base64 float32>", ...],
                                 "token_bits": "<base64 uint8>"}}            (with --vectors)
    {"end": {"rows": {"chunks": 792, ...}}}

Rows carry the table's columns by name (see `causantic.store.transfer.TABLES` for the tables
and their keys). A BLOB value is written as `{"$base64": "..."}`. A column holding a local
chunk rowid is written as `chunk_id`. Checkpoints (`files`) and derived indexes (FTS, the
compact vector index) are not exported: FTS is kept by triggers as chunks are inserted, and
the vector index is written with the vectors. `token_bits` (the token rerank's sign bits) is
absent for a chunk that has none yet, and an archive without it imports vectors whose token
bits the next `embed` computes. The header's `version` changes only when an
older reader would misread the file; a reader refuses a newer version with one line.

Import merges in one transaction: existing rows win, rows already present are counted, a
chunk the target has forgotten stays forgotten, and an archive cut short (no `end` line)
imports nothing. `--dry-run` runs the same merge and rolls it back. Work kept out of memory
on this machine (`[ingest] exclude`, `.nocausantic`) is left out, as ingest leaves it out.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from causantic.errors import CausanticError, UsageError
from causantic.ingest.exclude import Exclusions
from causantic.memory.scope import memory_project
from causantic.store import transfer as sql
from causantic.store.db import Store, open_store
from causantic.store.schema import schema_version
from causantic.store.sql import table_names
from causantic.timestamps import parse_when
from causantic.transfer.foreign import kept_out_lines

FORMAT = "causantic-export"
VERSION = 1
VECTORS = "vectors"


# -- export --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote."""

    path: str
    rows: dict[str, int]
    bytes: int

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "rows": self.rows, "bytes": self.bytes}

    @property
    def text(self) -> str:
        counts = ", ".join(f"{n} {name}" for name, n in self.rows.items() if n)
        return f"Exported {counts or 'nothing'} to {self.path} ({self.bytes:,} bytes)."


def export(
    store: Store,
    path: Path,
    *,
    project: str | None = None,
    since: str | None = None,
    vectors: bool = False,
) -> ExportReport:
    """Write the store's rows (optionally one project's, or those active since a date) to `path`.

    The file is written beside the target and renamed into place, 0600.

    Raises
    ------
    UsageError : `since` is not an ISO date or time, or no project answers to `project`.
    CausanticError : vectors were asked for but sqlite-vec cannot load, or `path` cannot be
        written.
    """
    since = normalise_since(since)
    conn = store.conn
    project = memory_project(conn, project)  # a worktree folder or path names its project too
    present = table_names(conn)
    if vectors and sql.VECTORS_META in present and not store.load_vec():
        raise CausanticError("--vectors needs the sqlite-vec extension, which cannot load here; "
                             "export without --vectors (`causantic embed` recomputes them)")
    rows: dict[str, int] = {}
    header = {
        "format": FORMAT, "version": VERSION,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "schema": schema_version(conn),
        "filters": {"project": project, "since": since}, "vectors": vectors,
    }
    path = Path(path)
    with _atomic_writer(path) as out:
        _write(out, header)
        # One read transaction: every table is read from the same snapshot.
        with sql.read_snapshot(conn):
            for table in sql.TABLES:
                if table.name not in present:
                    continue
                rows[table.name] = 0
                for row in sql.read_rows(conn, table, project=project, since=since):
                    _write(out, {"table": table.name, "row": _encode(row)})
                    rows[table.name] += 1
            if vectors and "chunk_vectors" in present:
                rows[VECTORS] = 0
                for cid, _project, model, when, windows, token_bits in sql.vector_rows(
                    conn, project=project, since=since
                ):
                    vector = {"chunk_id": cid, "model_id": model, "embedded_at": when,
                              "windows": [base64.b64encode(w).decode("ascii") for w in windows]}
                    if token_bits is not None:
                        vector["token_bits"] = base64.b64encode(token_bits).decode("ascii")
                    _write(out, {"table": VECTORS, "row": vector})
                    rows[VECTORS] += 1
        _write(out, {"end": {"rows": rows}})
    return ExportReport(str(path), rows, path.stat().st_size)


def normalise_since(since: str | None) -> str | None:
    """An ISO date stays a date; a time becomes UTC `YYYY-MM-DDTHH:MM:SS` (as chunks store it)."""
    if since is None:
        return None
    text = since.strip()
    try:
        when = parse_when(text)
    except ValueError:
        raise UsageError(f"--since {since!r} is not an ISO date or time (e.g. 2026-02-15)") from None
    return text if len(text) == 10 else when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


@contextlib.contextmanager
def _atomic_writer(path: Path) -> Iterator[IO[str]]:
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise CausanticError(f"cannot write {path}: folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as raw:
            binary: gzip.GzipFile | io.BufferedWriter = (
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if path.suffix == ".gz" else raw)
            with io.TextIOWrapper(binary, encoding="utf-8", newline="\n") as text:
                yield text
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write(out: IO[str], obj: dict[str, object]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    out.write("\n")


def _encode(row: dict[str, object]) -> dict[str, object]:
    return {k: {"$base64": base64.b64encode(v).decode("ascii")} if isinstance(v, bytes) else v
            for k, v in row.items()}


def _decode(row: dict[str, object]) -> dict[str, object]:
    return {k: base64.b64decode(v["$base64"]) if isinstance(v, dict) and "$base64" in v else v
            for k, v in row.items()}


# -- import --------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What an import merged (or, with dry_run, would merge)."""

    path: str
    dry_run: bool
    tables: dict[str, sql.Merge] = field(default_factory=dict)
    kept_out: dict[str, int] = field(default_factory=dict)  # why -> sessions not imported
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "dry_run": self.dry_run,
                "tables": {k: v.as_dict() for k, v in self.tables.items()},
                "kept_out": self.kept_out, "notes": self.notes}

    @property
    def text(self) -> str:
        verb = "Would import" if self.dry_run else "Imported"
        parts = []
        for name, m in self.tables.items():
            part = f"+{m.added} {name}"
            extra = [f"{m.present} present"] if m.present else []
            extra += [f"{m.skipped} skipped"] if m.skipped else []
            parts.append(part + (f" ({', '.join(extra)})" if extra else ""))
        lines = [f"{verb} from {self.path}: {', '.join(parts) or 'nothing'}."]
        lines += kept_out_lines(self.kept_out)
        lines += self.notes
        if self.dry_run:
            lines.append("(dry run: nothing was written)")
        return "\n".join(lines)


class _Rollback(Exception):
    pass


def import_archive(db_path: Path, path: Path, *, dry_run: bool = False,
                   exclusions: Exclusions | None = None) -> ImportReport:
    """Merge an export into the database at `db_path` (created if missing, unless dry run).

    Sessions `exclusions` keeps out of memory (`[ingest] exclude`, `.nocausantic`) are not
    imported: their chunks, session state and the memories observed in them, and every
    memory of a project all of whose exported sessions are kept out (`_KeptOut`).

    Raises
    ------
    UsageError : the file is not a causantic export, is from a newer format version, is
        damaged or cut short (nothing is imported then).
    CausanticError : the file cannot be read.
    """
    path = Path(path)
    if not path.is_file():
        raise CausanticError(f"cannot read {path}: no such file")
    report = ImportReport(str(path), dry_run)
    with contextlib.ExitStack() as stack:
        if dry_run and not Path(db_path).exists():  # show what would change; create nothing
            db_path = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "memory.db"
        store = stack.enter_context(open_store(Path(db_path)))
        lines = stack.enter_context(_reader(path))
        try:
            with store.conn:
                _merge(store, path, lines, report, _KeptOut(exclusions or Exclusions(), report))
                if dry_run:
                    raise _Rollback
        except _Rollback:
            pass
    return report


@contextlib.contextmanager
def _reader(path: Path) -> Iterator[Iterator[tuple[int, dict]]]:
    raw = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115
    with raw, io.TextIOWrapper(raw, encoding="utf-8") as text:
        def lines() -> Iterator[tuple[int, dict]]:
            try:
                for n, line in enumerate(text, start=1):
                    if line.strip():
                        try:
                            obj = json.loads(line)
                        except ValueError:
                            raise UsageError(f"{path}: line {n} is not JSON; the file is damaged "
                                             "(nothing was imported)") from None
                        if not isinstance(obj, dict):
                            raise UsageError(f"{path}: line {n} is not a JSON object "
                                             "(nothing was imported)")
                        yield n, obj
            except (OSError, EOFError, UnicodeDecodeError) as exc:
                raise UsageError(f"{path}: cannot be read ({exc}); nothing was imported") from None
        yield lines()


def _check_header(path: Path, header: dict) -> None:
    if header.get("format") != FORMAT or not isinstance(header.get("version"), int):
        raise UsageError(f"{path} is not a causantic export (see `causantic export --help`)")
    if header["version"] > VERSION:
        raise UsageError(f"{path} is export format version {header['version']}, newer than this "
                         f"causantic reads ({VERSION}); upgrade causantic to import it")


def _merge(store: Store, path: Path, lines: Iterator[tuple[int, dict]], report: ImportReport,
           kept_out: _KeptOut) -> None:
    conn = store.conn
    first = next(lines, None)
    if first is None:
        raise UsageError(f"{path} is empty, not a causantic export")
    _check_header(path, first[1])
    tables = {t.name: t for t in sql.TABLES}
    present = table_names(conn)
    mergers: dict[str, sql.Merger] = {}
    unknown: dict[str, int] = {}
    topics_clash = False
    vectors: _VectorWriter | None = None
    ended = False
    for n, obj in lines:
        if "end" in obj:
            ended = True
            break
        name, row = obj.get("table"), obj.get("row")
        if not isinstance(name, str) or not isinstance(row, dict):
            raise UsageError(f"{path}: line {n} is not a table row (nothing was imported)")
        if name == VECTORS:
            if vectors is None:
                vectors = _VectorWriter(store, report)
            vectors.add(row)
            continue
        table = tables.get(name)
        if table is None or name not in present:
            unknown[name] = unknown.get(name, 0) + 1
            continue
        if topics_clash and name in ("topic_members", "topic_build"):
            continue
        merger = mergers.get(name)
        if merger is None:
            merger = mergers[name] = sql.Merger(conn, table)
            report.tables[name] = merger.result
        decoded = _decode(row)
        if kept_out.drops(name, decoded):
            continue
        if name == "topics" and _clashes(conn, decoded):
            topics_clash = True
            continue
        merger.add(decoded)
    if not ended:
        raise UsageError(f"{path} ends early (no end record): the export was cut short; "
                         "nothing was imported")
    if vectors is not None:
        vectors.flush()
    if topics_clash:
        for name in ("topics", "topic_members", "topic_build"):
            report.tables.pop(name, None)
        report.notes.append("Topics were not imported: this memory has different topics of its "
                            "own (run `causantic topics rebuild` to cluster everything together).")
    for name, count in sorted(unknown.items()):
        report.notes.append(f"{count} rows of table {name!r} were not imported: this causantic "
                            "has no such table.")


def _clashes(conn, row: dict) -> bool:
    """A topic id the target already uses for a different topic."""
    found = sql.topic_name(conn, row.get("id"))
    return found is not None and found != row.get("name")


class _KeptOut:
    """Which exported rows belong to work kept out of memory here.

    Sessions come first in an export, so each is judged (by its folder, then its project's
    name) before its chunks arrive. A row left out is not counted as skipped: edges, topic
    members and vectors of its chunks are, as rows whose chunk is missing."""

    _BY_SESSION = {"chunks": "session_id", "session_state": "session_id",
                   "memories": "session_id"}

    def __init__(self, exclusions: Exclusions, report: ImportReport) -> None:
        self.exclusions = exclusions
        self.report = report
        self.sessions: set[str] = set()
        self.projects: dict[str, bool] = {}  # project -> every session so far kept out

    def drops(self, table: str, row: dict) -> bool:
        """Whether to leave this row out (a sessions row is judged and remembered)."""
        if table == "sessions":
            return self._judge(row)
        if table in self._BY_SESSION and row.get(self._BY_SESSION[table]) in self.sessions:
            return True
        if table == "memories" and row.get("project"):
            project = str(row["project"])
            return (self.projects.get(project, False)
                    or self.exclusions.session_reason(None, project) is not None)
        return False

    def _judge(self, row: dict) -> bool:
        project = str(row.get("project") or "")
        why = self.exclusions.session_reason(
            str(row.get("cwd") or row.get("project_path") or ""), project)
        self.projects[project] = self.projects.get(project, True) and why is not None
        if why is None:
            return False
        self.sessions.add(str(row.get("id")))
        self.report.kept_out[why] = self.report.kept_out.get(why, 0) + 1
        return True


class _VectorWriter:
    """Imports window vectors through `store.vectors.write_vectors` (so the compact index is
    written too), keeping each vector's model and original embedding time."""

    BATCH = 64

    def __init__(self, store: Store, report: ImportReport) -> None:
        self.store = store
        self.report = report
        self.result = report.tables.setdefault(VECTORS, sql.Merge())
        self.ok = store.load_vec()
        self.pending: list[tuple] = []  # (model, when, EmbeddedChunk)
        if not self.ok:
            report.notes.append("Vectors were not imported: the sqlite-vec extension cannot load "
                                "here (run `causantic embed` to recompute them).")

    def add(self, row: dict) -> None:
        if not self.ok:
            self.result.skipped += 1
            return
        # deferred: heavy: numpy, only needed here
        import numpy as np

        # deferred: heavy: pulls numpy, only needed here
        from causantic.store.vectors import EmbeddedChunk

        found = sql.chunk_for_vectors(self.store.conn, str(row.get("chunk_id")))
        if found is None:
            self.result.skipped += 1
            return
        rowid, project, model = found
        if model is not None:
            self.result.present += 1
            return
        windows = np.stack([np.frombuffer(base64.b64decode(w), dtype=np.float32)
                            for w in row["windows"]])
        bits = base64.b64decode(row["token_bits"]) if isinstance(row.get("token_bits"), str) else None
        if bits is not None and len(bits) % (windows.shape[1] // 8):
            bits = None  # not whole tokens: the next `embed` computes them again
        item = EmbeddedChunk(rowid, str(row["chunk_id"]), project, windows, bits)
        self.pending.append((str(row["model_id"]), str(row["embedded_at"]), item))
        if len(self.pending) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        # deferred: heavy: pulls numpy, only needed here
        from causantic.store.vectors import ensure_table, write_vectors

        conn = self.store.conn
        by_model: dict[str, list] = {}
        for model, _when, item in self.pending:
            by_model.setdefault(model, []).append(item)
        for model, items in by_model.items():
            ensure_table(conn, items[0].windows.shape[1])
            self.result.added += write_vectors(conn, items, model)
        for _model, when, item in self.pending:
            sql.set_embedded_at(conn, item.rowid, when)
        self.pending = []

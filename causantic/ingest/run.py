"""Wiring settings to the ingest pipeline: the redactor, the store, progress output.

Kept apart from `ingest.py` so that the pipeline itself takes plain arguments (a store, a
redact function) and tests can drive it directly.
"""

from __future__ import annotations

from pathlib import Path

import apsw

from causantic.config import Settings
from causantic.errors import CausanticError, Interrupted, describe
from causantic.fsutil import file_lock, private_dir
from causantic.ingest.embed import EmbedReport
from causantic.ingest.exclude import Exclusions
from causantic.ingest.pipeline import IngestReport, ingest_paths
from causantic.progress import ProgressLine
from causantic.redact import Redactor
from causantic.store import open_store
from causantic.store.db import Store
from causantic.wording import plural


def make_redact(settings: Settings):
    """The redact(text) -> (text, count) function ingest applies to everything it stores."""
    redactor = Redactor(settings.redaction.patterns)

    def redact(text: str) -> tuple[str, int]:
        r = redactor.redact(text)
        return r.text, r.total

    return redact


#: A database larger than this is integrity-checked before ingest at most every
#: INTEGRITY_EVERY_S (quick_check reads every page: ~1.5 s CPU for 500 MB / 100k chunks);
#: a smaller one every time (under ~0.2 s).
INTEGRITY_ALWAYS_BYTES = 64 << 20
INTEGRITY_EVERY_S = 6 * 3600
#: The busy timeout of one statement when the ingest has a deadline (the default is 5 s),
#: so a locked database is given up on near the deadline, not up to 5 s past it.
DEADLINE_BUSY_MS = 500


def run_ingest(settings: Settings, paths: list[Path], progress: bool = False,
               deadline: float | None = None) -> IngestReport:
    """Ingest transcripts under `paths` into the configured database.

    With a `deadline` (a `time.monotonic()` value; a hook that must answer in time) a
    database another process is writing to is waited for only until then, in short steps,
    and then DatabaseBusy is raised; whatever was committed by then stays.

    Raises Interrupted (Ctrl-C) saying how many files were kept: each file's work commits
    whole, so a rerun reads only the rest; DatabaseCorrupt (before writing anything) when
    the file is damaged (see `integrity_due` for how often that is checked).
    """
    redact = make_redact(settings)
    line = ProgressLine() if progress else None
    state: dict[str, IngestReport] = {}
    done = [0]

    def on_file(tf, report: IngestReport) -> None:
        done[0] += 1
        state["report"] = report
        if line is not None:
            line.update(f"ingest: {done[0]}/{report.files} files, "
                        f"+{plural(report.chunks_added, 'chunk')}")

    check = integrity_due(settings)
    try:
        busy_ms = None if deadline is None else DEADLINE_BUSY_MS
        with open_store(settings.db_path, busy_timeout_ms=busy_ms) as store:
            report = ingest_paths(store, paths, redact, on_file=on_file, check_integrity=check,
                                  exclusions=Exclusions(settings.ingest.exclude),
                                  readers=settings.ingest.readers or None, deadline=deadline)
            _observe(store, settings, redact, report)
        if check and report.files_read:
            _mark_checked(settings)
        return report
    except KeyboardInterrupt:
        partial = state.get("report")
        kept = (f"{done[0]} of {plural(partial.files, 'file')} read and kept "
                f"(+{plural(partial.chunks_added, 'chunk')})" if partial else "nothing was kept")
        raise Interrupted(f"ingest interrupted: {kept}; run the same `causantic ingest` "
                          "again to read the rest") from None
    finally:
        if line is not None:
            line.clear()


def _observe(store, settings: Settings, redact, report: IngestReport) -> None:
    """Automatic observations from the new chunks (`causantic.memory.maintain`). They are
    derived and resumable (a watermark), so a writer holding the database past the busy
    timeout only defers them to the next ingest; the chunks are already committed."""
    # deferred: hook fast path: loaded only when this runs
    import apsw

    # deferred: hook fast path: loaded only when this runs
    from causantic.errors import DatabaseBusy
    from causantic.memory.maintain import after_ingest

    try:
        after_ingest(store, settings.memory, redact)
    except (apsw.BusyError, DatabaseBusy):
        report.problems.append("automatic observations deferred to the next ingest: another "
                               "process was writing")


def integrity_due(settings: Settings) -> bool:
    """Whether ingest should check the database before writing: always for a small file,
    otherwise when the last check of this file (a marker under the home) is over
    INTEGRITY_EVERY_S old. Pages an ingest writes are checked by SQLite as it goes."""
    # deferred: hook fast path: loaded only when this runs
    import time

    try:
        if settings.db_path.stat().st_size < INTEGRITY_ALWAYS_BYTES:
            return True
        return time.time() - _integrity_marker(settings).stat().st_mtime > INTEGRITY_EVERY_S
    except OSError:
        return True


def _integrity_marker(settings: Settings) -> Path:
    # deferred: hook fast path: loaded only when this runs
    import hashlib

    key = hashlib.sha1(str(settings.db_path.resolve()).encode()).hexdigest()[:16]
    return settings.home / "state" / f"integrity-{key}"


def _mark_checked(settings: Settings) -> None:
    # deferred: hook fast path: loaded only when this runs
    import contextlib
    import os

    marker = _integrity_marker(settings)
    with contextlib.suppress(OSError):  # a home we cannot write only means checking again
        private_dir(marker.parent)
        os.close(os.open(marker, os.O_CREAT | os.O_WRONLY, 0o600))
        os.utime(marker)


def run_embed(settings: Settings, *, progress: bool = False, reindex: bool = False,
              limit: int | None = None) -> EmbedReport:
    """Embed the chunks still without vectors (``reindex``: those from another model).

    One embedding run at a time per causantic home: a second run (another shell, a hook's
    background worker) waits for the first and then finds its chunks done, so no chunk is
    embedded twice.

    Raises ModelUnavailable (a CausanticError) when the model or sqlite-vec cannot load, and
    Interrupted (Ctrl-C) saying how many chunks were kept (vectors commit batch by batch).
    """
    # deferred: heavy: pulls numpy, only needed here
    from causantic.ingest.embed import embed_pending

    line = ProgressLine() if progress else None
    done = [0, 0]

    def show(n: int, total: int, elapsed: float) -> None:
        done[:] = [n, total]
        if line is not None:
            rate = n / elapsed if elapsed > 0 else 0.0
            eta = int((total - n) / rate) if rate > 0 else 0
            line.update(f"embed: {n}/{total} chunks, {rate:.1f} chunks/s, "
                        f"ETA {eta // 60}:{eta % 60:02d}")

    try:
        with file_lock(embed_lock(settings), timeout=0) as free:
            if not free:
                if line is not None:
                    line.update("embed: another causantic process is embedding; waiting for it")
                with file_lock(embed_lock(settings)):
                    return _embed(settings, reindex, limit, show, embed_pending)
            return _embed(settings, reindex, limit, show, embed_pending)
    except KeyboardInterrupt:
        kept = (f"{done[0]} of {plural(done[1], 'chunk')} embedded and kept" if done[1]
                else "no vectors were written")
        raise Interrupted(f"embed interrupted: {kept}; run `causantic embed` to "
                          "embed the rest") from None
    finally:
        if line is not None:
            line.clear()


def embed_lock(settings: Settings) -> Path:
    """The lock file held while a process embeds (not the hook worker's queue lock, which is
    held around this whole call: flock on a second descriptor of it would wait for itself)."""
    return settings.home / "locks" / "embedding.lock"


def _embed(settings, reindex, limit, show, embed_pending):
    with open_store(settings.db_path) as store:
        # deferred: hook fast path: loaded only when this runs
        from causantic.memory.maintain import embed_memories

        embed_memories(store, settings.memory, settings.model_dir)
        report = embed_pending(
            store,
            model_dir=None if settings.model_dir is None else str(settings.model_dir),
            reindex=reindex,
            limit=limit,
            progress=show,
            topic_threshold=settings.topics.threshold,
        )
        _refresh_topics(store, settings, report)
        return report


def _refresh_topics(store: Store, settings: Settings, report: EmbedReport) -> None:
    """Rebuild the topics when they are missing or memory outgrew them (`topics.maintain.
    refresh`), still under the embedding lock, so one process at a time does it. The vectors
    are committed by now: a rebuild that cannot finish is a note, never a failed embed."""
    # deferred: heavy: pulls numpy, only needed here
    from causantic.topics.maintain import refresh

    try:
        done = refresh(store, settings.topics, model_id=report.model_id)
    except (CausanticError, apsw.Error) as exc:
        report.topics_note = str(exc) if isinstance(exc, CausanticError) else describe(exc)
        return
    if done is not None:
        reason, rebuilt = done
        report.topics = {"reason": reason, **rebuilt.as_dict()}

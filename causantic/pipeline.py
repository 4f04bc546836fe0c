"""Wiring settings to the ingest pipeline: the redactor, the store, progress output.

Kept apart from `ingest.py` so that the pipeline itself takes plain arguments (a store, a
redact function) and tests can drive it directly.
"""

from __future__ import annotations

import sys
from pathlib import Path

from causantic.config import Settings
from causantic.embedding import EmbedReport
from causantic.ingest import IngestReport, ingest_paths
from causantic.redact import Redactor
from causantic.store import open_store


def make_redact(settings: Settings):  # type: ignore[no-untyped-def]
    """The redact(text) -> (text, count) function ingest applies to everything it stores."""
    redactor = Redactor(settings.redaction_patterns)

    def redact(text: str) -> tuple[str, int]:
        r = redactor.redact(text)
        return r.text, r.total

    return redact


#: A database larger than this is integrity-checked before ingest at most every
#: INTEGRITY_EVERY_S (quick_check reads every page: ~1.5 s CPU for 500 MB / 100k chunks);
#: a smaller one every time (under ~0.2 s).
INTEGRITY_ALWAYS_BYTES = 64 << 20
INTEGRITY_EVERY_S = 6 * 3600


def run_ingest(settings: Settings, paths: list[Path], progress: bool = False) -> IngestReport:
    """Ingest transcripts under `paths` into the configured database.

    Raises DatabaseCorrupt (before writing anything) when the file is damaged; see
    `integrity_due` for how often that is checked.
    """
    redact = make_redact(settings)
    on_file = _progress_printer() if progress else None
    check = integrity_due(settings)
    with open_store(settings.db_path) as store:
        report = ingest_paths(store, paths, redact, on_file=on_file, check_integrity=check)
    if check and report.files_read:
        _mark_checked(settings)
    if progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    return report


def integrity_due(settings: Settings) -> bool:
    """Whether ingest should check the database before writing: always for a small file,
    otherwise when the last check of this file (a marker under the home) is over
    INTEGRITY_EVERY_S old. Pages an ingest writes are checked by SQLite as it goes."""
    import time

    try:
        if settings.db_path.stat().st_size < INTEGRITY_ALWAYS_BYTES:
            return True
        return time.time() - _integrity_marker(settings).stat().st_mtime > INTEGRITY_EVERY_S
    except OSError:
        return True


def _integrity_marker(settings: Settings) -> Path:
    import hashlib

    key = hashlib.sha1(str(settings.db_path.resolve()).encode()).hexdigest()[:16]
    return settings.home / "state" / f"integrity-{key}"


def _mark_checked(settings: Settings) -> None:
    import contextlib
    import os

    marker = _integrity_marker(settings)
    with contextlib.suppress(OSError):  # a home we cannot write only means checking again
        marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(marker, os.O_CREAT | os.O_WRONLY, 0o600))
        os.utime(marker)


def run_embed(settings: Settings, *, progress: bool = False, reindex: bool = False,
              limit: int | None = None) -> EmbedReport:
    """Embed the chunks still without vectors (``reindex``: those from another model).

    Raises ModelUnavailable (a CausanticError) when the model or sqlite-vec cannot load.
    """
    from causantic.embedding import clear_line, embed_pending, progress_line
    from causantic.topics.maintain import topic_settings

    with open_store(settings.db_path) as store:
        try:
            return embed_pending(
                store,
                model_dir=None if settings.model_dir is None else str(settings.model_dir),
                reindex=reindex,
                limit=limit,
                progress=progress_line() if progress else None,
                topic_threshold=topic_settings(settings.raw).threshold,
            )
        finally:
            if progress:
                clear_line()


def _progress_printer():  # type: ignore[no-untyped-def]
    done = [0]

    def on_file(tf, report: IngestReport) -> None:  # type: ignore[no-untyped-def]
        done[0] += 1
        print(
            f"\r\033[Kingest: {done[0]}/{report.files} files, +{report.chunks_added} chunks",
            end="",
            file=sys.stderr,
            flush=True,
        )

    return on_file

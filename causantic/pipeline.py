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


def run_ingest(settings: Settings, paths: list[Path], progress: bool = False) -> IngestReport:
    """Ingest transcripts under `paths` into the configured database."""
    redact = make_redact(settings)
    on_file = _progress_printer() if progress else None
    with open_store(settings.db_path) as store:
        report = ingest_paths(store, paths, redact, on_file=on_file)
        from causantic.memory.maintain import after_ingest

        after_ingest(store, settings.raw, redact)
    if progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    return report


def run_embed(settings: Settings, *, progress: bool = False, reindex: bool = False,
              limit: int | None = None) -> EmbedReport:
    """Embed the chunks still without vectors (``reindex``: those from another model).

    Raises ModelUnavailable (a CausanticError) when the model or sqlite-vec cannot load.
    """
    from causantic.embedding import clear_line, embed_pending, progress_line
    from causantic.topics.maintain import topic_settings

    with open_store(settings.db_path) as store:
        try:
            from causantic.memory.maintain import embed_memories

            embed_memories(store, settings.raw, settings.model_dir)
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

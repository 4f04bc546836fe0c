"""Shared fixtures: a private CAUSANTIC_HOME per test, the shared transcripts, built stores."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CAUSANTIC_SHARED_DIR", REPO.parent / "shared"))
SHARED_TRANSCRIPTS = SHARED / "transcripts"
SAMPLES = REPO / "tests" / "data" / "transcripts"
PYTHON = sys.executable


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own causantic home and Claude dir; nothing touches the real ones."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CAUSANTIC_HOME", str(home / ".causantic"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.delenv("CAUSANTIC_DB", raising=False)
    return home


@pytest.fixture(scope="session")
def shared_transcripts() -> Path:
    """The 25 real sessions in ../shared/transcripts (CI has them beside the checkout)."""
    if not SHARED_TRANSCRIPTS.is_dir():
        pytest.fail(f"shared transcripts not found at {SHARED_TRANSCRIPTS}")
    return SHARED_TRANSCRIPTS


@pytest.fixture(scope="session")
def shared_db(tmp_path_factory: pytest.TempPathFactory, shared_transcripts: Path) -> Path:
    """A database built once from the shared transcripts (keyword only); copy before writing."""
    from causantic.config import load_settings
    from causantic.pipeline import run_ingest

    folder = tmp_path_factory.mktemp("shared-db")
    settings = load_settings(db=folder / "memory.db", env={"HOME": str(folder)})
    run_ingest(settings, [shared_transcripts])
    return folder / "memory.db"


@pytest.fixture
def shared_db_copy(shared_db: Path, tmp_path: Path) -> Path:
    """A private writable copy of the shared-transcripts database."""
    target = tmp_path / "copy" / "memory.db"
    target.parent.mkdir(mode=0o700)
    shutil.copy2(shared_db, target)
    return target

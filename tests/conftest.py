"""Shared fixtures: a private CAUSANTIC_HOME per test, the Claude Code layout inside it, the
shared transcripts (skipped when ../shared is absent), and stores built once per run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .helpers import PYTHON, REPO, ingest, run_cli

__all__ = ["PYTHON", "REPO", "SAMPLES", "SHARED", "SHARED_TRANSCRIPTS"]

SHARED = Path(os.environ.get("CAUSANTIC_SHARED_DIR", REPO.parent / "shared"))
SHARED_TRANSCRIPTS = SHARED / "transcripts"
SAMPLES = REPO / "tests" / "data" / "transcripts"

#: Fixtures that read ../shared; a test using one (directly or through another fixture) is
#: marked `shared` at collection, so `-m "not shared"` selects the self-contained unit tests.
SHARED_FIXTURES = {"shared_transcripts", "shared_dir"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "shared: reads ../shared (the real transcripts or LoCoMo); skipped when it "
        "is absent, an error under CI")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SHARED_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.shared)


def need_shared(path: Path) -> Path:
    """``path`` inside ../shared; the test is skipped when it is missing (CI fails instead:
    there the real corpus is beside the checkout and an integration test must not vanish)."""
    if not path.exists():
        message = f"needs the shared corpus: {path} not found (set CAUSANTIC_SHARED_DIR)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


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


@pytest.fixture
def claude_samples(private_home: Path) -> Path:
    """The sample project copied where Claude Code keeps transcripts (~/.claude/projects)."""
    target = private_home / ".claude" / "projects" / "-home-dev-acme-api"
    shutil.copytree(SAMPLES / "-home-dev-acme-api", target)
    return target


@pytest.fixture
def anyio_backend() -> str:
    """`@pytest.mark.anyio` tests (the MCP client) run on asyncio only."""
    return "asyncio"


# -- the shared corpus -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (CAUSANTIC_SHARED_DIR): LoCoMo, the e2e harness, the real transcripts."""
    return need_shared(SHARED)


@pytest.fixture(scope="session")
def shared_transcripts() -> Path:
    """The 25 real sessions in ../shared/transcripts (CI has them beside the checkout)."""
    return need_shared(SHARED_TRANSCRIPTS)


@pytest.fixture(scope="session")
def shared_db(tmp_path_factory: pytest.TempPathFactory, shared_transcripts: Path) -> Path:
    """A database built once from the shared transcripts (keyword only); copy before writing."""
    folder = tmp_path_factory.mktemp("shared-db")
    ingest(folder / "memory.db", shared_transcripts, home=folder)
    return folder / "memory.db"


def copy_db(db: Path, folder: Path) -> Path:
    """A private writable copy of a database built once for the run."""
    target = folder / "memory.db"
    target.parent.mkdir(mode=0o700, parents=True)
    shutil.copy2(db, target)
    return target


@pytest.fixture
def shared_db_copy(shared_db: Path, tmp_path: Path) -> Path:
    """A private writable copy of the shared-transcripts database."""
    return copy_db(shared_db, tmp_path / "copy")


# -- the bundled samples -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def samples_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled acme-api samples ingested once, keyword only (read-only use)."""
    folder = tmp_path_factory.mktemp("samples-db")
    ingest(folder / "memory.db", SAMPLES, home=folder)
    return folder / "memory.db"


@pytest.fixture
def sample_db(tmp_path: Path) -> Path:
    """The bundled samples ingested by the command line into this test's own database."""
    db = tmp_path / "m.db"
    out = run_cli("--db", str(db), "ingest", "--no-embed", str(SAMPLES))
    assert out.returncode == 0, out.stderr
    return db


@pytest.fixture(scope="session")
def samples_embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled samples ingested and embedded with the real model, once per run (read-only
    use: copy to write)."""
    from causantic.config import load_settings
    from causantic.ingest.run import run_embed

    folder = tmp_path_factory.mktemp("samples-vec")
    ingest(folder / "memory.db", SAMPLES, home=folder)
    run_embed(load_settings(db=folder / "memory.db", env={"HOME": str(folder)}))
    return folder / "memory.db"

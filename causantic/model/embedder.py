"""Sentence embeddings with the built all-MiniLM-L6-v2 int8 ONNX model (onnxruntime + tokenizers).

Design and invariants
---------------------
* Importing this module is cheap: numpy, onnxruntime and tokenizers are imported only when an
  ``Embedder`` is created, so hooks can import it (or call ``available()``) without paying
  ~200 ms. ``ORT_DISABLE_TELEMETRY=1`` is put into ``os.environ`` at import, before onnxruntime
  can ever be imported; otherwise onnxruntime writes ``~/.cache/Microsoft/...`` on import.
* The model files are checked against ``manifest.json`` (sha256) on every load; a mismatch or
  a missing file raises ``ModelUnavailable`` naming ``python -m causantic.model.build``.
* One text per ``run()``, always (batch size 1): with dynamic int8 quantisation the activation
  scales are computed per batch, so batching would change the vectors. Together with a fixed
  thread setup this makes a vector a pure function of the text: the same text gives the same
  bytes in every process on the same machine and runtime, whatever the thread count (checked
  for 1, 2 and 4 threads). A CPU without AVX512-VNNI/AVX-VNNI runs a different int8 kernel
  (u8s8 with 16-bit saturation), so its vectors may differ slightly: not measured yet.
* Windows. The model reads at most ``MAX_TOKENS`` (256) word pieces, [CLS] and [SEP]
  included, so a window holds up to 254 word pieces of the text. Consecutive windows start
  ``WINDOW_STRIDE`` (222) pieces apart, so neighbours share ``WINDOW_OVERLAP`` (32) pieces and a
  sentence cut by one window boundary is whole in the next window. At most ``max_windows``
  windows are embedded (default 8, i.e. the first 1,808 word pieces); **the tail beyond them is
  not embedded** (keyword search still sees it). ``embed_query`` is exactly the first window.
* Empty or whitespace-only text tokenises to nothing and is embedded as one window holding
  only [CLS] [SEP] (the embedding of the empty string): a fixed, valid unit vector, so callers
  need no special case; such a vector is close to nothing in particular.
* The tokenizer.json shipped with the model has padding *and* truncation fixed at 128 baked in;
  both are switched off here (windows are cut by this module, never by the tokenizer).
* Token vectors. The same ``run()`` that gives a window's sentence vector can also give each
  word piece's contextual vector (``last_hidden_state``) at no extra cost. For the token
  rerank of search (`causantic.retrieval.rerank`), ``embed_windows_and_tokens`` keeps those of
  the first ``TOKEN_WINDOWS`` windows, averaged in runs of ``TOKEN_POOL`` consecutive pieces
  (halving what is stored), and ``embed_query_pieces`` returns a query's piece vectors with
  the pieces themselves. All token vectors are unit length.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from causantic import model as _model
from causantic.errors import ModelUnavailable

if TYPE_CHECKING:
    import numpy as np

# Before any import of onnxruntime anywhere in this process (see the module docstring).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

#: Word pieces of text per window: MAX_TOKENS minus [CLS] and [SEP].
WINDOW_CONTENT = _model.MAX_TOKENS - 2
#: Word pieces shared by consecutive windows.
WINDOW_OVERLAP = 32
#: Distance in word pieces between the starts of consecutive windows.
WINDOW_STRIDE = WINDOW_CONTENT - WINDOW_OVERLAP
#: Windows embedded per text unless the caller says otherwise.
DEFAULT_MAX_WINDOWS = 8
#: Windows whose word-piece vectors `embed_windows_and_tokens` keeps (the first 476 pieces).
TOKEN_WINDOWS = 2
#: Consecutive word-piece vectors averaged into one token vector.
TOKEN_POOL = 2
#: onnxruntime intra-op threads (the machines we target have 2 cores; more does not help).
DEFAULT_THREADS = 2

_RUNTIME_MODULES = ("numpy", "onnxruntime", "tokenizers")


def available(model_dir: str | os.PathLike[str] | None = None) -> bool:
    """Cheaply tell whether embeddings can probably be computed, without importing anything.

    True when the model directory has a manifest for this ``MODEL_ID`` and numpy,
    onnxruntime and tokenizers are installed. Checksums are verified only when the model is
    loaded, so ``Embedder`` may still raise ``ModelUnavailable``.
    """
    where = _model.model_dir(model_dir)
    try:
        manifest = json.loads((where / _model.MANIFEST_FILE).read_bytes())
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("model_id") != _model.MODEL_ID:
        return False
    return all(importlib.util.find_spec(name) is not None for name in _RUNTIME_MODULES)


def window_starts(n_tokens: int, max_windows: int = DEFAULT_MAX_WINDOWS) -> list[int]:
    """Offsets (in word pieces, specials excluded) at which the windows of a text start.

    Parameters
    ----------
    n_tokens : int
        Word pieces in the text, [CLS]/[SEP] not counted.
    max_windows : int
        Cap on the number of windows (>= 1).

    Returns
    -------
    list of int
        ``[0, 222, 444, ...]``: one more start while the previous window does not reach the
        end and the cap allows; always at least ``[0]``.
    """
    if max_windows < 1:
        raise ValueError(f"max_windows must be >= 1, got {max_windows}")
    starts = [0]
    while starts[-1] + WINDOW_CONTENT < n_tokens and len(starts) < max_windows:
        starts.append(starts[-1] + WINDOW_STRIDE)
    return starts


class Embedder:
    """The loaded model and tokenizer; thread-safe, one text per ``run()``.

    Parameters
    ----------
    model_dir : path, optional
        A built model directory; ``causantic.model.model_dir()`` when omitted.
    threads : int
        onnxruntime intra-op threads (inter-op is 1, execution sequential).

    Attributes
    ----------
    model_id : str
        The ``MODEL_ID`` the vectors belong to; store it with every vector.
    dim : int
        Vector length (384).
    directory : Path
        The model directory that was loaded.

    Raises
    ------
    ModelUnavailable
        The model is not built, does not match its manifest, or numpy/onnxruntime/tokenizers
        cannot be imported or cannot load it.
    """

    def __init__(self, model_dir: str | os.PathLike[str] | None = None, *,
                 threads: int = DEFAULT_THREADS) -> None:
        verified = _model.load_verified(model_dir)
        self.directory: Path = verified.directory
        self.model_id: str = verified.manifest["model_id"]
        self.dim: int = int(verified.manifest.get("dim", 0))
        fix = _model.build_command(self.directory)
        if self.dim != _model.DIM:
            raise ModelUnavailable(f"the model in {self.directory} has dim {self.dim}, "
                                   f"expected {_model.DIM}; rebuild: {fix}")
        try:
            # deferred: heavy: numpy, only needed here
            import numpy as np
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailable(
                f"cannot import the embedding runtime ({exc}); install numpy, onnxruntime "
                f"and tokenizers, or search without vectors"
            ) from None
        self._np = np

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3  # errors only: nothing on a hook's stderr
        opts.use_deterministic_compute = True
        # Idle worker threads sleep instead of spinning: a spinning thread keeps a core busy
        # for a while after each run, which on two cores slowed the SQLite and numpy work
        # that follows a query embedding (search: 6.8 -> 5.1 ms per query + work; batch
        # embedding was no slower).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(verified.model_bytes, opts,
                                                 providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_str(verified.tokenizer_bytes.decode("utf-8"))
        except Exception as exc:  # onnxruntime/tokenizers raise their own untyped errors
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelUnavailable(
                f"cannot load the embedding model in {self.directory} ({first[:200]}); rebuild: {fix}"
            ) from None
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        if cls_id is None or sep_id is None:
            raise ModelUnavailable(f"{self.directory / _model.TOKENIZER_FILE} has no [CLS]/[SEP]; "
                                   f"rebuild: {fix}")
        self._cls, self._sep = cls_id, sep_id

    # ------------------------------------------------------------------ tokens

    def _content_ids(self, text: str, limit: int | None) -> list[int]:
        """Word-piece ids of ``text`` (no specials), the first ``limit`` of them if given.

        With a limit, only a prefix of the text is tokenised, growing until it yields enough
        pieces. Tokens of the prefix's last (possibly cut) word are not trusted; the others are
        exactly those of the whole text, because the BERT normaliser works per character and
        WordPiece per whitespace/punctuation-delimited word.
        """
        encode = self._tokenizer.encode
        if limit is not None:
            chars = max(2048, 8 * limit)
            while chars < len(text):
                enc = encode(text[:chars], add_special_tokens=False)
                words = enc.word_ids
                complete = len(words)
                while complete and words[complete - 1] == words[-1]:
                    complete -= 1
                if complete >= limit:
                    return enc.ids[:limit]
                chars *= 4
        ids = encode(text, add_special_tokens=False).ids
        return ids if limit is None else ids[:limit]

    def count_tokens(self, text: str) -> int:
        """Word pieces in ``text`` ([CLS]/[SEP] not counted), over the whole text."""
        return len(self._content_ids(text, None))

    def window_token_ids(self, text: str, max_windows: int = DEFAULT_MAX_WINDOWS) -> list[list[int]]:
        """The token ids of each window ``embed_windows`` would embed.

        Returns
        -------
        list of list of int
            One list per window, ``[CLS] piece... [SEP]``, each at most ``MAX_TOKENS`` long;
            at least one window, at most ``max_windows``.
        """
        if max_windows < 1:
            raise ValueError(f"max_windows must be >= 1, got {max_windows}")
        ids = self._content_ids(text, WINDOW_CONTENT + (max_windows - 1) * WINDOW_STRIDE)
        return [[self._cls, *ids[s : s + WINDOW_CONTENT], self._sep]
                for s in window_starts(len(ids), max_windows)]

    # ------------------------------------------------------------------ vectors

    def _run(self, window: list[int]) -> np.ndarray:
        np = self._np
        ids = np.array([window], dtype=np.int64)
        (vectors,) = self._session.run(["sentence_embedding"],
                                       {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        return np.ascontiguousarray(vectors[0], dtype=np.float32)

    def _run_with_pieces(self, window: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """A window's sentence vector and its word pieces' vectors ([CLS]/[SEP] dropped,
        unit length), from one ``run()``."""
        np = self._np
        ids = np.array([window], dtype=np.int64)
        vectors, states = self._session.run(["sentence_embedding", "last_hidden_state"],
                                            {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        return (np.ascontiguousarray(vectors[0], dtype=np.float32),
                _unit_rows(np.asarray(states[0][1:-1], dtype=np.float32)))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed the first window of ``text`` (at most 254 word pieces + [CLS]/[SEP]).

        Returns
        -------
        ndarray of shape (384,), dtype float32
            Unit L2 norm; bit-identical to row 0 of ``embed_windows(text)``.
        """
        return self._run(self.window_token_ids(text, max_windows=1)[0])

    def embed_query_pieces(self, text: str) -> tuple[np.ndarray, list[str], np.ndarray]:
        """``embed_query``'s vector with the query's word pieces and their vectors (one run).

        Returns
        -------
        (vector, pieces, piece_vectors)
            The vector is bit-identical to ``embed_query(text)``; ``pieces`` are the word
            pieces of its window ("##" marks a continuation) and ``piece_vectors`` their unit
            vectors, shape (len(pieces), 384).
        """
        window = self.window_token_ids(text, max_windows=1)[0]
        vector, states = self._run_with_pieces(window)
        pieces = [self._tokenizer.id_to_token(i) or "" for i in window[1:-1]]
        return vector, pieces, states

    def embed_windows(self, text: str, max_windows: int = DEFAULT_MAX_WINDOWS) -> np.ndarray:
        """Embed ``text`` as consecutive overlapping windows, one ``run()`` per window.

        Parameters
        ----------
        text : str
            Any text; empty or whitespace-only text gives one window ([CLS] [SEP]).
        max_windows : int
            Cap on windows (>= 1); word pieces after the last window are not embedded.

        Returns
        -------
        ndarray of shape (n_windows, 384), dtype float32
            Rows of unit L2 norm, in text order; ``1 <= n_windows <= max_windows``.
        """
        windows = self.window_token_ids(text, max_windows)
        return self._np.stack([self._run(w) for w in windows])

    def embed_windows_and_tokens(self, text: str, max_windows: int = DEFAULT_MAX_WINDOWS
                                 ) -> tuple[np.ndarray, np.ndarray]:
        """``embed_windows(text)`` and the text's token vectors, from the same runs.

        Returns
        -------
        (windows, tokens)
            ``windows`` is bit-identical to ``embed_windows(text, max_windows)``. ``tokens``:
            the word-piece vectors of the first ``TOKEN_WINDOWS`` windows (in text order; the
            pieces two windows share appear twice), averaged in runs of ``TOKEN_POOL``, unit
            length; shape (n, 384), n = 0 for empty text.
        """
        np = self._np
        vectors, pieces = [], []
        for i, window in enumerate(self.window_token_ids(text, max_windows)):
            if i < TOKEN_WINDOWS:
                vector, states = self._run_with_pieces(window)
                pieces.append(states)
            else:
                vector = self._run(window)
            vectors.append(vector)
        return np.stack(vectors), pool_tokens(np.concatenate(pieces))


def pool_tokens(states: np.ndarray, size: int = TOKEN_POOL) -> np.ndarray:
    """Unit means of consecutive runs of ``size`` rows (the last run may be shorter)."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    full = len(states) // size * size
    runs = [states[:full].reshape(-1, size, states.shape[1]).mean(axis=1)]
    if full < len(states):
        runs.append(states[full:].mean(axis=0, keepdims=True))
    return _unit_rows(np.concatenate(runs).astype(np.float32))


def _unit_rows(rows: np.ndarray) -> np.ndarray:
    # deferred: heavy: numpy, only needed here
    import numpy as np

    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.ascontiguousarray(rows / np.maximum(norms, 1e-12), dtype=np.float32)


_lock = threading.Lock()
_embedders: dict[Path, Embedder] = {}


def get_embedder(model_dir: str | os.PathLike[str] | None = None) -> Embedder:
    """Return the process-wide ``Embedder`` for a model directory, loading it on first use.

    Thread-safe: concurrent first calls load the model once. A failed load is not cached, so
    a later call (after ``python -m causantic.model.build``) can succeed.

    Raises
    ------
    ModelUnavailable
        See ``Embedder``.
    """
    key = _model.model_dir(model_dir).resolve()
    with _lock:
        embedder = _embedders.get(key)
        if embedder is None:
            embedder = _embedders[key] = Embedder(key)
        return embedder

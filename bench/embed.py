"""Embedding benchmark: model load time, RSS after load, throughput at 256 word pieces, batch 1.

Everything is measured in a fresh worker process (``python -m bench.embed --worker``) so that
the load time, imports and RSS are those of a process that embeds, not of whatever ran before.

Texts: the text blocks, tool results and prompts of the real transcripts under
``shared/transcripts/`` (stdlib source code with ``tiny=True`` or when they are missing), cut
into full windows of 256 word pieces ([CLS]/[SEP] included) by the embedder itself.

Rows:
- ``model only``: one ``run()`` per pre-tokenised 256-piece window (batch size 1, as always);
- ``embed_windows``: end to end (tokenise + window + run) on real texts of up to 8 windows;
- ``embed_query``: short queries, one window each (the hook / search path).
"""

from __future__ import annotations

import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.common import (
    REPO_ROOT,
    TRANSCRIPTS_DIR,
    cli_main,
    print_table,
    summarize_ms,
    write_result,
)

QUERIES = [
    "why did the shell hang on exit",
    "SQLITE_BUSY database is locked",
    "how were the hooks installed into settings.json",
    "the test that failed after the refactor",
    "which command rebuilds the embedding model",
]


def _transcript_text(limit_chars: int) -> str:
    """Concatenated human-readable text of the real transcripts, up to ``limit_chars``."""
    parts: list[str] = []
    size = 0
    for path in sorted(TRANSCRIPTS_DIR.rglob("*.jsonl")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                message = record.get("message") if isinstance(record, dict) else None
                content = message.get("content") if isinstance(message, dict) else None
                for text in _texts(content):
                    if text.strip():
                        parts.append(text)
                        size += len(text)
                if size >= limit_chars:
                    return "\n\n".join(parts)
    return "\n\n".join(parts)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                out.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                out.extend(_texts(block.get("content")))
    return out


def _stdlib_text() -> str:
    import argparse
    import json as json_module
    import pathlib

    return "\n\n".join(inspect.getsource(m) for m in (argparse, json_module, pathlib))


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024.0, 1)
    return float("nan")


def worker(tiny: bool) -> dict[str, Any]:
    """Measure in this (fresh) process; returns the numbers as a dict."""
    t0 = time.perf_counter()
    import causantic.model.embedder as embed_module

    rss_start = _rss_mb()
    t1 = time.perf_counter()
    import numpy  # noqa: F401  (timed separately from the model load)
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401

    t2 = time.perf_counter()
    embedder = embed_module.Embedder()
    t3 = time.perf_counter()
    rss_loaded = _rss_mb()

    use_transcripts = not tiny and TRANSCRIPTS_DIR.is_dir()
    source = _transcript_text(3_000_000) if use_transcripts else _stdlib_text()
    n_windows = 6 if tiny else 240
    windows = [w for w in embedder.window_token_ids(source, max_windows=n_windows + 1)
               if len(w) == 256][:n_windows]

    rounds = 1 if tiny else 3
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        for window in windows:
            embedder._run(window)  # the bare model: no tokenisation
        rates.append(len(windows) / (time.perf_counter() - start))
    model_wps = statistics.median(rates)

    # End to end on real texts of up to 8 windows each, cut from the same source by characters.
    piece = 1_500 if tiny else 8_000
    texts = [source[i : i + piece] for i in range(0, min(len(source), piece * (3 if tiny else 40)), piece)]
    start = time.perf_counter()
    e2e_windows = e2e_tokens = 0
    for text in texts:
        ids = embedder.window_token_ids(text)
        e2e_windows += len(embedder.embed_windows(text))
        e2e_tokens += sum(len(w) for w in ids)
    e2e_seconds = time.perf_counter() - start

    query_ms = []
    for _ in range(1 if tiny else 10):
        for q in QUERIES:
            s = time.perf_counter()
            embedder.embed_query(q)
            query_ms.append((time.perf_counter() - s) * 1000.0)

    import resource

    return {
        "model_id": embedder.model_id,
        "text_source": "transcripts" if use_transcripts else "stdlib source",
        "import_causantic_embed_ms": round((t1 - t0) * 1000.0, 1),
        "import_runtime_ms": round((t2 - t1) * 1000.0, 1),
        "model_load_ms": round((t3 - t2) * 1000.0, 1),
        "rss_before_load_mb": rss_start,
        "rss_after_load_mb": rss_loaded,
        "rss_after_embedding_mb": _rss_mb(),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "model_only": {"windows": len(windows), "tokens_per_window": 256, "rounds": rounds,
                       "windows_per_s": round(model_wps, 1),
                       "tokens_per_s": round(model_wps * 256, 0)},
        "embed_windows": {"texts": len(texts), "windows": e2e_windows, "tokens": e2e_tokens,
                          "windows_per_s": round(e2e_windows / e2e_seconds, 1),
                          "tokens_per_s": round(e2e_tokens / e2e_seconds, 0)},
        "embed_query": summarize_ms(query_ms),
    }


def run(tiny: bool = False) -> dict[str, Any]:
    """Run the worker in a fresh process, print the tables, write bench/results/embed.json."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    args = [sys.executable, "-m", "bench.embed", "--worker"] + (["--tiny"] if tiny else [])
    proc = subprocess.run(args, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"embed benchmark worker failed: {proc.stderr.strip()[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])

    print_table(f"Embedding model load ({result['model_id']})", [{
        "import causantic.model.embedder ms": result["import_causantic_embed_ms"],
        "import numpy+ort+tokenizers ms": result["import_runtime_ms"],
        "model load ms": result["model_load_ms"],
        "RSS after load MB": result["rss_after_load_mb"],
        "RSS after embedding MB": result["rss_after_embedding_mb"],
        "peak RSS MB": result["peak_rss_mb"],
    }])
    mo, e2e, q = result["model_only"], result["embed_windows"], result["embed_query"]
    print_table(f"Throughput, batch size 1, texts from {result['text_source']}", [
        {"path": "model only, 256-piece windows", "windows": mo["windows"],
         "windows/s": mo["windows_per_s"], "tokens/s": mo["tokens_per_s"]},
        {"path": f"embed_windows, {e2e['texts']} texts", "windows": e2e["windows"],
         "windows/s": e2e["windows_per_s"], "tokens/s": e2e["tokens_per_s"]},
        {"path": f"embed_query, median {q['median_ms']} ms, p95 {q['p95_ms']} ms",
         "windows": q["n"], "windows/s": round(1000.0 / q["median_ms"], 1), "tokens/s": ""},
    ])
    write_result("embed", result, tiny)
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.embed [--tiny]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--worker" in args:
        print(json.dumps(worker(tiny="--tiny" in args)))
        return 0
    return cli_main(run, args)


if __name__ == "__main__":
    sys.exit(main())

"""Redaction throughput: MB/s of `causantic.redact` over real transcript text and secrets.

Datasets
--------
- ``transcript blocks``: every text a rendered chunk can contain, one redact call per block,
  taken from the shared transcripts: ``message.content`` strings, ``text`` blocks,
  ``tool_result`` contents (string or text parts) and ``tool_use`` inputs (as JSON, the way
  commands and file contents reach a chunk). Thinking blocks are left out, as in ingest.
- ``transcript chunks``: the same blocks joined into ~4,000-character texts, the size of a
  rendered chunk (about 1,000 tokens), so per-call overhead weighs as it does in ingest.
- ``secrets corpus``: ``tests/data/secrets/secrets.jsonl`` repeated to about 1 MB; nearly
  every text holds a secret, so this measures the cost of hits.
- ``adversarial``: inputs built to stress one detector (dense anchors, long runs, many
  matches); they must stay linear, so they are reported per MB like the others.

Both wall time (median of repeats) and CPU time of this process are reported; on a shared,
busy machine the CPU figure is the steadier one.

Secrets in the store (issue 17): the generated corpus of `bench/secret_corpus.py` (fake
secrets of 60+ kinds in 20+ transcript contexts, and look-alikes) is written as real
transcripts, ingested by the real pipeline into a new SQLite file, and the file's raw bytes,
its WAL (read while the writer holds it) and the FTS vocabulary are searched for every secret
and every 12-character fragment of one. Targets: secrets found < 1 %, look-alikes altered
<= 0.5 %. The same corpus ingested unredacted and then cleaned by `causantic redact --rescan`
is scanned too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.common import (
    REPO_ROOT,
    TRANSCRIPTS_DIR,
    cli_main,
    print_table,
    summarize_ms,
    time_calls,
    write_result,
)
from causantic.redact import Redactor, default_redactor

SECRETS_FILE = REPO_ROOT / "tests" / "data" / "secrets" / "secrets.jsonl"
CHUNK_CHARS = 4000


def content_texts(record: dict[str, Any], *, thinking: bool = False) -> Iterator[str]:
    """The texts of one transcript record's ``message.content`` that a chunk can contain."""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        yield content
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            yield block["text"]
        elif kind == "thinking" and thinking and isinstance(block.get("thinking"), str):
            yield block["thinking"]
        elif kind == "tool_use":
            yield json.dumps(block.get("input"), ensure_ascii=False)
        elif kind == "tool_result":
            inner = block.get("content")
            if isinstance(inner, str):
                yield inner
            elif isinstance(inner, list):
                for part in inner:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        yield part["text"]


def transcript_texts(
    root: Path = TRANSCRIPTS_DIR, *, limit_chars: int | None = None, thinking: bool = False
) -> list[str]:
    """Non-empty content texts of every ``*.jsonl`` under ``root``, in path order.

    Lines that are not JSON (a torn last line) are skipped. ``limit_chars`` stops once that
    many characters were collected.
    """
    out: list[str] = []
    total = 0
    for path in sorted(root.rglob("*.jsonl")):
        with path.open(encoding="utf-8") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(record, dict):
                    continue
                for text in content_texts(record, thinking=thinking):
                    if text.strip():
                        out.append(text)
                        total += len(text)
                if limit_chars is not None and total >= limit_chars:
                    return out
    return out


def chunked(texts: Sequence[str], size: int = CHUNK_CHARS) -> list[str]:
    """Join consecutive texts into pieces of about ``size`` characters."""
    out: list[str] = []
    buf: list[str] = []
    n = 0
    for text in texts:
        buf.append(text)
        n += len(text)
        if n >= size:
            out.append("\n\n".join(buf))
            buf, n = [], 0
    if buf:
        out.append("\n\n".join(buf))
    return out


def secrets_texts(target_chars: int) -> list[str]:
    """The secrets corpus texts, repeated until they hold about ``target_chars`` characters."""
    base = [json.loads(line)["text"] for line in SECRETS_FILE.read_text().splitlines() if line]
    out: list[str] = []
    n = 0
    while n < target_chars:
        for text in base:
            out.append(text)
            n += len(text)
    return out


def adversarial_texts(size: int) -> dict[str, str]:
    """One string of about ``size`` characters per detector stress case."""

    def fill(unit: str) -> str:
        return unit * max(1, size // len(unit))

    return {
        "many assignments (password=abc123)": fill("password=abc123 "),
        "dense K anchors (KEY=)": fill("KEY="),
        "dense @ anchors": fill("@"),
        "JWT prefix run (eyJ)": fill("eyJ"),
        "PEM headers without END": fill("-----BEGIN RSA PRIVATE KEY-----\n"),
        "PEM END lines without header": fill("-----END RSA PRIVATE KEY-----\n"),
        "base64 lines before END": fill("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n"),
        "dense underscores (a_b_c)": fill("a_"),
        "dense flags ( -p -a -u)": fill(" -p -a -u x"),
        "one unterminated quote": 'password="' + "a\\" * (size // 2),
    }


def _measure(name: str, redactor: Redactor, texts: Sequence[str], repeat: int) -> dict[str, Any]:
    """Redact every text ``repeat`` times; throughput from the median wall and the CPU time."""
    chars = sum(map(len, texts))
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6

    def once() -> int:
        return sum(redactor.redact(t).total for t in texts)

    redactions = once()
    cpu0 = time.process_time()
    wall = summarize_ms(time_calls(once, repeat=repeat, warmup=0))
    cpu_ms = (time.process_time() - cpu0) * 1000.0 / repeat
    return {
        "dataset": name,
        "texts": len(texts),
        "MB": round(mb, 2),
        "chars": chars,
        "median_ms": wall["median_ms"],
        "cpu_ms": round(cpu_ms, 2),
        "MB/s": round(mb / (wall["median_ms"] / 1000.0), 1) if wall["median_ms"] else float("nan"),
        "MB/s_cpu": round(mb / (cpu_ms / 1000.0), 1) if cpu_ms else float("nan"),
        "redactions": redactions,
    }


def run(tiny: bool = False) -> dict[str, Any]:
    """Measure redaction throughput; print the tables and write bench/results/redact.json."""
    redactor = default_redactor()
    repeat = 1 if tiny else 5
    blocks = transcript_texts(limit_chars=100_000 if tiny else None)
    rows = [
        _measure("transcript blocks", redactor, blocks, repeat),
        _measure("transcript chunks (~4k chars)", redactor, chunked(blocks), repeat),
        _measure("secrets corpus", redactor, secrets_texts(20_000 if tiny else 1_000_000), repeat),
    ]
    columns = ["dataset", "texts", "MB", "median_ms", "cpu_ms", "MB/s", "MB/s_cpu", "redactions"]
    print_table("Redaction throughput", rows, columns)

    stress_rows = [
        _measure(name, redactor, [text], 1)
        for name, text in adversarial_texts(20_000 if tiny else 1_000_000).items()
    ]
    print_table("Adversarial inputs (one string each)", stress_rows, columns)

    corpus_rows = secret_corpus_rows(tiny)
    print_table(
        "Secrets in the database bytes (generated corpus, real ingest)",
        corpus_rows,
        ["store", "secrets", "kinds", "contexts", "found_in_db", "found_%", "lookalikes",
         "altered", "altered_%", "seconds"],
    )
    for row in corpus_rows:
        if (row["leaked"] or row["altered_items"]) and not row["store"].startswith("unredacted ("):
            print(f"{row['store']}: leaked {row['leaked']}; altered {row['altered_items']}")

    payload = {"tiny": tiny, "throughput": rows, "adversarial": stress_rows,
               "secret_corpus": corpus_rows}
    write_result("redact", payload, tiny)
    return payload


def secret_corpus_rows(tiny: bool) -> list[dict[str, Any]]:
    """Ingest the generated corpus (redacted, and unredacted then rescanned); scan the bytes."""
    import tempfile

    from bench.corpus import redact_function
    from bench.secret_corpus import scan_store, store_bytes, write_corpus
    from causantic.ingest.pipeline import ingest_paths
    from causantic.ingest.rescan import rescan
    from causantic.store import open_store

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus = write_corpus(root / "projects", per_kind=6 if tiny else 24,
                              lookalikes_per_kind=9 if tiny else 30)
        redact = redact_function()
        kinds = len({s.kind for s in corpus.secrets})
        contexts = len({s.context for s in corpus.secrets})

        def row(name: str, result: Any, seconds: float) -> dict[str, Any]:
            d = result.as_dict()
            return {"store": name, "secrets": result.secrets, "kinds": kinds,
                    "contexts": contexts, "found_in_db": d["secrets_found_in_db"],
                    "found_%": round(100 * result.leak_rate, 2),
                    "lookalikes": result.lookalikes, "altered": d["lookalikes_altered"],
                    "altered_%": round(100 * result.altered_rate, 2),
                    "seconds": round(seconds, 2), "leaked": d["leaked"],
                    "altered_items": d["altered"]}

        db = root / "fresh.db"
        started = time.perf_counter()
        with open_store(db) as store:
            ingest_paths(store, [root / "projects"], redact)
            seconds = time.perf_counter() - started
            live = scan_store(db, corpus, raw=store_bytes(db))
        rows.append(row("fresh ingest (file + live WAL + FTS)", live, seconds))
        rows.append(row("fresh ingest (closed file + FTS)", scan_store(db, corpus), seconds))

        old = root / "old.db"
        with open_store(old) as store:
            ingest_paths(store, [root / "projects"], lambda text: (text, 0))
        rows.append(row("unredacted (as a check of the scan)", scan_store(old, corpus), 0.0))
        started = time.perf_counter()
        with open_store(old) as store:
            rescan(store, redact)
        rows.append(row("unredacted, then redact --rescan", scan_store(old, corpus),
                        time.perf_counter() - started))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.redact [--tiny]``."""
    return cli_main(run, argv)


if __name__ == "__main__":
    raise SystemExit(main())

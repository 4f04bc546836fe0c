"""Secret redaction: secrets never survive, look-alikes never change, and it stays cheap to run.

The secrets corpus (`tests/data/secrets/secrets.jsonl`) holds fake credentials with the real
shapes (prefixes, lengths, alphabets) in the contexts they turn up in: shell exports, .env
files, YAML, JSON, curl headers, URLs, PEM blocks, error messages. The look-alike corpus
(`lookalikes.txt`) holds what must stay: hashes, ids, base64 images, Go test output,
identifiers, placeholders, redaction markers. Speed is measured in `bench/redact.py`, never
asserted here.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.redact import transcript_texts
from causantic.errors import UsageError
from causantic.redact import KINDS, Redaction, Redactor, default_redactor, marker

DATA = Path(__file__).parent / "data" / "secrets"
SECRETS = [
    json.loads(line)
    for line in (DATA / "secrets.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
LOOKALIKES_TEXT = (DATA / "lookalikes.txt").read_text(encoding="utf-8")
LOOKALIKE_LINES = [
    line for line in LOOKALIKES_TEXT.splitlines() if line.strip() and not line.startswith("#")
]


def _counts(redaction: Redaction) -> dict[str, int]:
    return dict(redaction.counts)


# --------------------------------------------------------------------------------------------
# The secrets corpus
# --------------------------------------------------------------------------------------------
def test_secrets_corpus_is_large_and_varied_enough():
    """The corpus is only evidence if it is broad: 30+ secrets of 12+ kinds, all documented."""
    pairs = [(kind, value) for entry in SECRETS for kind, value in entry["secrets"]]
    kinds = {kind for kind, _ in pairs}
    assert len(pairs) >= 30
    assert len(kinds) >= 12
    assert kinds <= set(KINDS), kinds - set(KINDS)
    for entry in SECRETS:
        for _, value in entry["secrets"]:
            assert value in entry["text"]


@pytest.mark.parametrize("entry", SECRETS, ids=[e["note"] for e in SECRETS])
def test_every_corpus_secret_is_gone_and_counted_under_its_kind(entry: dict):
    """No byte of a secret value survives, and each is counted once under the expected kind."""
    result = default_redactor().redact(entry["text"])
    for kind, value in entry["secrets"]:
        assert value not in result.text, f"{kind} survived: {value[:12]}..."
        assert marker(kind) in result.text
    assert _counts(result) == dict(Counter(kind for kind, _ in entry["secrets"]))
    assert result.total == len(entry["secrets"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "export GITHUB_TOKEN=ghp_EXAMPLE0123456789abcdefghijklmnopqrstu",
            "export GITHUB_TOKEN=[REDACTED:github-token]",
        ),
        (
            'DB_PASSWORD="s3cr3t-EXAMPLE" psql',
            'DB_PASSWORD="[REDACTED:env-secret]" psql',
        ),
        (
            "postgres://app:Tr0ub4dor-3@db.internal:5432/app",
            "postgres://app:[REDACTED:url-password]@db.internal:5432/app",
        ),
        (
            '{"password": "pa55w0rd-EXAMPLE!", "user": "admin"}',
            '{"password": "[REDACTED:env-secret]", "user": "admin"}',
        ),
        (
            "-H 'Authorization: Bearer 0a1B2c3D4e5F6g7H8i9J0kLmN'",
            "-H 'Authorization: Bearer [REDACTED:bearer]'",
        ),
        (
            "before\n-----BEGIN EC PRIVATE KEY-----\n"
            "MHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\n"
            "AwEHoUQDQgAEPR3tU2Fta9ktY+6P9G0cWO+0kETA6SOPrwRmm2NSXJx9wEXAMPLE\n"
            "-----END EC PRIVATE KEY-----\nafter",
            "before\n[REDACTED:private-key]\nafter",
        ),
    ],
)
def test_only_the_secret_value_is_replaced_so_the_context_stays_readable(text: str, expected: str):
    """Names, quotes, schemes, users and hosts stay: the chunk is still findable by them."""
    assert default_redactor().redact(text).text == expected


def test_counts_follow_each_replacement():
    """Three tokens and two passwords are five replacements, counted by kind."""
    token = "ghp_" + "EXAMPLE0123456789abcdefghijklmnopqrstu"
    text = (
        f"a={token}\nb: {token}\nsee {token}.\n"
        "DB_PASSWORD=first-Secret-1\nREDIS_PASSWORD=second-Secret-2\n"
    )
    result = default_redactor().redact(text)
    assert _counts(result) == {"github-token": 3, "env-secret": 2}
    assert result.total == 5


# --------------------------------------------------------------------------------------------
# Look-alikes
# --------------------------------------------------------------------------------------------
def test_lookalike_corpus_covers_the_documented_traps():
    """The cases the design promises to leave alone are all present in the corpus."""
    for needle in (
        "commit 9fceb02",
        "sha256:",
        "4d5611e5-241a-462a-8d15-5122611a9569",
        "data:image/png;base64,",
        "--- PASS: Test",
        "sk_learn_model",
        "`sk-ant-...`",
        "[REDACTED]",
        "REDACTED_EMAIL",
        "[REDACTED:github-token]",
        'password=""',
        "password=None",
        "password=${DB_PASSWORD}",
        "<your-token>",
    ):
        assert needle in LOOKALIKES_TEXT, needle
    assert len(LOOKALIKE_LINES) >= 100


@pytest.mark.parametrize("line", LOOKALIKE_LINES)
def test_every_lookalike_line_stays_byte_identical(line: str):
    """Hashes, ids, identifiers and placeholders are not secrets; redacting them loses meaning."""
    result = default_redactor().redact(line)
    assert result.text == line
    assert result.total == 0


def test_lookalike_file_as_one_text_stays_byte_identical():
    """Multi-line cases (public PEM blocks, Go test runs) survive when read together."""
    result = default_redactor().redact(LOOKALIKES_TEXT)
    assert result.text == LOOKALIKES_TEXT
    assert dict(result.counts) == {}


# --------------------------------------------------------------------------------------------
# Idempotence
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [e["text"] for e in SECRETS] + [LOOKALIKES_TEXT, "\n".join(e["text"] for e in SECRETS)],
)
def test_redacting_twice_is_the_same_as_once(text: str):
    """Re-ingest and already-redacted input must not grow markers or change counts."""
    once = default_redactor().redact(text)
    twice = default_redactor().redact(once.text)
    assert twice.text == once.text
    assert twice.total == 0


# --------------------------------------------------------------------------------------------
# Extra patterns from the config file
# --------------------------------------------------------------------------------------------
def test_extra_pattern_replaces_the_whole_match_under_its_kind():
    """A team's own credential format is redacted next to the built-in kinds."""
    redactor = Redactor({"acme-key": r"ACME-[0-9A-F]{12}"})
    text = (
        "key ACME-0123456789AB and export GITHUB_TOKEN=ghp_EXAMPLE0123456789abcdefghijklmnopqrstu"
    )
    result = redactor.redact(text)
    assert result.text == "key [REDACTED:acme-key] and export GITHUB_TOKEN=[REDACTED:github-token]"
    assert dict(result.counts) == {"acme-key": 1, "github-token": 1}


def test_extra_pattern_with_a_group_replaces_only_the_group():
    """A capturing group keeps its context: `ticket=` stays, the value goes."""
    result = Redactor({"ticket": r"ticket=([a-z0-9]{8})"}).redact("GET /x?ticket=ab12cd34&y=1")
    assert result.text == "GET /x?ticket=[REDACTED:ticket]&y=1"


def test_extra_pattern_whose_group_did_not_take_part_replaces_the_whole_match():
    """`id=(\\d+)|ACME-\\w+`: the second alternative has no group, so all of it goes."""
    result = Redactor({"acme": r"id=(\d{6})|ACME-\w{6}"}).redact("id=123456 and ACME-abc123")
    assert result.text == "id=[REDACTED:acme] and [REDACTED:acme]"


def test_extra_pattern_that_matches_empty_text_changes_nothing():
    """A pattern such as `x*` matches the empty string everywhere; empty spans are ignored."""
    result = Redactor({"odd": "x*"}).redact("abc")
    assert result.text == "abc"
    assert result.total == 0


def test_extra_patterns_keep_redaction_idempotent():
    """A user pattern does not match inside our own markers on the second pass."""
    redactor = Redactor({"word": r"REDACTED|acme-[a-z]+"})
    once = redactor.redact("id acme-widget here")
    assert once.text == "id [REDACTED:word] here"
    assert redactor.redact(once.text).text == once.text


def test_bad_extra_regex_raises_usage_error_naming_the_kind_and_the_error():
    """A typo in config.toml is the user's to fix: say which pattern and what is wrong."""
    with pytest.raises(UsageError) as info:
        Redactor({"acme-key": "ACME-([0-9"})
    message = str(info.value)
    assert "acme-key" in message
    assert "unterminated character set" in message or "missing )" in message
    assert "[redaction]" in message
    assert info.value.exit_code == 2


@pytest.mark.parametrize("kind", ["", "has space", "bad]kind", "x" * 80])
def test_extra_pattern_kind_must_be_a_short_name(kind: str):
    """The kind goes into `[REDACTED:<kind>]`; brackets or spaces there would break markers."""
    with pytest.raises(UsageError, match="kind name"):
        Redactor({kind: "abc"})


# --------------------------------------------------------------------------------------------
# Real transcripts
# --------------------------------------------------------------------------------------------
# Redactions the shared transcripts are known to produce. The corpus was scanned upstream for
# credentials and holds none; this one is a literal test value assigned to Phoenix's
# `secret_key_base` in a config file the session wrote. Redacting a literal assigned to a
# secret name is the intended behaviour, so it is listed rather than avoided.
KNOWN_TRANSCRIPT_HITS = {
    (
        "env-secret",
        "test-only-secret-base-minimum-64-bytes-long-enough-for-phoenix-token-signing-ok",
    ),
}


def test_real_transcripts_lose_nothing_but_the_known_test_secret(shared_transcripts: Path):
    """Ordinary Claude Code text (code, logs, diffs, prose, thinking) passes through unchanged.

    Upper bound: the 35 MB corpus has no real credentials (SOURCES.md: regex scan plus
    detect-secrets found none), so every redaction here is a false positive unless listed in
    KNOWN_TRANSCRIPT_HITS. We allow at most those, and the exact set is asserted so a new
    false positive fails loudly with its text.
    """
    redactor = default_redactor()
    texts = transcript_texts(shared_transcripts, thinking=True)
    assert sum(map(len, texts)) > 5_000_000  # the walk found the corpus
    hits: set[tuple[str, str]] = set()
    changed = 0
    for text in texts:
        spans = redactor.spans(text)
        if spans:
            changed += 1
            hits |= {(kind, text[s:e]) for s, e, kind in spans}
        else:
            assert redactor.redact(text).text == text
    assert hits <= KNOWN_TRANSCRIPT_HITS, hits - KNOWN_TRANSCRIPT_HITS
    assert changed <= 3


def test_upstream_redaction_markers_in_transcripts_survive(shared_transcripts: Path):
    """Entire's `REDACTED`/`[REDACTED]` and spotter's `[REDACTED_SIGNATURE]` are left as they are."""
    texts = [t for t in transcript_texts(shared_transcripts, thinking=True) if "REDACTED" in t]
    assert texts
    for text in texts:
        assert default_redactor().redact(text).text.count("REDACTED") == text.count("REDACTED")


# --------------------------------------------------------------------------------------------
# Inputs of every shape
# --------------------------------------------------------------------------------------------
def test_unicode_around_a_secret_is_kept_exactly():
    """Non-ASCII and astral characters before a secret must not shift the replaced span."""
    token = "xoxb-123456789012-1234567890123-EXAMPLEabcdefghij0123456"
    text = f"Grüße 👋🏽 {token} 東京 עברית 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\nPASSWORD='pässwört-Ünï-42' ✓"
    result = default_redactor().redact(text)
    assert result.text == (
        "Grüße 👋🏽 [REDACTED:slack-token] 東京 עברית 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\nPASSWORD='[REDACTED:env-secret]' ✓"
    )
    assert dict(result.counts) == {"slack-token": 1, "env-secret": 1}


def test_empty_and_tiny_inputs():
    """Edge sizes return the input unchanged and an empty count."""
    for text in ("", "a", "@", "K", "J", "z", "B", "-----BEGIN", "password="):
        result = default_redactor().redact(text)
        assert result.text == text
        assert result.total == 0


def test_a_five_megabyte_text_is_redacted_completely():
    """A huge tool output (5 MB) with secrets spread through it loses every one of them."""
    filler = LOOKALIKES_TEXT
    secrets = [e for e in SECRETS if len(e["secrets"]) == 1][:20]
    parts: list[str] = []
    size = 0
    i = 0
    while size < 5_000_000:
        parts.append(filler)
        entry = secrets[i % len(secrets)]
        parts.append("\n" + entry["text"] + "\n")
        size += len(filler) + len(entry["text"]) + 2
        i += 1
    text = "".join(parts)
    result = default_redactor().redact(text)
    assert len(text) >= 5_000_000
    assert result.total == i
    for entry in secrets:
        for _, value in entry["secrets"]:
            assert value not in result.text
    assert result.text.count(LOOKALIKES_TEXT) == i  # the filler is untouched


@pytest.mark.parametrize(
    "unit",
    ["KEY=", "@", "eyJ", "AIza", "-----BEGIN RSA PRIVATE KEY-----\n", "token: ", 'password="a\\'],
)
def test_adversarial_repetition_is_handled(unit: str):
    """Dense anchors and long runs (bench/redact.py times them) give sane, idempotent results."""
    text = unit * (200_000 // len(unit))
    once = default_redactor().redact(text)
    assert default_redactor().redact(once.text).text == once.text


# --------------------------------------------------------------------------------------------
# API
# --------------------------------------------------------------------------------------------
def test_default_redactor_is_built_once():
    """Ingest asks for it per chunk; compiling the detectors again would waste time."""
    assert default_redactor() is default_redactor()


def test_redaction_result_is_immutable():
    """Results are shared values: neither the text nor the counts can be changed in place."""
    result = default_redactor().redact("DB_PASSWORD=hunter2-EXAMPLE")
    with pytest.raises(AttributeError):
        result.text = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.counts["env-secret"] = 0  # type: ignore[index]
    assert result.total == 1


def test_every_reported_kind_is_documented():
    """Kinds appear in the README; a kind without a description is a kind nobody can look up."""
    kinds = {kind for e in SECRETS for kind, _ in e["secrets"]}
    assert kinds <= set(KINDS)
    assert all(KINDS[k] for k in KINDS)

"""Error signatures: what makes two failures "the same error", without any model.

A signature is the failing program (for Bash: the program and its subcommand, `go test`,
`mise run`, `npx tsc`; for other tools: the tool name) plus the error message with the parts
that differ between runs replaced by placeholders: paths, temporary names, hashes, UUIDs,
numbers, durations and line:column positions. Two hashes are kept: `sig_hash` (program and
message) and `msg_hash` (message only), so a lookup can tell an exact match from the same
message printed by a different command.

This module is on the PostToolUse hook's fast path: standard library only (`re`, `hashlib`; the
leaf `causantic.tokens` is stdlib only too),
patterns compiled on first use.
"""

from __future__ import annotations

import re

from causantic.tokens import clip

try:  # CPython's built-in SHA-1: importing hashlib loads OpenSSL (~7 ms of every hook run)
    from _sha1 import sha1  # type: ignore[import-not-found]  # private; typeshed has no stub
except ImportError:  # pragma: no cover - a build without the built-in hashes
    from hashlib import sha1

_compiled: dict[str, re.Pattern[str]] = {}


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    rx = _compiled.get(pattern)
    if rx is None:
        rx = _compiled[pattern] = re.compile(pattern, flags)
    return rx


_ANSI = r"\x1b\[[0-9;?]*[A-Za-z]|\[[0-9;]{1,8}m"
_UUID = r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
_HASH = r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b"
_TMP = r"\b(?:tmp|temp)[\w.-]*|\b[\w-]*\.(?:tmp|temp)\b"
_PATH = r"(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?|\b[\w.@+-]+(?:/[\w.@+-]+)+/?"
_FILE = r"\b[\w-]+(?:\.[\w-]+)*\.(?:py|go|ts|tsx|js|jsx|mjs|rs|ex|exs|rb|java|kt|c|h|cc|cpp|hpp|cs|swift|json|toml|yaml|yml|md|txt|lock|sh|sql|html|css|vue)\b"
_NUMBER = r"(?<!\w)\d+(?:\.\d+)*(?:ms|s|kb|mb|gb|b)?\b"
_CLASS = (
    r"\b([A-Z][A-Za-z]*(?:Error|Exception|Exit|Interrupt))\b"  # ModuleNotFoundError, ...
    r"|\b(error\s+(?:TS|CS)\d{3,5})\b|\b(E\d{4})\b"              # tsc, csc, rustc codes
    r"|\b(panic|fatal|undefined|EISDIR|ENOENT|EACCES|EADDRINUSE)\b|(--- FAIL\b)"
)
_PLACEHOLDER = r"<(?:path|file|tmp|hash|uuid|n)>"
_WORD = r"[A-Za-z][A-Za-z_'-]{2,}"
#: Shell words that start a command but say nothing of the program.
_PREFIX_WORDS = frozenset({"sudo", "time", "env", "nice", "exec", "command", "uv", "poetry"})
#: Messages that say an error happened but not which: never signatures of their own.
_GENERIC = frozenset({
    "error", "failed", "exit code <n>", "error: exit code <n>", "command failed",
    "[… <n> lines omitted; error lines kept …]", "traceback (most recent call last):",
    "fail", "failed.", "build failed", "errors", "error:", "error task failed",
    "task failed", "file does not exist.", "no such file or directory",
})
_GENERIC_START = ("checking <n> source file", "[… <n> lines omitted", "exit code <n>",
                  "fail <path> [", "fail . [", "fail <file> [")  # go: FAIL pkg [build failed]
#: Words of the normalised message that make up its key: enough to name the error, few
#: enough that a message clipped in one transcript and whole in another still match.
KEY_WORDS = 10


def normalise(message: str) -> str:
    """The message with run-specific parts replaced: `<path>`, `<file>`, `<tmp>`, `<hash>`,
    `<uuid>`, `<n>`; lower case, single spaces, at most 200 characters."""
    text = _rx(_ANSI).sub("", message)
    text = _rx(r"^\s*(?:\[[^\]\n]{1,30}\]\s*)+").sub("", text)  # `[lint:go] `, `[test] `
    text = _rx(_UUID, re.I).sub("<uuid>", text)
    text = _rx(_PATH).sub("<path>", text)
    text = _rx(_TMP, re.I).sub("<tmp>", text)
    text = _rx(_FILE).sub("<file>", text)
    text = _rx(_HASH, re.I).sub("<hash>", text)
    text = _rx(_NUMBER).sub("<n>", text)
    text = _rx(r"<path>(?::<n>)+|<file>(?::<n>)+").sub(lambda m: m.group(0).split(":")[0], text)
    text = " ".join(text.lower().split())
    return text[:200]


_SPECIFIC = (
    r"\b[A-Z]\w*(?:Error|Exception)\b:\s*\S"       # ModuleNotFoundError: No module named 'x'
    r"|\berror(?:\[\w+\])?:\s*\S|\berror TS\d+|^--- FAIL|^fatal:|^npm ERR! code"
    r"|^Error: \S|^panic:|^\*\* \(\w+"                  # terraform/go, Elixir `** (RuntimeError)`
)


def best_line(text: str) -> str:
    """The most specific error line of a tool's output: one naming an error class with its
    message (`ModuleNotFoundError: No module named 'shop'`), a compiler's `error:`/`error TS…`,
    `--- FAIL`, `fatal:`; '' when no line is that specific. pytest's `E   ` prefix is dropped.
    """
    rx = _rx(_SPECIFIC)
    for line in text.splitlines()[:2000]:
        line = line.strip()
        if line.startswith("E   "):
            line = line[4:].strip()
        if line and rx.search(line):
            return clip(line, 200)
    return ""


_ERROR_LINE = r"error|fail|panic|exception|traceback|fatal|denied|not found|cannot|undefined|no such"
_TRIVIAL_LINE = r"^(exit code \d+|\[\w+\] \$ .*|error:?)$"


def is_error_line(line: str) -> bool:
    """Whether a line of output looks like it reports an error (as `causantic.derive_state`
    decides which line of a failed command is its message)."""
    return bool(_rx(_ERROR_LINE, re.I).search(line))


def error_line(tool: str, text: str) -> str:
    """The line that names the error in a failed call's output: `best_line` for Bash, else the
    first informative error line (a tool's own first line), at most 200 characters.

    Ingest (`causantic.lessons.episodes`) and the hook both call this, so a stored lesson and a
    live error are cut the same way.
    """
    if tool == "Bash":
        best = best_line(text)
        if best:
            return best
    lines = [_rx(r"</?tool_use_error>").sub("", line).strip() for line in text.strip().splitlines()]
    lines = [line for line in lines if line]
    trivial = _rx(_TRIVIAL_LINE, re.I)
    informative = [line for line in lines if not trivial.match(line)]
    found = None
    if tool == "Bash":
        found = next((line for line in informative if is_error_line(line)), None)
    found = found or (informative[0] if informative else (lines[0] if lines else "error"))
    return clip(found, 200)


def error_class(message: str) -> str:
    """The error's class when the message names one (`ModuleNotFoundError`, `error TS2322`,
    `E0308`, `--- FAIL`, `panic`), else ''."""
    m = _rx(_CLASS).search(message)
    if not m:
        return ""
    return next(g for g in m.groups() if g)


def informative(normalised: str, klass: str = "") -> bool:
    """Whether a normalised message can identify an error: not a bare "Exit code 1" or
    "FAILED", and at least three words once placeholders are removed (or an error class)."""
    if normalised in _GENERIC or normalised.startswith(_GENERIC_START):
        return False
    words = _rx(_WORD).findall(_rx(_PLACEHOLDER).sub(" ", normalised))
    return len(words) >= 3 or (len(words) >= 1 and bool(klass or error_class(normalised)))


def program(tool: str, subject: str) -> str:
    """What failed: for Bash, the program and its subcommand (`go test`, `mise run`);
    for any other tool, its name (`Edit`, `Read`, `mcp__linear__create_issue`)."""
    if tool != "Bash":
        return tool
    cmd = _rx(r"^\s*cd\s+\S+\s*(?:&&|;)\s*").sub("", subject)
    words = [w for w in cmd.split() if w]
    while words and (_rx(r"^[A-Za-z_][A-Za-z0-9_]*=").match(words[0])
                     or words[0] in _PREFIX_WORDS):
        words.pop(0)
    out: list[str] = []
    for word in words:
        if word.startswith("-") or word in ("|", "&&", ";", "||") or "/" in word or "=" in word:
            break
        out.append(word.strip("'\""))
        if len(out) == 2:
            break
    return " ".join(out).lower()[:60]


def digest(*parts: str) -> str:
    """A short stable hash of the parts."""
    return sha1("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:20]


class Signature:
    """One error's identity: program, error class, normalised message and its two hashes."""

    __slots__ = ("program", "error_class", "message", "sig_hash", "msg_hash", "informative")

    def __init__(self, tool: str, subject: str, message: str) -> None:
        self.program = program(tool, subject)
        self.message = normalise(message)
        self.error_class = error_class(message)
        key = " ".join(self.message.split()[:KEY_WORDS])
        self.sig_hash = digest(self.program, key)
        self.msg_hash = digest(key)
        self.informative = informative(self.message, self.error_class)

    def __repr__(self) -> str:
        return f"Signature({self.program!r}, {self.message!r})"

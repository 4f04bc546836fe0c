"""Text hygiene at ingest: terminal escape sequences out, causantic's own output recognised.

Tool output in transcripts often carries what a terminal would have interpreted: colour codes
(CSI ``ESC[36m``), cursor and mode switches (``ESC[?2004l``, ``ESC=``), window titles and
hyperlinks (OSC ``ESC]8;;url ESC\\``). They are noise to a reader, split words for BM25 and
shift embeddings, so every text a turn keeps passes through `strip_terminal`. A hyperlink keeps
its visible text; nothing else of a sequence is kept.

causantic's own output must never become memory (a search result quoted in a later session
would outrank, and near-duplicate away, the session that really holds the answer):

* context our hooks inject is wrapped in `markers.MEMORY_OPEN`/`MEMORY_CLOSE`; `strip_memory`
  cuts such blocks from any text (prompt, tool output, assistant text), including one
  truncated before its closing tag (Claude Code shortens long hook output);
* the results of our MCP tools are recognised by the tool name (`is_own_tool`):
  ``mcp__causantic__search``, or ``mcp__plugin_<plugin>_causantic__search`` when the server
  comes from a plugin.

Standard library only (`re`): the parser imports it on every ingest.
"""

from __future__ import annotations

import re

from causantic.markers import MEMORY_CLOSE, MEMORY_OPEN

# OSC / DCS / SOS / PM / APC strings end at BEL or ST (ESC \); an unterminated one runs to the
# end of the line. CSI: ESC [ params intermediates final. Then any other escape (nF, Fp, Fe,
# Fs: ESC, optional intermediates 0x20-0x2F, a final 0x30-0x7E), the 8-bit CSI, and a stray
# ESC. An OSC 8 hyperlink is two OSC strings around the visible text, which stays.
_ESCAPE_RE = re.compile(
    r"\x1b[\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
    r"|\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?"
)
_MEMORY_RE = re.compile(re.escape(MEMORY_OPEN) + r"[\s>].*?" + re.escape(MEMORY_CLOSE), re.S)
_OPEN_RE = re.compile(re.escape(MEMORY_OPEN) + r"[\s>]")
_OWN_TOOL_RE = re.compile(r"^mcp__(?:plugin_[A-Za-z0-9_-]*?_)?causantic__")


def strip_terminal(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves, titles, links)."""
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return _ESCAPE_RE.sub("", text)


def strip_memory(text: str) -> str:
    """``text`` without the context causantic injected (closed or truncated marker blocks)."""
    if MEMORY_OPEN not in text:
        return text
    text = _MEMORY_RE.sub("", text)
    cut = _OPEN_RE.search(text)
    return text if cut is None else text[: cut.start()]


def clean(text: str) -> str:
    """`strip_terminal` then `strip_memory`: what every stored text goes through."""
    return strip_memory(strip_terminal(text))


def is_own_tool(name: str) -> bool:
    """Whether a tool name is one of causantic's MCP tools (their output is not memory)."""
    return name.startswith("mcp__") and _OWN_TOOL_RE.match(name) is not None

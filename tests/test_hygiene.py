"""Text hygiene at ingest: terminal escapes stripped, IDE-context prompts keep their typed
text, our own injected context recognised wherever it appears."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from causantic.config import load_settings
from causantic.ingest.run import run_ingest
from causantic.markers import wrap_memory
from causantic.retrieval.search import search
from causantic.store import open_store
from causantic.transcripts.hygiene import is_own_tool, strip_memory, strip_terminal
from causantic.transcripts.turns import parse_transcript

from .conftest import SHARED_TRANSCRIPTS

ESC = "\x1b"


def test_strip_terminal_removes_every_kind_of_escape_and_keeps_the_words() -> None:
    """Colours, modes, charset switches, titles and hyperlinks go; visible text stays."""
    raw = (f"{ESC}[36m<ref *2>{ESC}[39m {ESC}[1;32mok{ESC}[0m {ESC}[?2004l{ESC}=keypad{ESC}>"
           f" {ESC}(Bascii {ESC}]0;window title\x07done {ESC}]8;;https://x.dev/a{ESC}\\link"
           f"{ESC}]8;;{ESC}\\ \x9b31mc1{ESC}[K{ESC}[2J end{ESC}")
    assert strip_terminal(raw) == "<ref *2> ok keypad ascii done link c1 end"
    assert strip_terminal(strip_terminal(raw)) == strip_terminal(raw)
    plain = "no escapes [36m here"
    assert strip_terminal(plain) is plain


def test_strip_memory_cuts_closed_and_truncated_blocks() -> None:
    """Claude Code shortens long hook output, so a block may lose its closing tag."""
    block = wrap_memory("briefing text", "briefing")
    assert strip_memory(f"before {block} after") == "before  after"
    assert strip_memory(f"keep this {block[:30]}") == "keep this "
    assert strip_memory("<causantic-memoryless> is not ours") == "<causantic-memoryless> is not ours"


def test_own_tools_are_recognised_by_server_name_only() -> None:
    """Our MCP server, direct or from a plugin; nobody else's tool."""
    assert is_own_tool("mcp__causantic__search")
    assert is_own_tool("mcp__plugin_causantic_causantic__recall")
    assert not is_own_tool("mcp__linear-server__list_issues")
    assert not is_own_tool("mcp__causantic_fork__search") and not is_own_tool("Bash")


def _ingest(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "t"
    for name in names:
        target = folder / name.replace("/", "__")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SHARED_TRANSCRIPTS / name, target)
    settings = load_settings(db=tmp_path / "memory.db", env={"HOME": str(tmp_path)})
    run_ingest(settings, [folder])
    return settings.db_path


def test_colour_codes_in_real_tool_output_are_stripped_and_words_become_searchable(
    tmp_path: Path, shared_transcripts: Path,
) -> None:
    """A spotter session printed coloured DOM dumps (`ESC[32mSymbol(listeners)ESC[39m`):
    stored text has no escapes, and `Symbol(isConnected)` is a word again, not `32msymbol`."""
    name = "marot__spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
    assert "\\u001b[32mSymbol(isConnected)" in (shared_transcripts / name).read_text()
    db = _ingest(tmp_path, name)
    with open_store(db, readonly=True) as store:
        dirty = store.conn.execute(
            "SELECT count(*) FROM chunks WHERE instr(text, char(27)) > 0").fetchone()[0]
        assert dirty == 0
        found = search(store, "Symbol(isConnected) HTMLElement", mode="keyword")
        assert any("Symbol(isConnected)" in h.text for h in found.results)
        assert not search(store, "32mSymbol", mode="keyword").results


def test_a_prompt_sent_with_ide_context_keeps_its_typed_text(tmp_path: Path,
                                                             shared_transcripts: Path) -> None:
    """The real VS Code prompt (an `<ide_opened_file>` block, then the typed block) opens
    its turn with the typed request, the opened file noted after it."""
    db = _ingest(tmp_path, "entireio__cli/c9/883595c929/0/full.jsonl")
    with open_store(db, readonly=True) as store:
        found = search(store, "CODEOWNERS cli-maintainers default", mode="keyword")
        top = found.results[0].text
        state = store.conn.execute(
            "SELECT state FROM session_state WHERE session_id = ?",
            (found.results[0].session_id,)).fetchone()
    assert top.startswith("[User]\ncreate me a .github/CODEOWNERS - attach the "
                          "@entireio/cli-maintainers group")
    assert "[IDE: opened /Users/alex/workspace/cli/mise.toml]" in top
    assert "<ide_opened_file>" not in top and "may or may not be related" not in top
    assert state is not None and "create me a .github/CODEOWNERS" in state[0]


def test_ide_selection_becomes_a_short_note_and_a_bare_ide_message_opens_nothing() -> None:
    """Selections keep their place and first lines; IDE context with no typed text is not a
    prompt (it never was)."""
    def user(content: object, n: int) -> str:
        return json.dumps({"type": "user", "sessionId": "s1", "uuid": f"u{n}",
                           "timestamp": f"2026-03-01T10:0{n}:00.000Z",
                           "message": {"role": "user", "content": content}})

    selection = ("<ide_selection>The user selected the lines 3 to 5 from /repo/app.py:\n"
                 "def handler(event):\n    return event['body']\n\n"
                 "This may or may not be related to the current task.</ide_selection>")
    lines = [
        user([{"type": "text", "text": "<ide_opened_file>The user opened the file /repo/x.py in "
               "the IDE. This may or may not be related to the current task.</ide_opened_file>"}], 1),
        user([{"type": "text", "text": selection},
              {"type": "text", "text": "why does this crash on empty events?"}], 2),
    ]
    parsed = parse_transcript("\n".join(lines).encode() + b"\n", default_session="s1")
    assert len(parsed.turns) == 1
    blocks = [(b.kind, b.text) for b in parsed.turns[0].blocks]
    assert blocks == [
        ("prompt", "why does this crash on empty events?"),
        ("note", "[IDE: selected lines 3-5 of /repo/app.py]\ndef handler(event):\n"
                 "    return event['body']"),
    ]

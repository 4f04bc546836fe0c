"""Markers shared by the hooks that inject context and the ingester that must skip it.

Text that causantic injects into a Claude Code session (the session-start briefing, prompt
recall) is wrapped in these tags. Claude Code persists injected context in the transcript, so
without the marker our own recall would be ingested and fed back to us.
"""

MEMORY_OPEN = "<causantic-memory"
MEMORY_CLOSE = "</causantic-memory>"


def wrap_memory(text: str, kind: str) -> str:
    """Wrap injected text so our ingester recognises and skips it later."""
    return f'{MEMORY_OPEN} kind="{kind}">\n{text}\n{MEMORY_CLOSE}'

"""`Chunk`: the stored unit of memory, as `chunking` makes it and `store.chunks` writes it.

A leaf module so the store can take chunks without importing the chunker (layers: see the
table in `tests/test_layers.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Chunk:
    """A stored unit of memory."""

    id: str
    session_id: str
    agent_id: str
    offset: int
    part: int
    turn: int
    kind: str
    start_time: str
    end_time: str
    text: str
    tokens: int
    redactions: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def meta_json(self) -> str:
        return json.dumps(self.meta, separators=(",", ":"), sort_keys=True)

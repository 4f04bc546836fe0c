"""`Record`: what a frozen dataclass gives, without importing dataclasses."""

from __future__ import annotations

import copy
import pickle

import pytest

from causantic.retrieval.render import Hit


def _hit(**changes: object) -> Hit:
    hit = Hit("c1", "s1", "p", "", "t0", "t1", 0.5, ("keyword",), "text")
    return hit.replace(**changes) if changes else hit


def test_records_are_read_only_values():
    hit = _hit()
    with pytest.raises(AttributeError, match="read-only Hit"):
        hit.score = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del hit.text
    assert hit == _hit() and hash(hit) == hash(_hit())
    assert hit != _hit(score=0.6) and hit != ("c1",)
    assert repr(hit).startswith("Hit(chunk_id='c1', session_id='s1'")


def test_replace_copy_and_pickle_keep_every_field():
    hit = _hit()
    other = hit.replace(score=0.9, seed=True)
    assert (other.score, other.seed, other.text, other.kind) == (0.9, True, "text", "turn")
    assert hit.score == 0.5  # the original is untouched
    assert copy.copy(hit) == hit and pickle.loads(pickle.dumps(other)) == other
    with pytest.raises(TypeError):
        hit.replace(no_such_field=1)

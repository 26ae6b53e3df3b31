"""Fixtures of the memory tests: hand-made items of real Spider databases."""

from __future__ import annotations

import pytest

from sqlmend.db import connect
from sqlmend.memory.items import LocalCheck, MemoryItem, SemanticContract, SourceSupport, StructuralSignature


def _make_item(db_id: str, kind: str, params: dict, keys: list[str], refs: list[str], qid: str = "h1") -> MemoryItem:
    """A mechanical item as the builder would store it (the tests' stand-in for history)."""
    return MemoryItem(
        db_id=db_id, kind=kind, error_type="value_error",
        contract=SemanticContract("applies", "wrong", "required", "repair"),
        signature=StructuralSignature(edits=[{"kind": "replace", "clause": "where"}], clauses=["where"],
                                      schema_refs=refs),
        check=LocalCheck("obs", "violation", params),
        support=SourceSupport(qid, "q", "wrong", "repair", "reverted"), keys=keys)


@pytest.fixture
def concert_db(spider_db):
    with connect(spider_db("concert_singer")) as db:
        yield db


@pytest.fixture
def make_item():
    """``make_item(db_id, kind, params, keys, refs, qid)`` -> a mechanical MemoryItem."""
    return _make_item

"""Structured output: validate with pydantic, retry once with the error, else a typed failure."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from sqlmend.errors import StructuredOutputError
from sqlmend.llm import ReplayBackend
from sqlmend.llm.structured import extract_json

MSG = [{"role": "system", "content": "You fix SQL."}, {"role": "user", "content": "Fix: SELEC 1"}]


class Fix(BaseModel):
    sql: str
    confidence: float = Field(ge=0, le=1)


def test_valid_first_answer():
    backend = ReplayBackend.scripted(['{"sql": "SELECT 1", "confidence": 0.9}'])
    res = backend.chat(MSG, schema=Fix)
    assert res.parsed == Fix(sql="SELECT 1", confidence=0.9) and res.attempts == 1
    system = backend.history[0]["messages"][0]["content"]
    assert system.startswith("You fix SQL.") and '"confidence"' in system  # schema in the prompt
    assert backend.history[0]["schema"]["title"] == "Fix"


def test_retry_carries_the_validation_error():
    backend = ReplayBackend.scripted(['{"sql": "SELECT 1", "confidence": 7}',
                                      'Sure!\n```json\n{"sql": "SELECT 1", "confidence": 0.5}\n```'])
    res = backend.chat(MSG, schema=Fix)
    assert res.parsed.confidence == 0.5 and res.attempts == 2
    retry = backend.history[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"sql": "SELECT 1", "confidence": 7}'}
    assert "less than or equal to 1" in retry[-1]["content"]
    assert res.usage.tokens_out == 5 + 8  # both attempts counted (scripted: words)


def test_garbage_twice_is_a_typed_failure():
    backend = ReplayBackend.scripted(["I think the SQL is fine.", "{not json"])
    with pytest.raises(StructuredOutputError, match="after one retry") as info:
        backend.chat(MSG, schema=Fix)
    assert info.value.raw == "{not json"
    assert len(backend.history) == 2
    # both calls were paid for: the error carries what they cost (scripted tokens: words)
    assert info.value.attempts == 2 and info.value.tokens_out == 6 + 2 and info.value.tokens_in > 0


def test_dict_schema():
    schema = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"},
                                                                     "n": {"type": "integer"}}}
    backend = ReplayBackend.scripted(['{"n": 1}', '{"error": "none", "n": "x"}'])
    with pytest.raises(StructuredOutputError, match="n: expected integer"):
        backend.chat(MSG, schema=schema)
    backend = ReplayBackend.scripted(['{"error": "table", "n": 2}'])
    assert backend.chat(MSG, schema=schema).parsed == {"error": "table", "n": 2}


@pytest.mark.parametrize("text", ['{"a": 1}', '```json\n{"a": 1}\n```', 'Answer: {"a": 1} done'])
def test_extract_json(text):
    assert extract_json(text) == {"a": 1}


def test_extract_json_refuses_prose():
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("no braces here")

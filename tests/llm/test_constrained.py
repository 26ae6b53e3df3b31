"""Constrained decoding: JSON schemas and the SQL grammar of a real Spider database, on the
real SmolLM2 (directly and through ``serve-model`` over loopback HTTP), and the OpenAI
backend's ``response_format`` with its fallback for servers that reject it."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from sqlmend import db, sql
from sqlmend.llm import CallLog, ChatOptions, constrained, sqlgrammar
from sqlmend.llm.local import TransformersBackend
from sqlmend.llm.openai_compat import OpenAIBackend, response_format_support
from sqlmend.llm.server import ServerThread

from test_openai_http import SMOL, Fault, completion

pytestmark = pytest.mark.skipif(not constrained.available(), reason="llguidance not installed")


class Capital(BaseModel):
    city: str = Field(description="the capital")
    sure: bool


class Answer(BaseModel):
    sql: str = Field(description="one SQLite SELECT")


ASK_CAPITAL = [{"role": "user", "content": "What is the capital of France?"}]
ASK_SQL = [{"role": "user", "content": "Database: singer(Singer_ID, Name, Country, Age). "
                                       "Write the SQL for: how many singers are there?"}]


@pytest.fixture(scope="module")
def concert_singer(spider_db):
    return db.connect(spider_db("concert_singer"))


def accepts(lltok, json_schema: dict, text: str) -> bool:
    from llguidance import LLMatcher

    m = LLMatcher(lltok, constrained.grammar_for(json_schema), log_level=0)
    toks = lltok.tokenize_str(text)
    return m.validate_tokens(toks) == len(toks)


# --- the SQL grammar, without generating ------------------------------------------------


def test_sql_grammar_accepts_real_columns_and_rejects_others(concert_singer, lltok):
    js = sqlgrammar.mark(Answer.model_json_schema(), concert_singer.schema())
    aliased = sqlgrammar.mark(Answer.model_json_schema(), concert_singer.schema(),
                              original="SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 "
                                       "ON T1.Singer_ID = T2.Singer_ID")

    def ok(q: str, schema: dict = js) -> bool:
        return accepts(lltok, schema, json.dumps({"sql": q}))

    assert ok("SELECT COUNT(*) FROM singer")
    assert ok("SELECT T1.Name, COUNT(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON "
              "T1.Singer_ID = T2.Singer_ID GROUP BY T1.Singer_ID ORDER BY COUNT(*) DESC LIMIT 1", aliased)
    assert ok("SELECT singer.Name, COUNT(*) FROM singer JOIN singer_in_concert ON "  # no original:
              "singer.Singer_ID = singer_in_concert.Singer_ID GROUP BY singer.Singer_ID")  # FK pairs
    assert ok("SELECT Name FROM singer WHERE Singer_ID NOT IN (SELECT Singer_ID FROM "
              "singer_in_concert) AND Country = 'France'")
    assert not ok("SELECT Nmae FROM singer")            # no such column
    assert not ok("SELECT Name FROM singers")           # no such table
    assert not ok("SELECT singer.Theme FROM singer")    # Theme is concert's, not singer's
    assert not ok("SELECT Name FROM singer; DROP TABLE singer")


def test_objects_decode_only_their_declared_keys(lltok):
    from sqlmend.refine.localize import LocalizationAnswer

    js = LocalizationAnswer.model_json_schema()  # pydantic would accept any extra key
    assert accepts(lltok, js, json.dumps({"errors": [{"error_type": "value_error", "nodes": ["where"]}]},
                                         separators=(", ", ": ")))
    # what SmolLM2 wrote as LocLLM on 2026-12-01 before the bound: a key of its own, nested
    assert not accepts(lltok, js, '{"error_type": "ErrorType", "nodes": [{"description": "ErrorType"}]}')


def test_closing_keeps_the_tokens_that_only_close(smol):
    import numpy as np

    tok = smol.loaded[1]
    one = {t: tok.encode(t, add_special_tokens=False) for t in ('"}', '",', "'", "')", "''")}
    assert all(len(ids) == 1 for ids in one.values()), one
    ids = {t: v[0] for t, v in one.items()}
    c = constrained.Constrainer(tok)
    proc = constrained.GrammarProcessor(None, c.closing, close_at=0, tokenizer=tok)

    def kept(text: str, allowed: list[str]) -> set[str]:
        blocked = np.ones(len(tok), dtype=bool)
        blocked[[ids[t] for t in allowed]] = False
        out = proc._closing(blocked, text)
        return {t for t in ids if not out[ids[t]]}

    # '",' closes the string but opens the next property; '"}' ends the answer
    assert kept('{"a": "x', ['"}', '",']) == {'"}'}
    assert kept('{"a": "x', ['",']) == {'",'}  # when nothing else closes
    # inside a SQL string only a lone quote ends it: not ') (text of the string), not ''
    assert kept('{"sql": "SELECT a FROM t WHERE b = ' + "'x", ["'", "')", "''"]) == {"'"}


def test_marks_stay_out_of_the_prompt_and_plain_servers(concert_singer):
    from sqlmend.llm.structured import instruction

    js = sqlgrammar.mark(Answer.model_json_schema(), concert_singer.schema())
    assert sqlgrammar.marked(js) and not sqlgrammar.marked(sqlgrammar.unmark(js))
    assert sqlgrammar.SQL_KEY not in instruction(js)
    with pytest.raises(ValueError, match="no string property"):
        sqlgrammar.mark(Capital.model_json_schema(), concert_singer.schema(), field="sure")


# --- the real model --------------------------------------------------------------------


def test_structured_call_is_valid_at_the_first_try(tmp_path):
    log = CallLog(tmp_path / "llm.sqlite")
    smol = TransformersBackend(device="cpu", log=log)
    res = smol.chat(ASK_CAPITAL, {"max_tokens": 24}, schema=Capital, stage="judge")
    assert res.attempts == 1 and isinstance(res.parsed, Capital)
    assert res.raw["constrained"] == "llguidance" and res.raw["constraint_steps"] >= res.usage.tokens_out
    (row,) = log.calls()
    assert (row["schema_valid"], row["attempt"], row["constrained"]) == (1, 1, "llguidance")


def test_free_decoding_when_turned_off(smol, monkeypatch):
    monkeypatch.setenv("SQLMEND_LLM_CONSTRAIN", "0")
    free = TransformersBackend(device="cpu")
    free._loaded = smol.loaded  # same weights, no second load
    assert not free.constrain
    res = free._chat(ASK_CAPITAL, ChatOptions(max_tokens=4), Capital.model_json_schema())
    assert "constrained" not in res.raw


def test_sql_answers_parse_and_name_only_schema_columns(smol, concert_singer):
    schema = concert_singer.schema()
    res = smol.chat(ASK_SQL, {"max_tokens": 24}, schema=Answer, sql_schema=schema, stage="refiner")
    assert res.attempts == 1
    text = res.parsed.sql
    tree = sql.parse(text, dialect="sqlite")
    known = {c.name.lower() for t in schema.tables for c in t.columns}
    tables = {t.name.lower() for t in schema.tables}
    feats = sql.features(tree, schema.mapping())
    assert feats.table_names <= tables
    assert {c.column.lower() for c in feats.all_columns()} <= known
    concert_singer.execute(text)  # and it runs


# --- serve-model honours response_format over loopback HTTP ------------------------------


def test_serve_model_decodes_under_response_format(model_server):
    schema = Capital.model_json_schema()
    body = {"model": SMOL, "messages": ASK_CAPITAL, "max_tokens": 24,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "Capital", "schema": schema}}}
    r = httpx.post(f"{model_server.url}/chat/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    Capital.model_validate_json(r.json()["choices"][0]["message"]["content"])
    bad = httpx.post(f"{model_server.url}/chat/completions", timeout=30,
                     json={**body, "response_format": {"type": "grammar"}})
    assert bad.status_code == 400


def test_openai_backend_gets_valid_json_from_serve_model(model_server):
    backend = OpenAIBackend(SMOL, base_url=model_server.url, api_key_env="SQLMEND_TEST_KEY")
    res = backend.chat(ASK_CAPITAL, {"max_tokens": 24}, schema=Capital)
    assert res.attempts == 1 and isinstance(res.parsed, Capital)
    assert res.raw["constrained"] == "response_format"
    assert response_format_support(model_server.url, SMOL) is True


# --- response_format fallback ---------------------------------------------------------


def test_rejected_response_format_falls_back_once_and_is_remembered(tmp_path):
    async def answer(n):
        if "response_format" in fault.requests[-1]:
            return JSONResponse({"error": {"message": "response_format is not supported"}}, 400)
        return JSONResponse(completion('{"city": "Paris", "sure": true}'))

    fault = Fault(answer)
    with ServerThread(fault.app) as server:
        log = CallLog(tmp_path / "llm.sqlite")
        backend = fault.backend(server, log=log)
        first = backend.chat(ASK_CAPITAL, schema=Capital)
        assert first.parsed == Capital(city="Paris", sure=True) and "constrained" not in first.raw
        assert ["response_format" in r for r in fault.requests] == [True, False]
        assert response_format_support(server.url, "fault") is False
        backend.chat([{"role": "user", "content": "And of Spain?"}], schema=Capital)
        assert ["response_format" in r for r in fault.requests] == [True, False, False]
        assert [r["schema_valid"] for r in log.calls()] == [1, 1]


def test_schema_mode_does_not_fall_back():
    async def answer(n):
        return JSONResponse({"error": {"message": "response_format is not supported"}}, 400)

    fault = Fault(answer)
    with ServerThread(fault.app) as server:
        with pytest.raises(Exception, match="HTTP 400"):
            fault.backend(server, json_mode="schema").chat(ASK_CAPITAL, schema=Capital)
        assert len(fault.requests) == 1


def test_sql_marks_are_not_sent_to_plain_servers(concert_singer):
    async def answer(n):
        return JSONResponse(completion('{"sql": "SELECT 1"}'))

    fault = Fault(answer)
    with ServerThread(fault.app) as server:
        fault.backend(server).chat(ASK_SQL, schema=Answer, sql_schema=concert_singer.schema())
        fault.backend(server, send_sql_grammar=True).chat(ASK_SQL, {"max_tokens": 9}, schema=Answer,
                                                            sql_schema=concert_singer.schema())
    sent = [r["response_format"]["json_schema"]["schema"] for r in fault.requests]
    assert not sqlgrammar.marked(sent[0]) and sqlgrammar.marked(sent[1])

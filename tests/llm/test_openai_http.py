"""The OpenAI-compatible backend over real HTTP on 127.0.0.1: against the OpenAI-protocol
server serving the real SmolLM2 and MiniLM, and against small fault servers (a time-out,
429 then success, 5xx, 4xx, invalid JSON for a schema request)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from sqlmend.errors import ModelError, ModelTimeout, StructuredOutputError
from sqlmend.llm import CallLog
from sqlmend.llm.openai_compat import OpenAIBackend
from sqlmend.llm.server import ServerThread

SMOL = "SmolLM2-135M-Instruct"
MSG = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


def completion(text: str) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fault",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


class Fault:
    """A tiny OpenAI-protocol server whose answers are scripted per request number."""

    def __init__(self, answer):
        self.requests: list[dict] = []
        self.app = FastAPI()

        @self.app.post("/v1/chat/completions")
        async def chat(request: Request):
            self.requests.append(await request.json())
            return await answer(len(self.requests))

    def backend(self, server: ServerThread, **kw) -> OpenAIBackend:
        kw.setdefault("backoff", 0.01)
        return OpenAIBackend("fault", base_url=server.url, api_key_env="SQLMEND_TEST_KEY", **kw)


# --- the real local model behind the protocol ------------------------------------


def test_chat_over_http_matches_the_local_model(model_server, smol):
    backend = OpenAIBackend(SMOL, base_url=model_server.url, api_key_env="SQLMEND_TEST_KEY")
    res = backend.chat(MSG, {"max_tokens": 12})
    direct = smol.chat(MSG, {"max_tokens": 12})
    assert res.text == direct.text and "Paris" in res.text
    assert (res.usage.tokens_in, res.usage.tokens_out) == (direct.usage.tokens_in,
                                                           direct.usage.tokens_out)
    assert res.backend == "openai" and res.raw["model"] == SMOL and res.finish_reason


def test_embeddings_over_http_match_the_local_embedder(model_server, minilm):
    backend = OpenAIBackend(SMOL, base_url=model_server.url, api_key_env="SQLMEND_TEST_KEY",
                            embed_model="all-MiniLM-L6-v2")
    texts = ["How many singers do we have?", "What is the total number of singers?",
             "List the stadiums with a capacity above 5000."]
    vectors = backend.embed(texts)
    assert vectors.shape == (3, 384)
    assert np.allclose(vectors, minilm.embed(texts), atol=1e-6)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2]


def test_check_lists_models_and_calls(model_server):
    backend = OpenAIBackend(SMOL, base_url=model_server.url, api_key_env="SQLMEND_TEST_KEY")
    assert backend.check().startswith("chat ok")


def test_http_calls_go_through_the_call_log(model_server, tmp_path):
    log = CallLog(tmp_path / "llm.sqlite")
    backend = OpenAIBackend(SMOL, base_url=model_server.url, api_key_env="SQLMEND_TEST_KEY",
                            name="served", log=log)
    first = backend.chat(MSG, {"max_tokens": 4}, stage="judge")
    second = backend.chat(MSG, {"max_tokens": 4}, stage="judge")
    assert second.cached and second.text == first.text
    rows = log.calls()
    assert [(r["endpoint"], r["stage"], r["cache_hit"]) for r in rows] == [("served", "judge", 0),
                                                                            ("served", "judge", 1)]
    assert rows[0]["tokens_out"] == first.usage.tokens_out > 0


# --- fault servers -----------------------------------------------------------------


def test_timeout_is_retried_then_raised():
    async def slow(n):
        await asyncio.sleep(4)
        return completion("too late")

    fault = Fault(slow)
    with ServerThread(fault.app) as server:
        # 1 s per attempt: time enough for the server to take each request on a loaded machine
        backend = fault.backend(server, timeout=1.0, max_retries=1)
        with pytest.raises(ModelTimeout, match="no answer within 1s"):
            backend.chat(MSG)
        assert len(fault.requests) == 2  # one retry, then the clear error (the server answers after 4 s)


def test_429_then_success():
    async def limited(n):
        if n == 1:
            return JSONResponse({"error": {"message": "slow down"}}, status_code=429,
                                headers={"Retry-After": "0"})
        return completion("SELECT 1")

    fault = Fault(limited)
    with ServerThread(fault.app) as server:
        res = fault.backend(server, max_retries=2).chat(MSG)
    assert res.text == "SELECT 1" and len(fault.requests) == 2


def test_5xx_retried_with_backoff_then_raised():
    async def broken(n):
        return JSONResponse({"error": {"message": "overloaded"}}, status_code=503)

    fault = Fault(broken)
    with ServerThread(fault.app) as server:
        with pytest.raises(ModelError, match="HTTP 503: overloaded"):
            fault.backend(server, max_retries=2).chat(MSG)
    assert len(fault.requests) == 3


def test_4xx_is_not_retried():
    async def refused(n):
        return JSONResponse({"error": {"message": "model not found"}}, status_code=404)

    fault = Fault(refused)
    with ServerThread(fault.app) as server:
        with pytest.raises(ModelError, match="HTTP 404: model not found"):
            fault.backend(server, max_retries=3).chat(MSG)
    assert len(fault.requests) == 1


class Verdict(BaseModel):
    wrong: bool
    error_type: str


def test_invalid_json_for_a_schema_request():
    async def garbage(n):
        return completion('{"wrong": tru, error_type: ')

    fault = Fault(garbage)
    with ServerThread(fault.app) as server:
        with pytest.raises(StructuredOutputError) as info:
            fault.backend(server).chat(MSG, schema=Verdict, stage="detector")
    assert info.value.raw == '{"wrong": tru, error_type: '
    assert len(fault.requests) == 2  # one retry
    first, retry = fault.requests
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"]["title"] == "Verdict"
    assert "That answer is invalid" in retry["messages"][-1]["content"]


def test_unreachable_server(tmp_path):
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", api_key_env="SQLMEND_TEST_KEY",
                            max_retries=1, backoff=0.01, timeout=2)
    with pytest.raises(ModelError, match="cannot reach"):
        backend.chat(MSG)

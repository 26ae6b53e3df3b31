"""Replay reproduces a recorded session bit for bit; strict mode fails loudly on a miss.
Also the local loaders: SmolLM2 from the GGUF (cached checkpoint), next-token scores, MiniLM."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from sqlmend.errors import CassetteMiss, ConfigError, ModelError
from sqlmend.llm import ReplayBackend
from sqlmend.llm.local import converted_checkpoint, load_causal_lm, smollm2_gguf
from sqlmend.llm.openai_compat import OpenAIBackend

SESSION = [
    [{"role": "user", "content": "Name one SQL aggregate function."}],
    [{"role": "system", "content": "Answer briefly."},
     {"role": "user", "content": "What does GROUP BY do?"}],
]
TEXTS = ["How many heads of the departments are older than 56?", "List the singers by age."]


def run_session(chat, embedder, tok_ids):
    out = [chat.chat(m, {"max_tokens": 16}, stage="refiner").to_dict() for m in SESSION]
    out.append(chat.next_token_scores(SESSION[0], tok_ids, stage="detector"))
    return out, embedder.embed(TEXTS)


@pytest.mark.slow
def test_replay_reproduces_a_recorded_session_bit_for_bit(tmp_path, smol, minilm):
    cassette, vectors_cassette = tmp_path / "chat.jsonl", tmp_path / "embed.jsonl"
    ids = [1, 2, 1249]
    rec_chat = ReplayBackend(cassette, mode="record", inner=smol)
    rec_embed = ReplayBackend(vectors_cassette, mode="record", inner=minilm)
    recorded, rec_vectors = run_session(rec_chat, rec_embed, ids)
    assert rec_chat.identity == ("transformers", "SmolLM2-135M-Instruct")
    assert len(cassette.read_text().splitlines()) == 3

    # strict: no model at all behind it
    play_chat = ReplayBackend(cassette, mode="strict", backend="transformers",
                              model="SmolLM2-135M-Instruct")
    play_embed = ReplayBackend(vectors_cassette, mode="strict", backend="sentence-transformers",
                               model="all-MiniLM-L6-v2")
    replayed, play_vectors = run_session(play_chat, play_embed, ids)
    assert json.dumps(replayed, sort_keys=True) == json.dumps(recorded, sort_keys=True)
    assert play_vectors.dtype == np.float32 and play_vectors.tobytes() == rec_vectors.tobytes()
    # and the recording is what the model really says
    assert recorded[0]["text"] == smol.chat(SESSION[0], {"max_tokens": 16}).text


def test_strict_mode_fails_loudly_on_a_miss(tmp_path, smol):
    cassette = tmp_path / "c.jsonl"
    ReplayBackend(cassette, mode="record", inner=smol).chat(SESSION[0], {"max_tokens": 4})
    strict = ReplayBackend(cassette, mode="strict", backend="transformers",
                           model="SmolLM2-135M-Instruct")
    strict.chat(SESSION[0], {"max_tokens": 4})  # hit
    with pytest.raises(CassetteMiss, match="no recording .* chat call"):
        strict.chat(SESSION[0], {"max_tokens": 5})  # other options: another key
    with pytest.raises(CassetteMiss):
        ReplayBackend(cassette, mode="strict", backend="openai",
                      model="SmolLM2-135M-Instruct").chat(SESSION[0], {"max_tokens": 4})
    with pytest.raises(ConfigError, match="does not exist"):
        ReplayBackend(tmp_path / "none.jsonl", mode="strict")


def test_replay_mode_records_misses_when_it_has_an_inner_backend(tmp_path, smol):
    cassette = tmp_path / "c.jsonl"
    ReplayBackend(cassette, mode="record", inner=smol).chat(SESSION[0], {"max_tokens": 4})
    calls = []
    play = ReplayBackend(cassette, mode="replay", inner=lambda: calls.append(1) or smol,
                         backend="transformers", model="SmolLM2-135M-Instruct")
    play.chat(SESSION[0], {"max_tokens": 4})
    assert calls == []  # the hit never built the inner backend
    play.chat(SESSION[1], {"max_tokens": 4})
    assert calls == [1] and len(cassette.read_text().splitlines()) == 2


def test_cassettes_store_no_keys(tmp_path, model_server, monkeypatch):
    monkeypatch.setenv("SQLMEND_TEST_KEY", "sk-very-secret-123")
    http = OpenAIBackend("SmolLM2-135M-Instruct", base_url=model_server.url,
                         api_key_env="SQLMEND_TEST_KEY")
    cassette = tmp_path / "c.jsonl"
    ReplayBackend(cassette, mode="record", inner=http).chat(SESSION[0], {"max_tokens": 4})
    text = cassette.read_text()
    assert "sk-very-secret-123" not in text and "SQLMEND_TEST_KEY" not in text
    assert json.loads(text)["backend"] == "openai"


def test_load_causal_lm_from_the_packaged_gguf():
    model, tok = load_causal_lm()
    assert (converted_checkpoint(smollm2_gguf()) / "model.safetensors").is_file()  # cached
    assert model.config.model_type == "llama" and model.dtype == torch.float32
    assert tok.chat_template and tok.pad_token is not None
    assert not model.training
    other, _ = load_causal_lm()
    assert other is not model  # a fresh copy: callers may add tokens / LoRA


def test_next_token_scores_are_full_vocabulary_log_probs(smol):
    model, tok = smol.loaded
    prompt = "The capital of France is"
    paris, london = tok.encode(" Paris")[0], tok.encode(" London")[0]
    scores = smol.next_token_scores(prompt, [paris, london])
    with torch.inference_mode():
        logits = model(**tok(prompt, return_tensors="pt")).logits[0, -1]
    expect = torch.log_softmax(logits.float(), -1)
    assert scores == pytest.approx([float(expect[paris]), float(expect[london])], abs=1e-5)
    assert scores[0] > scores[1]
    with pytest.raises(ModelError, match="outside the vocabulary"):
        smol.next_token_scores(prompt, [10**7])


def test_openai_backend_refuses_next_token_scores():
    with pytest.raises(ModelError, match="local"):
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1").next_token_scores("x", [1])


def test_minilm_embeddings(minilm):
    v = minilm.embed(TEXTS + ["Count the department heads older than 56."])
    assert v.shape == (3, 384) and minilm.dim == 384
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[2] > v[0] @ v[1]

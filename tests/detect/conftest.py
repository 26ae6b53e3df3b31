"""A tiny causal LM with a tiny word-level tokenizer, built in the test (no weights on disk)."""

from __future__ import annotations

import pytest

WORDS = ("the sql is wrong right column table value condition function clause modifier error missing "
         "redundant mismatch a an of or and to from in which question select where group order limit "
         "distinct count name age singer errors : answers correctly attribute literal filter").split()


def make_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, "[EOS]": 2}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")


def make_model(vocab_size: int, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                      tie_word_embeddings=True)
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture
def tiny_factory():
    """``(make_tokenizer, make_model)``: build more tiny models in a test (same seed, same weights)."""
    return make_tokenizer, make_model


@pytest.fixture
def tiny():
    """``(model, tokenizer)``: a fresh 2-layer Llama with tied embeddings."""
    tok = make_tokenizer()
    return make_model(len(tok)), tok


@pytest.fixture
def tiny_detector(tmp_path, tiny_factory):
    """``(folder, backbone)``: a detector folder trained for a few steps on the tiny model."""
    from sqlmend.detect.train import TrainConfig, train

    make_tokenizer, make_model = tiny_factory
    tok = make_tokenizer()
    base = tmp_path / "base"
    make_model(len(tok)).save_pretrained(base)
    tok.save_pretrained(base)
    folder = tmp_path / "det"
    examples = [{"question": "which singer", "sql": "select name from singer", "db_id": "a", "labels": ["value_error"],
                 "context": {"qss": "singer ( name )", "ast": "select", "exec": "error"}}]
    train(examples, TrainConfig(out_dir=str(folder), backbone=str(base), max_steps=3, grad_accum=1, max_length=64),
          progress=False)
    return folder, base

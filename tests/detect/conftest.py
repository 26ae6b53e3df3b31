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

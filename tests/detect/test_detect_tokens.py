"""Error tokens in a vocabulary: extension, semantic initialization, table round trip."""

from __future__ import annotations

import pytest
import torch

from sqlmend import taxonomy
from sqlmend.detect.tokens import TokenTable, add_error_tokens, description_text
from sqlmend.errors import ConfigError


def test_extension_adds_33_single_tokens(tiny):
    model, tok = tiny
    base = model.get_input_embeddings().weight.shape[0]
    table = add_error_tokens(model, tok, backbone="tiny")
    assert len(table.ids) == 33 == len(set(table.ids.values()))
    assert all(i >= base for i in table.ids.values())
    assert model.get_input_embeddings().weight.shape[0] == base + 33
    # each token is one id, never split, also inside text
    ids = tok("the sql [ERR_7] [ERR_NONE]", add_special_tokens=False)["input_ids"]
    assert table.id_of("value_error") in ids and table.none_id in ids
    assert table.type_of(table.id_of("clause_error")) == "clause_error"
    assert table.type_of(table.ids["[ERR_20]"]) is None  # reserved, unused slot


def test_semantic_init_uses_description_embeddings(tiny):
    model, tok = tiny
    original = model.get_input_embeddings().weight.detach().clone()
    table = add_error_tokens(model, tok)
    emb = model.get_input_embeddings().weight.detach()
    for type_id, tid in table.used():
        desc = [i for i in tok(description_text(type_id), add_special_tokens=False)["input_ids"]]
        assert torch.allclose(emb[tid], original[torch.tensor(desc)].mean(0), atol=1e-6), type_id
    unused = table.ids["[ERR_31]"]
    assert torch.allclose(emb[unused], original.mean(0), atol=1e-6)
    # different descriptions give different rows
    assert not torch.allclose(emb[table.id_of("value_error")], emb[table.id_of("clause_error")])
    # the tied output head sees the same rows
    assert torch.equal(model.get_output_embeddings().weight[table.none_id], emb[table.none_id])


def test_no_semantic_init_puts_tokens_at_the_mean(tiny):
    model, tok = tiny
    original = model.get_input_embeddings().weight.detach().clone()
    table = add_error_tokens(model, tok, semantic=False)
    emb = model.get_input_embeddings().weight.detach()
    assert torch.allclose(emb[table.id_of("value_error")], original.mean(0), atol=1e-6)


def test_table_round_trip(tiny, tmp_path):
    model, tok = tiny
    table = add_error_tokens(model, tok, backbone="tiny")
    table.save(tmp_path)
    again = TokenTable.load(tmp_path)
    assert again.ids == table.ids and again.base_vocab == table.base_vocab and again.backbone == "tiny"
    assert again.error_ids == [table.ids[t] for t in taxonomy.all_tokens()]
    with pytest.raises(ConfigError):
        TokenTable.load(tmp_path / "nowhere")

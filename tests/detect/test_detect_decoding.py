"""Constrained decoding (ErrorLLM §3.2) and the one-pass threshold."""

from __future__ import annotations

import pytest
import torch

from sqlmend import taxonomy
from sqlmend.detect.decoding import (constrained_probs, decode, detection_from_probs, one_pass,
                                     target_tokens)
from sqlmend.detect.tokens import add_error_tokens


class FixedLogits(torch.nn.Module):
    """A model whose next-token logits are given: the ordinary tokens get the highest scores."""

    def __init__(self, vocab: int, favourite: dict[int, float], step_logits: list[dict[int, float]] | None = None):
        super().__init__()
        self.vocab, self.favourite, self.steps, self.calls = vocab, favourite, step_logits or [], 0
        self.device = torch.device("cpu")

    def forward(self, input_ids, past_key_values=None, use_cache=False, logits_to_keep=0):
        logits = torch.full((1, input_ids.shape[1], self.vocab), -5.0)
        logits[..., 3] = 50.0  # an ordinary word is by far the most likely next token
        scores = self.steps[self.calls] if self.calls < len(self.steps) else self.favourite
        for tid, v in scores.items():
            logits[..., tid] = v
        self.calls += 1
        return type("Out", (), {"logits": logits, "past_key_values": None})()


def test_constrained_probs_renormalize_over_error_tokens(tiny):
    model, tok = tiny
    table = add_error_tokens(model, tok)
    logits = torch.randn(len(tok))
    logits[3] = 8.0  # an ordinary token is the most likely one
    p = constrained_probs(logits, table)
    assert p.shape == (33,) and abs(float(p.sum()) - 1) < 1e-5
    # the case equation: p(w) / sum over error tokens of p(s)
    full = torch.softmax(logits, -1)
    ids = torch.tensor(table.error_ids)
    assert torch.allclose(p, full[ids] / full[ids].sum(), atol=1e-5)


def test_decode_only_emits_error_tokens_in_order_and_stops(tiny):
    model, tok = tiny
    table = add_error_tokens(model, tok)
    vocab = model.get_input_embeddings().weight.shape[0]
    steps = [{table.id_of("condition_error"): 9.0, table.id_of("value_error"): 8.0},
             {table.id_of("condition_error"): 9.0, table.id_of("value_error"): 8.5},  # already chosen: skipped
             {table.none_id: 9.0}]
    det = decode(FixedLogits(vocab, {}, steps), [4, 5, 6], table)
    assert [t for t, _ in det.types] == ["condition_error", "value_error"]
    assert det.raw == "[ERR_9][ERR_7]"
    assert 0 < det.p_no_error < 0.01


def test_decode_no_error_and_at_most_four(tiny):
    model, tok = tiny
    table = add_error_tokens(model, tok)
    vocab = model.get_input_embeddings().weight.shape[0]
    assert not decode(FixedLogits(vocab, {table.none_id: 5.0}), [4], table).has_error
    many = {table.id_of(t): 9.0 - i for i, t in enumerate(taxonomy.ids())}
    det = decode(FixedLogits(vocab, many), [4], table, max_labels=4)
    assert len(det.types) == 4 and det.types[0][0] == "attribute_mismatch"


def test_one_pass_threshold(tiny):
    model, tok = tiny
    table = add_error_tokens(model, tok)
    vocab = model.get_input_embeddings().weight.shape[0]
    fake = FixedLogits(vocab, {table.none_id: 2.0, table.id_of("value_error"): 2.0,
                               table.id_of("clause_error"): 1.0})
    strict = one_pass(fake, [4], table, threshold=0.2)
    assert not strict.has_error and 0.2 < strict.p_no_error < 0.6
    loose = one_pass(fake, [4], table, threshold=0.9)
    assert [t for t, _ in loose.types][:2] == ["value_error", "clause_error"]


def test_detection_from_probs_keeps_one_type_at_least(tiny):
    model, tok = tiny
    table = add_error_tokens(model, tok)
    probs = [1 / 33] * 33
    det = detection_from_probs(probs, table, threshold=0.5, min_share=0.9)
    assert len(det.types) == 1


@pytest.mark.parametrize("labels,expected", [
    ([], ["[ERR_NONE]"]), (["no_error"], ["[ERR_NONE]"]),
    (["value_error", "clause_error"], ["[ERR_7]", "[ERR_11]", "[ERR_NONE]"]),
])
def test_target_tokens(labels, expected):
    assert target_tokens(labels) == expected

"""LoRA + token rows on a tiny model: training moves them, save/load restores them, files stay small."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from sqlmend.detect import model as dmodel
from sqlmend.detect.calibrate import calibrate_threshold, split_by_db
from sqlmend.detect.decoding import decode
from sqlmend.detect.train import TrainConfig, train

pytestmark = pytest.mark.slow

EXAMPLES = [
    {"question": "which singer", "sql": "select name from singer where age", "db_id": "a",
     "context": {"qss": "singer ( name , age )", "ast": "select", "exec": "error"}, "labels": ["value_error"]},
    {"question": "count singer", "sql": "select count from singer", "db_id": "a",
     "context": {"qss": "singer ( name )", "ast": "select count", "exec": "right"}, "labels": ["no_error"]},
]


@pytest.fixture
def fresh(tiny_factory):
    """A function giving a fresh tiny model (always the same weights) and its tokenizer."""
    make_tokenizer, make_model = tiny_factory

    def build():
        tok = make_tokenizer()
        return make_model(len(tok), seed=1), tok

    return build


def test_train_save_load_round_trip(tmp_path, fresh):
    _fresh = fresh
    base, tok = _fresh()
    peft_model, tok, table = dmodel.wrap(base, tok, dmodel.LoraSettings(r=4, alpha=8, dropout=0.0), backbone="tiny")
    trainable = {n for n, p in peft_model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or "trainable_tokens" in n for n in trainable)
    before = peft_model.base_model.model.model.embed_tokens.token_adapter.trainable_tokens_delta["default"].detach().clone()
    cfg = TrainConfig(out_dir=str(tmp_path / "det"), max_steps=80, grad_accum=1, lr=1e-2, max_length=96,
                      save_every=40, objective="sequence")
    losses: list[float] = []
    report = train(EXAMPLES, cfg, progress=False, prepared=(peft_model, tok, table),
                   on_step=lambda step, loss: losses.append(loss))
    assert report.steps == 80 and report.finished
    assert sum(losses[-10:]) / 10 < 0.5 * sum(losses[:5]) / 5
    after = peft_model.base_model.model.model.embed_tokens.token_adapter.trainable_tokens_delta["default"]
    assert not torch.allclose(before, after)
    # the trained model answers the first example with its error, the second with none
    ids, ids2 = (dmodel.encode(tok, dmodel.input_text(ex["question"], ex["context"], ex["sql"]), None, 96)[0]
                 for ex in EXAMPLES)
    assert [t for t, _ in decode(peft_model, ids, table).types] == ["value_error"]
    assert not decode(peft_model, ids2, table).has_error
    with torch.no_grad():
        want = peft_model(input_ids=torch.tensor([ids])).logits
    # the folder holds the adapter and the table, not the embedding matrix
    folder = tmp_path / "det"
    assert (folder / "token_table.json").exists() and (folder / "detector.json").exists()
    with safe_open(str(folder / "adapter_model.safetensors"), "pt") as f:
        keys = list(f.keys())
        shapes = {k: f.get_slice(k).get_shape() for k in keys}
    assert not any(k.endswith("embed_tokens.weight") or k.endswith("lm_head.weight") for k in keys)
    assert any(shape[0] == 33 for shape in shapes.values())  # the 33 token rows
    # a fresh base model + the folder gives the same logits
    base2, tok2 = _fresh()
    model2, tok2, table2 = dmodel.load(folder, base=(base2, tok2))
    assert table2.ids == table.ids
    with torch.no_grad():
        got = model2(input_ids=torch.tensor([ids])).logits
    assert torch.allclose(want, got, atol=2e-3)  # the adapter is stored as float16
    settings = json.loads((folder / "detector.json").read_text())
    assert settings["steps"] == 80 and settings["train"]["examples"] == 2


def test_training_resumes_from_checkpoint(tmp_path, fresh):
    _fresh = fresh
    base, tok = _fresh()
    prepared = dmodel.wrap(base, tok, dmodel.LoraSettings(r=4, alpha=8, dropout=0.0))
    cfg = TrainConfig(out_dir=str(tmp_path), max_steps=6, grad_accum=1, max_length=96, save_every=2,
                      time_budget=0.0)  # stops after the first step
    first = train(EXAMPLES, cfg, progress=False, prepared=prepared)
    assert first.steps == 1 and not first.finished
    base, tok = _fresh()
    second = train(EXAMPLES, TrainConfig(out_dir=str(tmp_path), max_steps=6, grad_accum=1, max_length=96),
                   progress=False, prepared=dmodel.wrap(base, tok, dmodel.LoraSettings(r=4, alpha=8, dropout=0.0)))
    assert second.steps == 6 and second.finished and second.examples_seen == 6


def test_calibrate_threshold_reaches_target_precision():
    p_none = [0.05, 0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9]
    is_err = [True, True, True, False, True, False, False, False]
    r = calibrate_threshold(p_none, is_err, target_precision=0.75)
    assert 0.6 < r["threshold"] < 0.7 and r["precision"] == 0.8 and r["recall"] == 1.0
    strict = calibrate_threshold(p_none, is_err, target_precision=1.0)
    assert 0.2 < strict["threshold"] < 0.3 and strict["recall"] == 0.75


def test_split_by_db_holds_out_whole_databases():
    rows = [{"db_id": f"d{i % 10}", "i": i} for i in range(100)]
    train_rows, held = split_by_db(rows, 0.2)
    assert len(held) == 20 and not {r["db_id"] for r in held} & {r["db_id"] for r in train_rows}


def test_auroc():
    from sqlmend.search.train import auroc

    assert auroc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]) == 1.0
    assert auroc([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 0.0
    assert auroc([0.5, 0.5], [True, False]) == 0.5
    assert auroc([0.5], [True]) is None


def test_first_step_objective_trains_top_layers_in_batches(tmp_path, fresh):
    from sqlmend.detect.detector import ErrorTokenDetector
    from sqlmend.detect.train import length_batches

    base, tok = fresh()
    lora = dmodel.LoraSettings(r=4, alpha=8, dropout=0.0, top_layers=1)
    peft_model, tok, table = dmodel.wrap(base, tok, lora, backbone="tiny")
    adapted = {n.split(".layers.")[1].split(".")[0] for n, _ in peft_model.named_parameters() if "lora_A" in n}
    assert adapted == {"1"}  # the top one of the two layers
    # the backward pass stops below the adapted layer: the lower layer's input gets no gradient
    cfg = TrainConfig(out_dir=str(tmp_path / "det"), max_steps=40, grad_accum=1, batch_size=2, lr=1e-2,
                      max_length=96, lora=lora, objective="first_step")
    losses: list[float] = []
    report = train(EXAMPLES * 2, cfg, progress=False, prepared=(peft_model, tok, table),
                   on_step=lambda step, loss: losses.append(loss))
    assert report.finished and report.examples_seen == 80
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:3]) / 3
    settings = json.loads((tmp_path / "det" / "detector.json").read_text())
    assert settings["lora"]["top_layers"] == 1 and settings["train"]["objective"] == "first_step"
    det = ErrorTokenDetector(peft_model, tok, table, threshold=0.5, mode="one_pass", max_length=96)
    inputs = [(ex["question"], ex["context"], ex["sql"], "") for ex in EXAMPLES]
    one = [det.probs(*x) for x in inputs]
    many = det.probs_many(inputs, batch_size=2)  # unequal lengths: left padding must not change the answer
    assert len(det._ids(*inputs[0])) != len(det._ids(*inputs[1]))
    assert all(abs(a - b) < 1e-4 for p, q in zip(one, many) for a, b in zip(p, q))
    found = det.detect_many(inputs)
    assert found[0].p_no_error < found[1].p_no_error  # the wrong SQL is the more suspicious one
    # the checkpoint keeps the optimizer moments as bfloat16
    state = torch.load(tmp_path / "det" / "checkpoint" / "state.pt", weights_only=False)
    moments = [v for st in state["optimizer"]["state"].values() for v in st.values() if torch.is_tensor(v) and v.dim()]
    assert moments and all(v.dtype == torch.bfloat16 for v in moments)
    assert sorted(i for b in length_batches([5, 1, 9, 3, 7], 2) for i in b) == [0, 1, 2, 3, 4]

"""The cross-encoder verifier (MiniLM + LoRA): groups built from real Spider-train questions, a few
training steps, scores and the comparison with the feature verifier."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.search import cross

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def groups(data_dir, tmp_path_factory):
    from sqlmend.data import load_dataset
    from sqlmend.search import train

    ds = load_dataset("spider-train")
    has = lambda d: ds.db_path(d) is not None  # noqa: E731
    tasks = cross.questions(ds.tasks, has, "train", 3) + cross.questions(ds.tasks, has, "held-out", 3)
    out = tmp_path_factory.mktemp("cross") / "groups.jsonl"
    list(cross.build_groups(tasks, lambda d: str(ds.db_path(d)), out, top=3, neighbours=train.Neighbours(ds.tasks)))
    assert not list(cross.build_groups(tasks, lambda d: str(ds.db_path(d)), out, top=3)), "resumed: nothing redone"
    return cross.load_groups([out])


def test_questions_split_by_the_feature_verifiers_held_out_databases(data_dir):
    from sqlmend.data import load_dataset
    from sqlmend.search.train import held_out

    ds = load_dataset("spider-train")
    has = lambda d: ds.db_path(d) is not None  # noqa: E731
    train, held = cross.questions(ds.tasks, has, "train", 50), cross.questions(ds.tasks, has, "held-out", 50)
    assert not any(held_out(t.db_id, 0.2) for t in train) and all(held_out(t.db_id, 0.2) for t in held)
    assert [t.question_id for t in cross.questions(ds.tasks, has, "train", 10)] == [t.question_id for t in train[:10]]
    with pytest.raises(ValueError):
        cross.questions(ds.tasks, has, "dev", 1)


def test_groups_hold_the_original_and_the_top_candidates_labelled_by_the_gold(groups):
    assert {g["kind"].split(":")[0] for g in groups} >= {"gold", "neighbour"}
    for g in groups:
        items = g["items"]
        assert 1 <= len(items) <= 4 and items[0]["label"] == (g["kind"] == "gold")
        assert [it["gbt"] for it in items[1:]] == sorted((it["gbt"] for it in items[1:]), reverse=True)
        assert all(it["res"] == "error" or " rows: " in it["res"] for it in items)
        assert g["reachable"] >= max(it["label"] for it in items[1:]) if len(items) > 1 else True


def test_a_few_training_steps_give_an_adapter_that_scores_and_compares(groups, tmp_path):
    meta = cross.train(groups, tmp_path / "adapter", epochs=0.25, batch=16, threads=1)  # a few steps
    assert meta["steps"] >= 1 and (tmp_path / "adapter" / "adapter_config.json").exists()
    enc = cross.CrossEncoder(tmp_path / "adapter", threads=1)
    g = groups[0]
    s = enc.scores(g["question"], [(it["sql"], it["res"]) for it in g["items"]])
    assert s.shape == (len(g["items"]),) and ((s >= 0) & (s <= 1)).all()
    report = cross.evaluate(groups, enc, top=2)
    assert set(report) >= {"features", "cross", "mean"} and report["groups"] == len(groups)
    for name in ("features", "cross", "mean"):
        assert set(report[name]["frontier"]) == {"flagged", "all"}
        assert 0 <= report[name]["selection_accuracy"] <= 1


def test_the_cached_lower_layers_give_the_full_models_output(groups):
    import torch
    from peft import LoraConfig, get_peft_model

    pairs = [(*cross.pair(g["question"], it["sql"], it["res"]), it["label"]) for g in groups for it in g["items"]]
    tok, model = cross._backbone()
    model = get_peft_model(model, LoraConfig(r=4, target_modules=["query", "value"], layers_to_transform=[4, 5]))
    bert = model.get_base_model().bert.eval()
    prefix = cross._Prefix(bert, tok, pairs, frozen=4)
    idx = list(range(min(6, len(pairs))))
    enc = tok([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], truncation=True,
              max_length=cross.MAX_LENGTH, padding=True, return_tensors="pt")
    with torch.no_grad():
        full = bert(**enc).pooler_output
        cached = prefix.pooled(idx)
    assert torch.allclose(full, cached, atol=2e-3), (full - cached).abs().max()


def test_the_listwise_term_puts_mass_on_the_right_items():
    import torch

    labels = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0])
    good = cross._listwise(torch.tensor([3.0, -3.0, -3.0, 0.0, 0.0]), labels, [(0, 3), (3, 5)])
    bad = cross._listwise(torch.tensor([-3.0, 3.0, -3.0, 0.0, 0.0]), labels, [(0, 3), (3, 5)])
    assert 0 < good < 0.01 < 6 < bad  # the all-right group (3, 5) adds nothing


def test_training_with_frozen_layers_and_the_listwise_term(groups, tmp_path):
    meta = cross.train(groups, tmp_path / "adapter", epochs=0.25, batch=8, threads=1, frozen=4, listwise=1.0)
    assert meta["frozen_layers"] == 4 and meta["steps"] >= 1
    enc = cross.CrossEncoder(tmp_path / "adapter", threads=1)
    g = groups[0]
    s = enc.scores(g["question"], [(it["sql"], it["res"]) for it in g["items"]])
    assert s.shape == (len(g["items"]),) and ((s >= 0) & (s <= 1)).all()
    with pytest.raises(ValueError):
        cross.train(groups, tmp_path / "x", epochs=1, frozen=6)


def test_the_command_builds_trains_compares_and_calibrates(data_dir, tmp_path):
    from sqlmend.cli import app

    r = CliRunner().invoke(app, ["train-cross-verifier", "--help"])
    assert r.exit_code == 0 and "MiniLM" in r.output and "--held-out-questions" in r.output
    args = ["train-cross-verifier", "--data", str(tmp_path), "--questions", "2", "--held-out-questions", "2",
            "--epochs", "0.25", "--threads", "1", "--top", "2", "--equiv"]
    for shard in ("0/2", "1/2"):  # built in two shards, then trained on both files without rebuilding
        r = CliRunner().invoke(app, args + ["--shard", shard, "--build-only"])
        assert r.exit_code == 0, r.output
    built = {f.name: f.read_text() for f in tmp_path.glob("*.jsonl")}
    assert set(built) == {f"{part}{kind}-{k}.jsonl" for part in ("train", "held-out") for kind in ("", "-equiv")
                          for k in (0, 1)}
    equiv = cross.load_groups(tmp_path.glob("*-equiv-*.jsonl"))  # correct originals that are not the gold
    assert equiv and all(g["kind"].startswith("equiv:") and g["items"][0]["label"] == 1 for g in equiv)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "train.jsonl").read_text().strip(), "nothing built twice"
    assert not (tmp_path / "held-out-equiv.jsonl").read_text().strip(), "nothing built twice"
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["questions"] == 2 and report["training"]["questions"] == 2
    decision = json.loads((tmp_path / "adapter" / "decision.json").read_text())
    enc = cross.CrossEncoder(tmp_path / "adapter", threads=1)
    assert enc.decision == decision and enc.margin_for("all") == decision["all_margin"]
    # --evaluate: an adapter trained before, compared and calibrated again on the held-out groups only
    moved = tmp_path / "elsewhere"
    (tmp_path / "adapter").rename(moved)
    (moved / "decision.json").unlink()
    r = CliRunner().invoke(app, args + ["--evaluate", str(moved), "--weights", "0.5,2"])
    assert r.exit_code != 0 and "--weights" in r.output
    r = CliRunner().invoke(app, args + ["--evaluate", str(moved)])
    assert r.exit_code == 0, r.output
    assert "margin" in r.output and not (tmp_path / "adapter").exists(), "nothing trained"
    assert json.loads((moved / "decision.json").read_text()) == decision and decision["weight"] == 0.5
    assert json.loads((moved / "report.json").read_text())["held_out_files"]


def test_the_weight_is_chosen_on_halves_of_the_databases():
    """cross_validated calibrates on one half, counts on the other: a rule that separates perfectly
    fixes every reachable wrong original and breaks nothing; one that reverses gets a margin that
    replaces nothing."""
    decided = []
    for _ in range(40):
        decided.append({"orig": 1, "best": 0, "gap": -0.5, "flagged": True, "s0": 0.9, "reachable": 0, "kind": "gold"})
        decided.append({"orig": 0, "best": 1, "gap": 0.6, "flagged": True, "s0": 0.2, "reachable": 1, "kind": "rule1"})
    dbs = [f"db{i // 2}" for i in range(len(decided))]
    good = cross.cross_validated(decided, dbs, 0.8, 0.001, 1.0, "suspect", 0.4)
    assert good == {"fixed": 40, "broken": 0, "replaced": 40, "precision": 1.0, "meets": True}
    reversed_ = [dict(d, gap=-d["gap"]) for d in decided]
    bad = cross.cross_validated(reversed_, dbs, 0.8, 0.001, 1.0, "suspect", 0.4)
    assert bad == {"fixed": 0, "broken": 0, "replaced": 0, "precision": None, "meets": True}
    assert cross.WEIGHTS[0] == 0.5 and cross.WEIGHTS[-1] == 0.9

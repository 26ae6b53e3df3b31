"""``sqlmend bench detect`` with a tiny trained detector on real Spider-dev predictions."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.cli import app
from sqlmend.data import load_dataset
from sqlmend.data.sampling import seeded_sample

pytestmark = pytest.mark.slow


def test_bench_detect_scores_the_seeded_sample(tmp_path, data_dir, tiny_detector):
    folder, _ = tiny_detector
    preds = [data_dir / "predictions" / "spider-dev" / f for f in ("codes-1b.sql", "din-sql_gpt-4.sql")]
    out = tmp_path / "bench.json"
    r = CliRunner().invoke(app, ["bench", "detect", "--detector", str(folder), "--pred", str(preds[0]), "--pred",
                                 str(preds[1]), "--limit", "10", "--seed", "4", "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    report = json.loads(out.read_text())
    ds = load_dataset("spider-dev")
    wanted = [t.question_id for t in seeded_sample(ds.tasks, 10, 4) if ds.db_path(t.db_id)]
    assert report["questions"] == len(wanted)
    assert {k.split(":", 1)[1] for k in report["labels"]} <= set(wanted)
    assert {k.split(":", 1)[0] for k in report["labels"]} == {"codes-1b", "din-sql_gpt-4"}
    combined = ("combined", "combined-no-search", "combined-no-detector", "verifier+static")
    assert set(report["table"]) == {f"{d} / {s}" for d in ("model", "static", "static+model", "verifier",
                                                           "static+verifier", "original", "static+original",
                                                           *combined)
                                    for s in ("all", "gold-clean")}
    assert set(report["auroc"]) == {"model", "static", "verifier", "original", *combined}
    assert set(report["seconds"]) >= {"model", "static", "verifier", "original", "search", *combined}
    assert all(v["p_original"] is not None for v in report["results"].values() if v["error"] is None)
    # the search's pass runs the verifier too: it costs more; a combination costs its parts
    secs = report["seconds"]
    assert secs["search"] >= secs["verifier"] and secs["combined"] == round(secs["model"] + secs["search"], 4)
    assert all(v["candidates"] is not None for v in report["results"].values() if v["error"] is None)
    n = report["table"]["model / all"]
    assert n["tp"] + n["fp"] + n["fn"] + n["tn"] == len(report["labels"])
    assert "| model / all |" in r.output


def test_bench_detect_samples_predictions_and_runs_the_prompted_baseline(data_dir, tiny_detector):
    from sqlmend.bench.detect import bench_detect
    from sqlmend.detect.combine import Combiner
    from sqlmend.detect.prompted import PromptedDetector
    from sqlmend.llm.replay import ReplayBackend
    from sqlmend.search.verifier import FeatureVerifier

    folder, _ = tiny_detector
    from sqlmend.detect.detector import ErrorTokenDetector

    det = ErrorTokenDetector.from_dir(folder, mode="one_pass")
    files = [data_dir / "predictions" / "spider-dev" / f for f in ("codes-1b.sql", "gpt-4_zero-shot.sql")]
    answers = ['{"errors": ["condition_error"]}', '{"errors": []}', '{"errors": ["not_a_type"]}']
    asker = PromptedDetector(ReplayBackend(mode="queue", answers=answers))
    r = bench_detect(det, files, limit=30, seed=1, progress=False, predictions=14, verifier=FeatureVerifier(),
                     combiner=Combiner.load(), prompted=asker, prompted_n=3)
    assert r["predictions"] == len(r["labels"]) <= 14
    sample = r["table"]["prompted / prompted-sample"]
    assert sample["tp"] + sample["fp"] + sample["fn"] + sample["tn"] == 3
    assert sample["tp"] + sample["fp"] == 1  # one readable error; an unknown id counts as no error
    said = [v for k, v in r["results"].items() if k.startswith("prompted:")]
    assert len(said) == 3 and any("condition_error" in v["raw"] for v in said)
    wrong = sum(r["labels"].values())
    assert sum(row["n"] for row in r["kinds"].values()) == wrong
    p_correct = [v["p_correct"] for k, v in r["results"].items() if not k.startswith("prompted:")]
    assert all(p is not None and 0 <= p <= 1 for p in p_correct)
    # no search: the combinations that read it are left out, the others scored
    assert "combined-no-search" in r["auroc"] and "combined" not in r["auroc"] and "search" not in r["seconds"]


def test_bench_detect_scores_other_verifier_weights(tmp_path, data_dir):
    """``--verifier-weights``: the verifier alone from another weights file (e.g. an earlier one)."""
    from sqlmend.search.verifier import WEIGHTS

    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    copy = tmp_path / "verifier.json"
    copy.write_bytes(WEIGHTS.read_bytes())
    args = ["bench", "detect", "--no-model", "--no-static", "--no-search", "--pred", str(pred), "--limit", "6", "-q"]
    r = CliRunner().invoke(app, [*args, "--verifier-weights", str(copy)])
    assert r.exit_code == 0, r.output
    assert "| verifier / all |" in r.output and "other verifier weights" not in r.output
    r = CliRunner().invoke(app, [*args, "--verifier-weights", str(tmp_path / "missing.json")])
    assert r.exit_code != 0 and "no verifier weights" in r.output

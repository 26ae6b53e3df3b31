"""``sqlmend detect --dataset --pred --out``, the packaged adapter and the detector's place in the pipeline."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.cli import app
from sqlmend.data import load_dataset
from sqlmend.data.sampling import seeded_sample
from sqlmend.detect import stage as dstage
from sqlmend.pipeline import PipelineConfig


def test_detect_writes_detections_for_a_seeded_sample(tmp_path, data_dir, tiny_detector):
    folder, _ = tiny_detector
    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    out = tmp_path / "det"
    r = CliRunner().invoke(app, ["detect", "--detector", str(folder), "--dataset", "spider-dev", "--pred", str(pred),
                                 "--out", str(out), "--sample", "6", "--seed", "3", "--quiet"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (out / "detections.jsonl").read_text().splitlines()]
    ds = load_dataset("spider-dev")
    assert [x["question_id"] for x in rows] == [t.question_id for t in seeded_sample(ds.tasks, 6, 3)]
    for x in rows:
        assert set(x) >= {"question_id", "error", "types", "score", "failure"}
        assert x["error"] == bool(x["types"])
        if x["failure"] is None:
            assert 0 <= x["score"] <= 1
        else:  # a question whose database is missing: said per item, not scored
            assert x["score"] is None and "database" in x["failure"]
    assert sum(x["failure"] is None for x in rows) >= 4
    run = json.loads((out / "run.json").read_text())
    assert run["detector"] == str(folder) and "steps" in run["version"]
    assert "6 predictions" in r.output


def test_detect_dataset_needs_pred_and_out(tiny_detector):
    folder, _ = tiny_detector
    r = CliRunner().invoke(app, ["detect", "--detector", str(folder), "--dataset", "spider-dev"])
    assert r.exit_code != 0 and "--pred" in r.output


def test_stage_reads_the_packaged_adapter_by_default(monkeypatch, tmp_path, tiny_detector):
    folder, _ = tiny_detector
    monkeypatch.setattr(dstage, "packaged_dir", lambda: folder)
    assert dstage.DetectorStage().folder == folder
    monkeypatch.setattr(dstage, "packaged_dir", lambda: None)
    assert dstage.DetectorStage().folder == dstage.default_dir()


def test_detector_is_opt_in_in_the_pipeline():
    assert "detector" not in PipelineConfig().stage_names()
    assert PipelineConfig(stages=["static", "detector", "guard"]).stage_names() == ["static", "detector", "guard"]


def test_detect_with_the_detection_model_scores_each_prediction_by_its_trees(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    out = tmp_path / "det"
    r = CliRunner().invoke(app, ["detect", "--kind", "features", "--dataset", "spider-dev", "--pred", str(pred),
                                 "--out", str(out), "--limit", "12", "--quiet"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (out / "detections.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all(x["failure"] is None and 0 <= x["score"] <= 1 for x in rows)
    from sqlmend.detect.original import OriginalDetector

    det = OriginalDetector()
    assert all(x["error"] == (x["score"] >= det.threshold - 1e-4) for x in rows)
    assert any(x["error"] for x in rows) and not all(x["error"] for x in rows)
    run = json.loads((out / "run.json").read_text())
    assert run["detector"].endswith("original.json") and run["threshold"] == det.threshold
    assert "detection model" in r.output
    # one query: the judgement with the model's flag and score; a wrong --kind is a clear error
    db = data_dir / "spider" / "database" / "pets_1" / "pets_1.sqlite"
    r = CliRunner().invoke(app, ["detect", "--kind", "features", "--db", str(db), "--question", "How many dogs?",
                                 "--sql", "SELECT count(*) FROM Pets WHERE PetType = 'Dog'"])
    assert r.exit_code == 0, r.output
    one = json.loads(r.output.strip().splitlines()[-1])
    assert "VL01" in one["static_codes"] and 0 <= one["score"] <= 1 and isinstance(one["flagged"], bool)
    r = CliRunner().invoke(app, ["detect", "--kind", "llm", "--db", str(db), "--question", "x", "--sql", "SELECT 1"])
    assert r.exit_code != 0 and "--kind" in r.output

"""The detector stage: error-token model from a folder, prompted fallback, skip without either."""

from __future__ import annotations

import pytest

from sqlmend.db import connect
from sqlmend.detect import model as dmodel
from sqlmend.detect.detector import ErrorTokenDetector
from sqlmend.detect.stage import DetectorStage
from sqlmend.llm.replay import ReplayBackend
from sqlmend.stage import StageContext
from sqlmend.types import Task


@pytest.fixture(scope="module")
def concert(spider_db):
    with connect(spider_db("concert_singer")) as db:
        yield db


def _ctx(db, resolve=None):
    task = Task("1", "concert_singer", "Which singers are older than 40?", "SELECT name FROM singer WHERE age < 40")
    return StageContext(task=task, db=db, sql=task.sql, resolve=resolve)


def test_stage_with_a_trained_folder(concert, tiny_detector):
    folder, base = tiny_detector
    assert dmodel.read_settings(folder)["backbone_path"] == str(base)
    det = ErrorTokenDetector.from_dir(folder, mode="decode")
    found = det.detect(concert, "Which singers?", "SELECT name FROM singer")
    assert found.p_no_error is not None and 0 <= found.p_no_error <= 1
    trace = DetectorStage.from_config({"folder": str(folder), "mode": "one_pass"}).run(_ctx(concert))
    assert trace.status == "ran" and trace.candidate is None
    assert "P(no_error)" in trace.note and "detection" in trace.detail
    assert all(f.source == "detector" and f.code == "detector" and f.severity == "advisory" for f in trace.findings)


def test_stage_falls_back_to_the_prompted_detector(tmp_path, concert):
    backend = ReplayBackend(mode="queue", answers=['{"errors": ["condition_error"]}'])
    trace = DetectorStage.from_config({"folder": str(tmp_path / "none")}).run(_ctx(concert, lambda stage: backend))
    assert trace.status == "ran" and trace.calls == 1
    assert [(f.error_type, f.source) for f in trace.findings] == [("condition_error", "detector")]


def test_stage_skips_without_a_detector_or_model(tmp_path, concert):
    trace = DetectorStage.from_config({"folder": str(tmp_path / "none")}).run(_ctx(concert))
    assert trace.status == "skipped" and "train-detector" in trace.note


def test_prompted_detector_ignores_garbage(concert):
    from sqlmend.detect.prompted import PromptedDetector

    backend = ReplayBackend(mode="queue", answers=['{"errors": ["not_a_type"]}'])
    found = PromptedDetector(backend).detect(concert, "Which singers?", "SELECT name FROM singer")
    assert not found.has_error


def test_stage_combined_with_the_verifier_and_static_findings(concert, tiny_detector):
    from sqlmend.detect.combine import Combiner, feature_row, search_settings
    from sqlmend.search.verifier import FeatureVerifier
    from sqlmend.types import Finding

    folder, _ = tiny_detector
    stage = DetectorStage.from_config({"folder": str(folder), "mode": "one_pass", "combine": True})
    for sql, static in (("SELECT name FROM singer WHERE age > 40", []),
                        ("SELECT name FROM singer WHERE age < 40",
                         [Finding(code="x", error_type="condition_error", severity="strict", message="m")])):
        ctx = _ctx(concert)
        ctx.sql = sql
        ctx.findings = list(static)
        trace = stage.run(ctx)
        c = trace.detail["combined"]
        p_none = trace.detail["detection"]["p_no_error"]
        comb = Combiner.load()
        # the search on concert_singer ends long before its budget: the same candidates each time
        v = FeatureVerifier().judge(concert, sql, ctx.task.question, findings=static,
                                    search=search_settings() if comb.uses_search else None)
        assert c["p_correct"] == round(v.p_correct, 4) and c["variant"] == comb.variant
        if comb.uses_search:
            assert c["candidates"] == v.candidates and c["best_correct"] == round(v.best, 4)
        score = comb.score(feature_row(p_none, v.p_correct, [f.error_type for f in static], v.best, v.candidates))
        assert abs(c["score"] - score) < 1e-3  # the trace rounds P(no_error)
        assert c["flagged"] == (c["score"] >= comb.threshold) and c["threshold"] == comb.threshold
        assert bool(trace.findings) == c["flagged"] and "combined P(error)" in trace.note

from __future__ import annotations

import pytest

from sqlmend.evaluation import detection_metrics, labels_from_report, refinement_metrics
from sqlmend.evaluation.evaluate import EvalReport, QuestionResult
from sqlmend.evaluation.report import detection_markdown, refinement_markdown
from sqlmend.data import Label
from sqlmend.taxonomy import to_nl2sql_bugs


def test_detection_counts_and_rates():
    truth = {"a": True, "b": True, "c": False, "d": False, "e": True}
    flags = {"a": True, "b": False, "c": True}
    m = detection_metrics(flags, truth).overall
    assert (m.tp, m.fp, m.fn, m.tn) == (1, 1, 2, 1)
    assert m.precision == pytest.approx(0.5) and m.recall == pytest.approx(1 / 3)
    assert m.accuracy == pytest.approx(2 / 5) and m.f1 == pytest.approx(0.4)


def test_per_type_with_a_type_map():
    truth = {"a": Label(False, ["value"]), "b": Label(False, ["attribute"]), "c": Label(True)}
    flags = {"a": ["value_error"], "b": ["value_error"], "c": ["no_error"]}
    m = detection_metrics(flags, truth, type_map=to_nl2sql_bugs)
    assert (m.overall.tp, m.overall.fp, m.overall.tn) == (2, 0, 1)
    assert (m.per_type["value"].tp, m.per_type["value"].fp) == (1, 1)
    assert m.per_type["attribute"].fn == 1 and m.per_type["attribute"].recall == 0.0
    assert "D-F1" in detection_markdown(m)


def test_unlabelled_flags_are_refused():
    with pytest.raises(Exception, match="no label"):
        detection_metrics({"zz": True}, {"a": True})


def _report(verdicts):
    return EvalReport(dataset="d", predictions="p", timeout=1, results=[
        QuestionResult(question_id=str(i), db_id="x", sql="", verdict=v, ordered_correct=v == "correct")
        for i, v in enumerate(verdicts)])


def test_refinement_decomposition_equals_measured_when_only_flagged_change():
    before = _report(["wrong", "wrong", "pred_error", "correct", "correct", "correct", "wrong", "gold_error"])
    after = _report(["correct", "wrong", "correct", "wrong", "correct", "correct", "wrong", "gold_error"])
    flagged = ["0", "1", "2", "3", "4"]  # TP 0,1,2 (2 fixed); FP 3,4 (1 corrupted)
    m = refinement_metrics(before, after, flagged)
    assert (m.n, m.tp, m.fp, m.fixed, m.corrupted) == (7, 3, 2, 2, 1)
    assert m.fr == pytest.approx(2 / 3) and m.cr == pytest.approx(0.5)
    assert m.delta_ex == pytest.approx(100 * (2 - 1) / 7) == m.delta_ex_measured
    assert m.unflagged_moved == 0
    assert "FR %" in refinement_markdown(m)
    assert labels_from_report(before) == {"0": True, "1": True, "2": True, "3": False, "4": False,
                                          "5": False, "6": True}

"""The review list ordered and filtered by P(error) (issue 28 item 4), on a real car_1 run."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from sqlmend.evaluation.evaluate import evaluate_run
from sqlmend.review.app import create_app
from sqlmend.review.run import Run, p_errors


def _ids(html: str) -> list[str]:
    return re.findall(r'<tr data-href="/item/([^"?]+)', html)


def test_the_list_orders_and_filters_by_p_error(car_run, tmp_path):
    run = Run.load(car_run)
    evaluate_run(run)
    c = TestClient(create_app(run, "ana", tmp_path / "store"))
    risk = p_errors(run)
    assert len(risk) == len(run.items) == 92 and all(0.0 <= p <= 1.0 for p in risk.values())
    plain = _ids(c.get("/").text)
    assert "P(error)</th>" not in c.get("/").text  # nothing computed for the plain list
    ordered = _ids(c.get("/?order=p_error").text)
    assert sorted(ordered) == sorted(plain) and [risk[q] for q in ordered] == sorted(risk.values(), reverse=True)
    above, below = _ids(c.get("/?p_error=above").text), _ids(c.get("/?p_error=below").text)
    assert len(above) + len(below) == 92 and all(risk[q] > 0.6 for q in above)  # shipped suspect_below 0.4
    page = c.get(f"/item/{ordered[0]}?order=p_error").text  # the item pages follow the order
    assert f"/item/{ordered[1]}?order=p_error" in page
    wrong = {it.qid for it in run.items if it.before not in (None, "correct")}
    assert sum(q in wrong for q in ordered[:20]) >= sum(q in wrong for q in plain[:20])

"""The review page's stage trace says each guard verdict once ("accepted: ...", never "accepted: accepted: ...").

Plain HTTP through the app (no browser).
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from sqlmend.review.app import create_app
from sqlmend.review.run import Run


def test_the_guard_column_says_accepted_once(car_run, tmp_path):
    run = Run.load(car_run)
    client = TestClient(create_app(run, "ana", tmp_path / "store"))
    page = client.get("/item/105").text  # the static stage's value fix, accepted by the guard
    cells = [re.sub(r"\s+", " ", c).strip() for c in re.findall(r"<td>((?:accepted|rejected)[^<]*)</td>", page)]
    assert "accepted: candidate executes and changes the result" in cells, cells
    assert not [c for c in cells if re.match(r"(accepted|rejected): (accepted|rejected)\b", c)], cells
    assert "accepted: accepted" not in page
    # the static stage's note names the verdict once too
    assert "rewrite accepted: candidate executes" in page and "rewrite accepted: accepted" not in page

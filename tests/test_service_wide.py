"""Wide requests never hold every thread of the service: four requests of the widest IN list its body
limit accepts run on a lane of their own, and a normal request sent during them is answered before they
are, and one sent after them too (real HTTP on loopback, world_1; ``bench pathological``'s scenario)."""

from __future__ import annotations

import pytest

from sqlmend.stress.pathological import normal_ok, wide_requests, widest_in_list
from sqlmend.pipeline import PipelineConfig
from sqlmend.service import ServiceSettings, create_app
from sqlmend.service.runner import BackgroundServer

pytestmark = pytest.mark.slow


def test_four_wide_requests_leave_a_normal_one_answered(data_dir):
    # the wide lane: one thread. The four queue on it; what this test proves is the lane, not the deadline:
    # on a loaded machine (parallel test workers, other jobs) the last of them passed the default 30 s
    settings = ServiceSettings(log_requests=False, deadline=120)
    n, body = widest_in_list(settings.max_body_bytes)
    app = create_app(PipelineConfig(), db_root=str(data_dir / "spider" / "database"), settings=settings)
    with BackgroundServer(app) as server:
        answers = wide_requests(server.url, body)
    assert n >= 5000
    assert normal_ok(answers["during"]) and normal_ok(answers["after"])
    wides = [answers[f"wide{i}"] for i in range(4)]
    assert all(status == 200 and answer["error"] is None for status, _, _, answer in wides)
    assert answers["during"][2] < max(finished for _, _, finished, _ in wides)  # not queued behind the four

"""Wide requests never hold every thread of the service: four requests of the widest IN list its body
limit accepts run on a lane of their own, and a normal request sent during them is answered before they
are, and one sent after them too (real HTTP on loopback, world_1)."""

from __future__ import annotations

import json
import threading
import time

import httpx

from sqlmend.bench.pathological import NORMAL, in_list
from sqlmend.pipeline import PipelineConfig
from sqlmend.service import ServiceSettings, create_app
from sqlmend.service.runner import BackgroundServer


def test_four_wide_requests_leave_a_normal_one_answered(data_dir):
    settings = ServiceSettings(log_requests=False, max_concurrency=2)  # the wide lane: one thread
    n = 500
    while len(json.dumps({"db_id": "world_1", "question": "q", "sql": in_list(n + 500)})) < settings.max_body_bytes:
        n += 500
    wide = {"db_id": "world_1", "question": "Which cities?", "sql": in_list(n)}
    normal = {"db_id": "world_1", "question": NORMAL[0], "sql": NORMAL[1]}
    app = create_app(PipelineConfig(), db_root=str(data_dir / "spider" / "database"), settings=settings)
    done: dict[str, tuple[float, int, dict]] = {}
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=300) as client:
        assert client.post("/correct", json=normal).status_code == 200

        def post(name: str, body: dict) -> None:
            r = client.post("/correct", json=body)
            done[name] = (time.monotonic(), r.status_code, r.json())

        threads = [threading.Thread(target=post, args=(f"wide{i}", wide)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.1)
        post("during", normal)
        for t in threads:
            t.join()
        post("after", normal)
    assert n >= 5000
    for name in ("during", "after"):
        _, status, body = done[name]
        assert status == 200 and body["sql"] == NORMAL[1] and body["error"] is None
    wides = [done[f"wide{i}"] for i in range(4)]
    assert all(status == 200 for _, status, _ in wides)
    assert done["during"][0] < max(t for t, _, _ in wides)  # not queued behind the four on one thread
    static = next(s for s in wides[0][2]["stages"] if s["stage"] == "static")
    assert wides[0][2]["error"] is None and static["status"] == "ran"

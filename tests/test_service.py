"""The HTTP service on real Spider databases, through FastAPI's test client."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from sqlmend.llm import ReplayBackend
from sqlmend.pipeline import PipelineConfig
from sqlmend.service import create_app

CASE = "SELECT Song_Name FROM singer WHERE Country = 'united states'"
FIXED = "SELECT Song_Name FROM singer WHERE Country = 'United States'"


def client(data_dir, **kw) -> TestClient:
    # the recorded model answer is used only if the static rules leave the error to refinement
    model = ReplayBackend.scripted([json.dumps({"sql": FIXED, "addressed": ["value_error"]})])
    return TestClient(create_app(PipelineConfig(stages=["static", "refine", "guard"]),
                                 resolve=lambda stage: model if stage == "refiner" else None,
                                 db_root=str(data_dir / "spider" / "database"), **kw))


def test_correct_returns_the_guarded_rewrite_and_its_trace(data_dir):
    r = client(data_dir).post("/correct", json={"db_id": "concert_singer", "question": "songs?", "sql": CASE})
    assert r.status_code == 200
    body = r.json()
    assert body["changed"] and body["sql"] == FIXED
    assert [s["stage"] for s in body["stages"]] == ["static", "refine", "guard"]


def test_check_reports_findings_without_rewriting(data_dir):
    body = client(data_dir).post("/check", json={"db_id": "concert_singer", "question": "songs?",
                                         "sql": CASE}).json()
    assert body["wrong"] and body["findings"][0]["error_type"] == "value_error"
    assert [s["stage"] for s in body["stages"]] == ["static"]


def test_bad_requests_are_clear(data_dir):
    c = client(data_dir)
    assert c.post("/correct", json={"question": "q", "sql": "SELECT 1"}).status_code == 400
    assert c.post("/correct", json={"db": "/tmp/x.sqlite", "question": "q", "sql": "SELECT 1"}).status_code == 400
    assert c.post("/correct", json={"db_id": "concert_singer"}).status_code == 422
    missing = c.post("/correct", json={"db_id": "nope", "question": "q", "sql": "SELECT 1"}).json()
    assert "not found" in missing["error"] and missing["sql"] == "SELECT 1"


def test_health_lists_the_stages(data_dir):
    assert client(data_dir).get("/health").json()["stages"] == {"static": True, "refine": True, "guard": True}

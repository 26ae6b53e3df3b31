"""The service as deployed: real HTTP on loopback (uvicorn in a thread), real Spider databases.

Hostile database ids, server paths kept out of answers and logs, bearer token,
body size, saturation (503 + Retry-After), deadline (504), the refused finding
(EX03) in the service and the CLI, Prometheus metrics and the JSON request log.
"""

from __future__ import annotations

import io
import json
import shutil
import threading
import time

import httpx
import pytest
from typer.testing import CliRunner

from sqlmend.cli import app as cli_app
from sqlmend.llm import ReplayBackend
from sqlmend.errors import DatabaseNotFoundError
from sqlmend.pipeline import PipelineConfig, database_for
from sqlmend.service import ServiceSettings, create_app
from sqlmend.service.observe import configure_logging
from sqlmend.service.runner import BackgroundServer
from sqlmend.service.scrub import server_roots
from sqlmend.types import Task

# about a second of SQLite work: keeps a request in flight while the test looks
SLOW = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
        "SELECT count(*) FROM c")
TRAVERSAL_IDS = ["../../etc", "..", "../concert_singer", "concert_singer/../concert_singer", "a/b",
                 "/etc/passwd", "concert singer", "con\x00cert", ".hidden", "x" * 200]


def serve(root=None, **settings):
    config = PipelineConfig(stages=["static", "guard"])
    return BackgroundServer(create_app(config, db_root=str(root) if root else None,
                                       settings=ServiceSettings(**settings)))


def leaks(text: str, *extra) -> list[str]:
    return [r for r in server_roots(extra) if r in text]


@pytest.fixture(scope="module")
def server():
    with serve() as s:
        yield s


@pytest.fixture
def crafted_root(tmp_path, spider_db):
    """A database root, and beside it a folder ``evil`` with a same-named ``evil.sqlite`` next to it:
    ``<root>/../evil/../evil.sqlite`` is a real file that a joined path would open."""
    root = tmp_path / "root"
    (root / "concert_singer").mkdir(parents=True)
    shutil.copy(spider_db("concert_singer"), root / "concert_singer" / "concert_singer.sqlite")
    (tmp_path / "evil").mkdir()
    shutil.copy(spider_db("concert_singer"), tmp_path / "evil.sqlite")
    return root


def post(server, body, path="/correct", **kw):
    return httpx.post(server.url + path, json={"question": "q", **body}, timeout=30, **kw)


@pytest.mark.parametrize("db_id", TRAVERSAL_IDS)
def test_a_database_id_that_is_not_a_plain_name_is_a_400_naming_no_path(server, db_id):
    r = post(server, {"db_id": db_id, "sql": "SELECT 1"})
    assert r.status_code == 400, r.text
    assert "plain name" in r.json()["detail"]
    assert leaks(r.text) == []


def test_a_crafted_id_never_opens_the_file_beside_the_root(crafted_root):
    evil = crafted_root.parent / "evil.sqlite"
    assert (crafted_root / "../evil/../evil.sqlite").resolve() == evil.resolve()  # the trap is real
    with serve(crafted_root) as s:
        r = post(s, {"db_id": "../evil", "sql": "SELECT count(*) FROM singer"})
        assert r.status_code == 400 and leaks(r.text, crafted_root) == []
        ok = post(s, {"db_id": "concert_singer", "sql": "SELECT count(*) FROM singer"})
        assert ok.status_code == 200 and ok.json()["error"] is None
    with pytest.raises(DatabaseNotFoundError, match="plain name"):  # the CLI's path too
        database_for(Task("1", "../evil", "q", "SELECT 1"), str(crafted_root))


def test_an_unknown_database_names_no_server_path(crafted_root):
    with serve(crafted_root) as s:
        body = post(s, {"db_id": "nope", "sql": "SELECT 1"})
    assert body.status_code == 200
    assert body.json()["error"] == "DatabaseNotFoundError: database 'nope' not found"
    assert leaks(body.text, crafted_root) == []


def test_answers_of_every_kind_carry_no_server_path(server):
    for sql in ("SELECT nam FROM singer", "SELEC Name FROM singer", "DELETE FROM singer",
                "SELECT readfile('/etc/passwd')", "SELECT Name FROM singer WHERE Country = 'france'"):
        for path in ("/correct", "/check"):
            r = post(server, {"db_id": "concert_singer", "sql": sql}, path=path)
            assert r.status_code == 200 and leaks(r.text) == [], (sql, r.text)


def test_a_refused_statement_has_its_own_finding_and_is_never_rewritten(server):
    for sql in ("DELETE FROM singer WHERE Age > 40", "PRAGMA table_info(singer)",
                "SELECT 1; SELECT 2", "ATTACH DATABASE 'x.sqlite' AS x"):
        body = post(server, {"db_id": "concert_singer", "sql": sql}).json()
        findings = [f for s in body["stages"] for f in s["findings"]]
        assert [f["code"] for f in findings] == ["EX03"], (sql, findings)
        assert findings[0]["error_type"] == "refused"
        assert findings[0]["message"].startswith("refused: not one read-only query")
        assert body["sql"] == sql and not body["changed"]
    check = post(server, {"db_id": "concert_singer", "sql": "DROP TABLE singer"}, path="/check").json()
    assert check["wrong"] and check["refused"] and check["findings"][0]["code"] == "EX03"


def test_the_pipeline_stops_at_a_refusal_and_asks_no_model(spider_db):
    from sqlmend.pipeline import Pipeline

    model = ReplayBackend.scripted(['{"sql": "SELECT Name FROM singer", "addressed": ["clause_error"]}'])
    pipe = Pipeline(PipelineConfig(stages=["static", "refine", "guard"]), resolve=lambda stage: model)
    result = pipe.correct(Task("1", "concert_singer", "names", "DELETE FROM singer",
                               db=str(spider_db("concert_singer"))))
    assert [(t.stage, t.status) for t in result.stages] == [("static", "ran"), ("refine", "skipped"),
                                                             ("guard", "ran")]
    assert result.stages[1].note == "refused: not one read-only query"
    assert result.sql == "DELETE FROM singer" and model.history == []


def test_the_cli_reports_the_refusal_too(spider_db):
    out = CliRunner().invoke(cli_app, ["check", "--db", str(spider_db("concert_singer")), "--sql",
                                       "UPDATE singer SET Age = 0", "--json"])
    assert out.exit_code == 0, out.output
    findings = json.loads(out.output)["findings"]
    assert [(f["code"], f["error_type"]) for f in findings] == [("EX03", "refused")]


def test_bearer_token(monkeypatch):
    monkeypatch.setenv("SQLMEND_TOKEN", "s3cret")
    settings = ServiceSettings.from_env()
    assert settings.token == "s3cret"
    with BackgroundServer(create_app(PipelineConfig(stages=["static", "guard"]), settings=settings)) as s:
        body = {"db_id": "concert_singer", "sql": "SELECT count(*) FROM singer"}
        assert post(s, body).status_code == 401
        wrong = post(s, body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Bearer")
        assert post(s, body, headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert httpx.get(s.url + "/metrics").status_code == 401
        assert httpx.get(s.url + "/health").status_code == 200  # probes need no token


def test_request_size_limit():
    with serve(max_body_bytes=2000) as s:
        big = {"db_id": "concert_singer", "question": "q", "sql": "SELECT 1 -- " + "x" * 5000}
        assert httpx.post(s.url + "/correct", json=big).status_code == 413

        def chunks():  # no Content-Length: counted while it streams in
            yield json.dumps(big).encode()[:1500]
            yield json.dumps(big).encode()[1500:]

        r = httpx.post(s.url + "/correct", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert post(s, {"db_id": "concert_singer", "sql": "SELECT 1"}).status_code == 200


def _wait_in_flight(server, n: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if f"sqlmend_in_flight {float(n)}" in httpx.get(server.url + "/metrics").text:
            return
        time.sleep(0.02)
    raise AssertionError("the slow request never got in flight")


def test_saturation_is_a_503_with_retry_after():
    with serve(max_concurrency=1, max_queue=0, retry_after=3) as s:
        slow = threading.Thread(target=post, args=(s, {"db_id": "concert_singer", "sql": SLOW}))
        slow.start()
        _wait_in_flight(s, 1)
        r = post(s, {"db_id": "concert_singer", "sql": "SELECT 1"})
        slow.join()
        assert r.status_code == 503 and r.headers["retry-after"] == "3"
        assert post(s, {"db_id": "concert_singer", "sql": "SELECT 1"}).status_code == 200
        assert 'sqlmend_rejected_total{reason="saturated"} 1.0' in httpx.get(s.url + "/metrics").text


class SlowModel:
    """A model endpoint that answers (a recorded answer) only after ``seconds``: the edge of the world."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.inner = ReplayBackend.scripted(['{"sql": "SELECT Name FROM singer"}'] * 4)

    def chat(self, *args, **kwargs):
        time.sleep(self.seconds)
        return self.inner.chat(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_request_past_its_deadline_is_a_504_and_sql_is_capped_to_it():
    model = SlowModel(3.0)
    app = create_app(PipelineConfig(strategy="self-correction"), resolve=lambda stage: model,
                     settings=ServiceSettings(deadline=0.5))
    assert app.state.service.pipe.run.timeout == 0.5  # no SQL outlives the request
    with BackgroundServer(app) as s:
        start = time.monotonic()
        r = post(s, {"db_id": "concert_singer", "sql": "SELECT Name FROM singer WHERE Age > 40"})
        assert r.status_code == 504 and "deadline of 0.5 s" in r.json()["detail"]
        assert time.monotonic() - start < 2.5


def test_metrics_and_json_request_log():
    stream = io.StringIO()
    configure_logging(stream)
    with serve() as s:
        post(s, {"db_id": "concert_singer", "sql": "SELECT Name FROM singer WHERE Country = 'france'"},
             headers={"X-Request-ID": "req-42"})
        post(s, {"db_id": "concert_singer", "sql": "DELETE FROM singer"})
        post(s, {"db_id": "../x", "sql": "SELECT 1"})
        text = httpx.get(s.url + "/metrics").text
    configure_logging()
    assert 'sqlmend_requests_total{endpoint="/correct",status="200"} 2.0' in text
    assert 'sqlmend_requests_total{endpoint="/correct",status="400"} 1.0' in text
    assert 'sqlmend_request_seconds_bucket{endpoint="/correct",le="0.1"}' in text
    assert 'sqlmend_stage_outcomes_total{stage="static",status="ran"} 2.0' in text
    assert 'sqlmend_stage_outcomes_total{stage="guard",status="ran"} 2.0' in text
    assert "sqlmend_refused_total 1.0" in text
    assert 'sqlmend_rejected_total{reason="invalid_db_id"} 1.0' in text
    for name in ("sqlmend_model_calls_total", "sqlmend_model_tokens_total", "sqlmend_guard_rejections_total"):
        assert f"# TYPE {name} counter" in text
    lines = [json.loads(x) for x in stream.getvalue().splitlines()]
    first = next(x for x in lines if x.get("request_id") == "req-42")
    assert first["database"] == "concert_singer" and first["status"] == 200
    assert first["stages"] == ["static:ran", "guard:ran"] and first["verdict"] in ("changed", "unchanged")
    assert {"ms", "model_calls", "tokens_in", "tokens_out"} <= set(first)
    assert [x["verdict"] for x in lines if x.get("status") == 200][1] == "refused"
    assert [x.get("refused") for x in lines if x.get("status") == 400] == ["invalid_db_id"]
    assert leaks(stream.getvalue()) == []


def test_one_pipeline_per_app_whatever_the_database(spider_db):
    with serve(allow_paths=True) as s:
        service = s.server.config.app.state.service
        built = (service.pipe, service.pipe.stages, service.checker)
        for body in ({"db_id": "concert_singer"}, {"db": str(spider_db("pets_1"))}):
            r = post(s, {**body, "sql": "SELECT 1"})
            assert r.status_code == 200 and r.json()["error"] is None
        assert (service.pipe, service.pipe.stages, service.checker) == built

"""The review app over HTTP (no browser): filters, decisions, refusals, the memory build, run.json."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from sqlmend.evaluation.evaluate import evaluate_run
from sqlmend.cli import app as cli
from sqlmend.errors import DatasetError
from sqlmend.review.app import create_app
from sqlmend.review.confirm import confirmations
from sqlmend.review.decisions import ReviewLog
from sqlmend.review.run import Run

from review_counts import static_counts


@pytest.fixture
def client(car_run, tmp_path):
    run = Run.load(car_run)
    evaluate_run(run)
    app = create_app(run, "ana", tmp_path / "store")
    return TestClient(app), app.state.csrf, run


def _rows(html: str) -> int:
    return html.count('class="row"')


def test_filters_and_counts(client):
    c, _, run = client
    assert _rows(c.get("/").text) == len(run.items) == 92
    changed, fixed = static_counts(run)
    assert _rows(c.get("/?verdict=fixed").text) == fixed
    assert _rows(c.get("/?changed=yes&stage=static").text) == changed
    assert _rows(c.get("/?rule=VL03").text) == sum("VL03" in it.rules for it in run.items) > 0
    assert _rows(c.get("/?error_type=value_error&db=car_1").text) > 0
    assert _rows(c.get("/?db=no_such_db").text) == 0
    page = c.get("/item/105?changed=yes").text
    assert 'data-next="/item/' in page and "changed=yes" in page  # j/k stay inside the filter
    assert "Content-Security-Policy" in c.get("/").headers


def test_state_changes_need_the_csrf_token_and_the_same_origin(client):
    c, token, run = client
    assert c.post("/item/105/decide", data={"action": "accept"}).status_code == 403
    assert c.post("/item/105/decide", data={"action": "accept", "csrf": "x" * 43}).status_code == 403
    r = c.post("/item/105/decide", data={"action": "accept", "csrf": token},
               headers={"origin": "http://evil.example"})
    assert r.status_code == 403
    assert c.post("/memory/build", data={}).status_code == 403
    r = c.post("/item/105/decide", data={"action": "accept", "csrf": token}, headers={"origin": "null"})
    assert r.status_code == 403
    assert not (run.folder / "reviews.jsonl").exists()


def test_an_edit_that_writes_is_refused_and_not_saved(client):
    c, token, run = client
    r = c.post("/item/112/check", data={"csrf": token, "sql": "DELETE FROM cars_data"})
    assert r.status_code == 422 and "ReadOnlyViolation" in r.text and "save-form" not in r.text
    r = c.post("/item/112/decide", data={"csrf": token, "action": "edit", "sql": "DROP TABLE cars_data"},
               follow_redirects=False)
    assert r.status_code == 422 and not (run.folder / "reviews.jsonl").exists()
    r = c.post("/item/112/check", data={"csrf": token, "sql": "SELECT count(*) FROM cars_data"})
    assert r.status_code == 200 and "save-form" in r.text and "406" in r.text  # executed and shown


def test_an_advisory_fix_is_suggested_and_saved_as_an_edit_once_checked(client):
    """GPT-4 zero-shot's q149 joins car_makers.Id with car_names.MakeId, ids the keys link only through
    model_list: TB04 (advisory) proposes the join through it, the static stage leaves the SQL as it was,
    and the reviewer can check the proposal and save it as the correction."""
    c, token, run = client
    page = c.get("/item/149").text
    assert "suggested fixes (1)" in page and "TB04" in page
    fix = run.item("149").correction.findings[0].fixes
    import html

    from sqlmend import sql as sqlmod

    text = sqlmod.fixes.apply(run.item("149").correction.original_sql, fix)
    assert "JOIN model_list ON" in text and html.escape(text, quote=True) in page
    r = c.post("/item/149/check", data={"csrf": token, "sql": text})
    assert r.status_code == 200 and "save-form" in r.text
    r = c.post("/item/149/decide", data={"csrf": token, "action": "edit", "sql": text}, follow_redirects=False)
    assert r.status_code == 303 and ReviewLog(run.folder).latest()["149"].sql == text
    assert "suggested fixes" not in c.get("/item/112").text  # nothing unapplied to propose there


def test_decisions_are_appended_and_the_latest_counts(client):
    c, token, run = client
    for action in ("accept", "reject"):
        r = c.post("/item/105/decide", data={"csrf": token, "action": action, "next": "106"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/item/106"
    lines = [json.loads(x) for x in (run.folder / "reviews.jsonl").read_text().splitlines()]
    assert [x["action"] for x in lines] == ["accept", "reject"] and lines[1]["sql"] is None
    latest = ReviewLog(run.folder).latest()
    assert latest["105"].action == "reject"
    confirmed, skipped = confirmations(run, latest)
    assert confirmed == [] and "rejected" in skipped["105"]
    c.post("/item/110/decide", data={"csrf": token, "action": "accept"})  # unchanged: nothing to learn
    _, skipped = confirmations(run, ReviewLog(run.folder).latest())
    assert "unchanged" in skipped["110"]


def test_memory_build_reports_items_and_reasons(client):
    c, token, run = client
    c.post("/item/112/decide", data={"csrf": token, "action": "edit", "sql":
           "SELECT Accelerate FROM car_names JOIN cars_data ON car_names.MakeId = cars_data.Id "
           "WHERE Make = 'amc hornet sportabout (sw)'"})
    c.post("/item/105/decide", data={"csrf": token, "action": "accept"})
    page = c.post("/memory/build", data={"csrf": token}).text
    assert "predicate_column" in page and "model judge" in page
    build = json.loads((run.folder / "memory_builds.jsonl").read_text().splitlines()[-1])
    by_q = {o["question_id"]: o for o in build["outcomes"]}
    assert [i["kind"] for i in by_q["112"]["items"]] == ["predicate_column"]
    assert by_q["105"]["items"] == [] and by_q["105"]["reasons"][0]["stage"] == "judge"
    # building again follows the latest decisions: the rejected edit's item is forgotten
    c.post("/item/112/decide", data={"csrf": token, "action": "reject"})
    c.post("/memory/build", data={"csrf": token})
    from sqlmend.memory.store import MemoryStore

    with MemoryStore(c.app.state.store, "car_1", create=False) as store:
        assert [i.support.question_id for i in store.items()] == []


def test_correct_writes_run_info_that_review_reads(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "din-sql_gpt-4.sql"
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["correct", "--dataset", "spider-dev", "--pred", str(pred), "--out", str(out),
                                 "--limit", "3", "--stages", "static,guard", "--quiet"])
    assert r.exit_code == 0, r.output
    info = json.loads((out / "run.json").read_text())
    assert info["dataset"] == "spider-dev" and info["pred"] == str(pred.resolve())
    run = Run.load(out)
    assert [it.qid for it in run.items] == ["0", "1", "2"] and run.items[0].task.question
    assert run.stages == ["static", "guard"]
    with pytest.raises(DatasetError, match="not a correction run"):
        Run.load(tmp_path)


def test_search_candidates_in_a_trace_are_shown_with_their_scores(car_run, tmp_path):
    path = car_run / "corrections.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for d in lines:  # a stage trace as the repair-search stage writes it: detail["top"], detail["original"]
        if d["question_id"] == "112":
            d["stages"][0]["detail"].update(original={"sql": d["original_sql"], "score": 0.12}, top=[
                {"sql": "SELECT Accelerate FROM car_names JOIN cars_data ON car_names.MakeId = cars_data.Id "
                        "WHERE Make = 'amc hornet sportabout (sw)'", "score": 0.93, "edits": ["column_swap"]},
                {"sql": "SELECT Accelerate FROM cars_data", "score": 0.05, "edits": ["drop_filter"]}])
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    c = TestClient(create_app(Run.load(car_run), "ana", tmp_path / "store"))
    page = c.get("/item/112").text
    assert "candidates (2)" in page and "0.93" in page and "column_swap" in page and "original scored 0.12" in page
    assert "candidates (" not in c.get("/item/105").text


def test_only_the_served_host_names_are_answered(car_run, tmp_path):
    app = create_app(Run.load(car_run), "ana", tmp_path / "store", allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://127.0.0.1:8765").get("/").status_code == 200
    # a page of another site whose name now resolves to 127.0.0.1 (DNS rebinding) gets nothing
    assert TestClient(app, base_url="http://evil.example:8765").get("/").status_code == 400


def test_memory_build_refits_the_systems_adaptation_when_the_store_holds_one(client):
    """A confirmed correction from the review page teaches the search's adaptation too (issue 28):
    the store's adaptation.json gains the question in its history, once however often one builds."""
    from sqlmend.search import adaptation as adapt

    c, token, run = client
    store = c.app.state.store
    obs = [adapt.Observation(f"h{i}", 0.5, False, [{"score": 0.2, "generators": ["join_path"], "right": False}])
           for i in range(20)]
    adapt.save(adapt.fit("sys", obs, {o.question_id: True for o in obs}, 0.4, 20), store)
    c.post("/item/112/decide", data={"csrf": token, "action": "edit", "sql":
           "SELECT Accelerate FROM car_names JOIN cars_data ON car_names.MakeId = cars_data.Id "
           "WHERE Make = 'amc hornet sportabout (sw)'"})
    for _ in range(2):
        c.post("/memory/build", data={"csrf": token})
        refit = adapt.load(store)
        assert [d["question_id"] for d in refit.observations].count("112") == 1
        assert refit.history["questions"] == 21
    build = json.loads((run.folder / "memory_builds.jsonl").read_text().splitlines()[-1])
    assert {o["question_id"]: o["adaptation"] for o in build["outcomes"]}["112"] == refit.label

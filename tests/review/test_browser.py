"""The review pages and the HTML report in a real browser (headless Chromium).

A real run (GPT-4 zero-shot on car_1, static rules) is reviewed: one correction
accepted, one edited, one rejected with the keyboard; memory is built; a rerun
of ``sqlmend correct`` with the memory stage applies the new item to a
paraphrase question on car_1 (Spider dev #111, DIN-SQL's prediction).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("selenium", reason="selenium not installed (pip install -e .[dev])")

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait
from typer.testing import CliRunner

from sqlmend.evaluation.evaluate import evaluate_run
from sqlmend.cli import app as cli

from review_counts import static_counts

# Spider dev #112 as GPT-4 zero-shot wrote it compares the car name with car_names.Model; it is stored in Make.
EDITED = ("SELECT Accelerate FROM car_names JOIN cars_data ON car_names.MakeId = cars_data.Id "
          "WHERE Make = 'amc hornet sportabout (sw)'")
# The paraphrase (#111) as DIN-SQL wrote it: the same wrong column.
PARAPHRASE_Q = "What is the accelerate of the car make amc hornet sportabout (sw)?"
PARAPHRASE_SQL = ("SELECT T1.Accelerate FROM cars_data AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId "
                  "WHERE T2.Model = 'amc hornet sportabout (sw)'")


def _press(browser, keys: str) -> None:
    ActionChains(browser).send_keys(keys).perform()


def _wait_url(browser, fragment: str) -> None:
    WebDriverWait(browser, 10).until(EC.url_contains(fragment))
    _wait_loaded(browser)


def _wait_loaded(browser) -> None:
    """Wait until the page the browser navigated to has run its script (keys go to the new page)."""
    WebDriverWait(browser, 10).until(lambda b: b.execute_script("return document.readyState") == "complete")


def _wait_left(browser, url: str) -> None:
    WebDriverWait(browser, 10).until(lambda b: b.current_url != url)
    _wait_loaded(browser)


def _decisions(run_dir):
    return [json.loads(x) for x in (run_dir / "reviews.jsonl").read_text().splitlines()]


def test_accept_edit_reject_build_memory_and_rerun(served, browser, screenshot, spider_db, tmp_path):
    browser.get(served.url + "/?changed=yes")
    rows = browser.find_elements(By.CSS_SELECTOR, "#items tbody tr.row")
    evaluate_run(served.run)
    changed, fixed = static_counts(served.run)
    assert len(rows) == changed  # the static rules' rewrites of the 92 queries
    assert str(fixed) in browser.find_element(By.CSS_SELECTOR, ".counts .v-fixed").text
    screenshot("review-list")

    # accept #105 (a join on the foreign-key pair; fixed) with the keyboard: the page moves on to the next item
    browser.get(served.url + "/item/105")
    assert browser.find_elements(By.CSS_SELECTOR, "#sql-original del")  # the diff marks what changed
    assert "row" in browser.find_element(By.CSS_SELECTOR, ".results .rowcount").text
    screenshot("review-item", full_height=True)
    _press(browser, "a")
    _wait_left(browser, served.url + "/item/105")

    # edit #112: e opens the editor, Ctrl+Enter checks and executes, Enter saves
    browser.get(served.url + "/item/112")
    _press(browser, "e")
    box = browser.find_element(By.ID, "edit-sql")
    assert browser.switch_to.active_element == box
    box.clear()
    box.send_keys(EDITED)
    box.send_keys(Keys.CONTROL, Keys.ENTER)
    WebDriverWait(browser, 10).until(EC.presence_of_element_located((By.ID, "save-button")))
    _wait_loaded(browser)
    assert "1 row" in browser.find_element(By.CSS_SELECTOR, "#checked .rowcount").text
    screenshot("review-edit")
    assert browser.switch_to.active_element.get_attribute("id") == "save-button"
    _press(browser, Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda b: "/check" not in b.current_url)

    # reject #99
    browser.get(served.url + "/item/99")
    _press(browser, "r")
    WebDriverWait(browser, 10).until(lambda b: "/item/99" not in b.current_url)

    got = {d["question_id"]: d for d in _decisions(served.run.folder)}
    assert {q: d["action"] for q, d in got.items()} == {"105": "accept", "112": "edit", "99": "reject"}
    assert got["112"]["sql"] == EDITED and got["105"]["sql"] == got["105"]["proposed_sql"]
    assert {d["reviewer"] for d in got.values()} == {"ana"} and all(d["at"] for d in got.values())

    # build memory: the edit gives a predicate-column item, the accepted join change needs a model judge
    browser.get(served.url + "/memory")
    browser.find_element(By.ID, "build-button").click()
    WebDriverWait(browser, 20).until(EC.presence_of_element_located((By.ID, "outcomes")))
    row = browser.find_element(By.CSS_SELECTOR, "#outcomes tr[data-qid='112']")
    assert "predicate_column" in row.text
    assert "judge" in browser.find_element(By.CSS_SELECTOR, "#outcomes tr[data-qid='105']").text
    screenshot("review-memory")

    # the next correct run on car_1 with the same store applies the item to the paraphrase
    store = str(served.app.state.store)
    args = ["correct", "--db", str(spider_db("car_1")), "--question", PARAPHRASE_Q, "--sql", PARAPHRASE_SQL,
            "--stages", "memory,guard", "--memory-store", store]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "corrected:" in result.output and "T2.make = 'amc hornet sportabout (sw)'" in result.output
    empty = CliRunner().invoke(cli, args[:-1] + [str(tmp_path / "empty-store")])
    assert "unchanged:" in empty.output  # without the built item nothing changes


def test_fifty_items_decided_with_the_keyboard_alone(served, browser):
    browser.get(served.url + "/?decision=undecided")
    _press(browser, "j")  # the list's cursor: j moves, Enter opens
    _press(browser, Keys.ENTER)
    _wait_url(browser, "/item/")
    for i in range(50):
        current = browser.current_url
        _press(browser, "a" if i % 2 == 0 else "r")
        _wait_left(browser, current)
    decisions = _decisions(served.run.folder)
    assert len(decisions) == 50 and len({d["question_id"] for d in decisions}) == 50
    assert [d["action"] for d in decisions[:4]] == ["accept", "reject", "accept", "reject"]
    # j/k move without deciding
    before = browser.current_url
    _press(browser, "k")
    _wait_left(browser, before)
    _press(browser, "j")
    WebDriverWait(browser, 10).until(lambda b: b.current_url == before)
    assert len(_decisions(served.run.folder)) == 50


def test_html_report_plots_render(car_run, browser, screenshot, tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", str(car_run), "--html", str(out)])
    assert result.exit_code == 0, result.output
    from sqlmend.review.run import Run

    run = Run.load(car_run)
    evaluate_run(run)
    changed, fixed = static_counts(run)
    assert f"| static | {changed} | {fixed} | 0 |" in result.output  # Markdown stays the terminal output
    text = out.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    assert "<script" not in text and "<link" not in text  # self-contained: nothing to fetch
    browser.get(out.as_uri())
    figures = browser.find_elements(By.CSS_SELECTOR, ".figure svg")
    assert len(figures) >= 6
    for svg in figures:
        assert svg.size["width"] > 100 and svg.size["height"] > 50
    bars = browser.find_elements(By.CSS_SELECTOR, "#fig-difficulty rect.bar")
    assert len(bars) == 8 and all(b.size["height"] > 0 for b in bars)  # 4 levels x before/after, none empty here
    assert browser.find_elements(By.CSS_SELECTOR, "#fig-stage rect.bar")
    screenshot("report", full_height=True)


def test_eval_html_report_of_a_paired_evaluation(car_run, browser, tmp_path, spider_dir):
    from sqlmend.data import Dataset, load_dataset, write_predictions, write_tasks
    from sqlmend.review.run import Run

    run = Run.load(car_run)
    ds = load_dataset("spider-dev")
    sub = Dataset("car_1", [ds.task(it.qid) for it in run.items], db_root=ds.db_root)
    write_tasks(tmp_path / "tasks.jsonl", sub, "jsonl")
    write_predictions(tmp_path / "before.jsonl", {it.qid: it.correction.original_sql for it in run.items}, sub, "jsonl")
    write_predictions(tmp_path / "after.jsonl", {it.qid: it.correction.sql for it in run.items}, sub, "jsonl")
    out = tmp_path / "eval.html"
    result = CliRunner().invoke(cli, ["eval", "--dataset", str(tmp_path / "tasks.jsonl"), "--db-root",
                                      str(spider_dir / "database"), "--pred", str(tmp_path / "before.jsonl"),
                                      "--against", str(tmp_path / "after.jsonl"), "--html", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert "| all | 92 |" in result.output  # the Markdown report is still printed
    browser.get(out.as_uri())
    evaluate_run(run)
    assert f"fixed {static_counts(run)[1]}" in browser.find_element(By.CSS_SELECTOR, ".kpis").text.replace("\n", " ")
    figures = browser.find_elements(By.CSS_SELECTOR, ".figure svg")
    assert len(figures) == 2 and all(f.size["width"] > 100 and f.size["height"] > 50 for f in figures)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#fig-difficulty rect.bar")) == 8

"""A real Spider correction through the whole of MIRA without a model: build (§3.2), then reuse (§3.3)."""

from __future__ import annotations

from sqlmend.memory.build import BuildReport, ConfirmedCorrection, build_items, build_memory
from sqlmend.memory.stage import MemoryStage
from sqlmend.memory.store import MemoryStore
from sqlmend.stage import StageContext
from sqlmend.types import Task

# Spider dev #6 as CodeS-1B predicted it, with the gold as the confirmed correction.
CASE = ConfirmedCorrection(
    "6", "Show the name and the release year of the song by the youngest singer.",
    "SELECT singer.name ,  singer.song_release_year FROM singer JOIN singer_in_concert "
    "ON singer.singer_id  =  singer_in_concert.singer_id ORDER BY singer.age LIMIT 1",
    "SELECT song_name ,  song_release_year FROM singer ORDER BY age LIMIT 1")


def test_decomposition_keeps_the_column_fix_and_drops_the_join_change(concert_db):
    report = BuildReport()
    logged = []
    items = build_items(concert_db, CASE, report=report, log=lambda *a: logged.append(a), db_id="concert_singer")
    assert report.recovered["direct"] == 1  # a small edit of the wrong SQL: no model needed
    [item] = items
    assert item.kind == "column_substitution"
    assert item.check.params == {"wrong": "singer.name", "right": "singer.song_name", "clause": "select"}
    assert "col:select:singer.name" in item.keys
    assert [stage for _, stage, _ in logged] == ["judge"]  # the join removal needs a model judge


def test_decomposition_ablation_keeps_one_unjudgeable_unit(concert_db):
    report = BuildReport()
    assert build_items(concert_db, CASE, report=report, decompose=False) == []
    assert report.rejected["judge"] == 1


def test_built_item_repairs_another_question_and_spares_a_correct_one(tmp_path, concert_db):
    with MemoryStore(tmp_path, "concert_singer") as store:
        assert build_memory(concert_db, "concert_singer", [CASE], store).items == 1
    stage = MemoryStage.from_config({"store": str(tmp_path)})

    def run(question, sql):
        return stage.run(StageContext(task=Task("t", "concert_singer", question, sql), db=concert_db, sql=sql))

    fixed = run("What are the song names of singers older than 40?", "SELECT name FROM singer WHERE age > 40")
    assert fixed.verdict.accepted and fixed.candidate == "SELECT song_name FROM singer WHERE age > 40"
    kept = run("What are the names of singers older than 40?", "SELECT name FROM singer WHERE age > 40")
    assert kept.candidate is None and not kept.findings

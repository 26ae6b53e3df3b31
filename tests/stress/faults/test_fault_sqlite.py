"""SQLite files locked by a real writer process, rewritten in place and deleted during a real batch;
a lock or a rewrite under an open connection; a re-run retries what a transient fault stopped."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys

import pytest

from sqlmend.stress.faults import _LOCKER, sqlite_fault
from sqlmend.db import connect
from sqlmend.errors import DatabaseUnavailable
from sqlmend.pipeline import Pipeline, PipelineConfig, correct_batch, read_checkpoint
from sqlmend.types import Task

FRANCE = "SELECT count(*) FROM singer WHERE country = 'france'"


@pytest.mark.parametrize("kind", ["locked", "replaced", "deleted"])
def test_the_items_get_a_clear_error_the_batch_goes_on_a_rerun_completes_them(kind, pred, tmp_path):
    row = sqlite_fault(kind, pred, tmp_path, dbs=4, per_db=6, hold=6.0)
    d = row.detail
    assert d["reached"] and d["missing"] == [] and d["silent"] == [] and d["unclear"] == []
    assert len(d["clear"]) >= 1 and row.lost == 0  # the faulted items say why; none silently differs
    assert all(t.startswith(("DatabaseError", "DatabaseNotFoundError", "DatabaseUnavailable"))
               for t in d["errors"].values())
    assert row.rerun.startswith("yes") and d["rerun_left"] == {"missing": [], "silent": [], "clear": [],
                                                                "unclear": []}


@pytest.fixture
def singer_db(spider_db, tmp_path):
    path = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(spider_db("concert_singer"), path)
    return path


def test_a_lock_taken_mid_task_ends_the_item_and_is_never_a_finding(singer_db):
    """Before: a locked read was an execution error (EX02 'fails to execute'), the item had no error."""
    with connect(str(singer_db)) as db:
        db.schema()  # opened and read before the writer comes
        writer = subprocess.Popen([sys.executable, "-c", _LOCKER, str(singer_db), "30"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)  # locked until its input closes
        try:
            assert writer.stdout.readline().strip() == "locked"
            c = Pipeline(PipelineConfig(stages=["static", "guard"])).correct(
                Task("1", "concert_singer", "How many singers are from France?", FRANCE), db=db)
        finally:
            writer.kill()
            writer.wait()
    assert c.error.startswith("DatabaseUnavailable: database file unavailable: database is locked")
    assert c.sql == FRANCE and c.stages == []


def test_a_file_rewritten_under_an_open_connection_is_unavailable_not_a_query_error(singer_db):
    original = singer_db.read_bytes()
    with connect(str(singer_db)) as db:
        assert db.execute("SELECT count(*) FROM singer").rows == [(6,)]
        with open(singer_db, "r+b") as fh:  # damaged in place (a copy gone wrong)
            fh.seek(len(original) // 2)
            fh.write(b"\xff" * (len(original) // 2))
            fh.seek(24)
            fh.write(b"\x00\x00\x00\x63")  # a new change counter: SQLite reads the pages again
        with pytest.raises(DatabaseUnavailable, match="malformed"):
            for table in db.schema().tables:  # some table lives in the damaged half
                db.execute(f"SELECT * FROM {table.name}")


def test_a_rerun_retries_transient_errors_only(singer_db, tmp_path):
    ckpt = tmp_path / "c.jsonl"
    missing = tmp_path / "later.sqlite"
    tasks = [Task("a", "x", "q", FRANCE, db=str(missing)), Task("b", "x", "q", "", db=str(singer_db)),
             Task("c", "x", "q", FRANCE, db=str(singer_db))]
    first = correct_batch(tasks, PipelineConfig(stages=["static", "guard"]), checkpoint=ckpt, progress=False)
    assert first[0].error.startswith("DatabaseNotFoundError") and first[1].error == "empty SQL"
    shutil.copyfile(singer_db, missing)  # the database is back
    second = correct_batch(tasks, PipelineConfig(stages=["static", "guard"]), checkpoint=ckpt, progress=False)
    assert second[0].error is None and second[0].to_dict() != first[0].to_dict()  # retried
    assert second[1].to_dict() == first[1].to_dict() and second[2].to_dict() == first[2].to_dict()  # kept
    assert len(ckpt.read_text().splitlines()) == 3 and read_checkpoint(ckpt)["a"].error is None
    assert sqlite3.connect(missing).execute("SELECT count(*) FROM singer").fetchone() == (6,)

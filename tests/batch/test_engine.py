"""``--engine``: its values, and that the default path never imports ray (tests/batch/test_ray.py runs Ray)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sqlmend.api import Correctors
from sqlmend.batch import check_engine
from sqlmend.errors import ConfigError
from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.types import Task


def test_engine_values():
    assert check_engine("local") is None
    assert check_engine("ray") == ""
    assert check_engine("ray://10.0.0.5:10001") == "ray://10.0.0.5:10001"
    for bad in ("threads", "ray://", "RAY"):
        with pytest.raises(ConfigError, match="local, ray or ray://HOST:PORT"):
            check_engine(bad)


def test_import_sqlmend_and_the_local_path_never_import_ray():
    code = ("import sys, sqlmend, sqlmend.batch, sqlmend.cli, sqlmend.api; "
            "assert not any(m == 'ray' or m.startswith('ray.') for m in sys.modules), 'ray imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_worker_opens_each_database_once_and_answers_as_the_pipeline(spider_dir):
    """A Ray worker's call (``Correctors.correct_task``): one Corrector per database, the
    pipeline's own record (what a fresh connection per task gives)."""
    pipe = Pipeline(PipelineConfig(stages=["static", "guard"]), db_root=spider_dir / "database")
    tasks = [Task(question_id=str(i), db_id=db, question="?", sql=sql) for i, (db, sql) in enumerate([
        ("concert_singer", "SELECT count(*) FROM singer WHERE country = 'france'"),
        ("pets_1", "SELECT count(*) FROM pets"),
        ("concert_singer", "SELECT Name FROM singer WHERE Age > 40"),
        ("no_such_db", "SELECT 1"),
        ("pets_1", ""),
    ])]
    workers = Correctors(pipe)
    try:
        got = [workers.correct_task(t) for t in tasks]
        assert sorted(k[0].rsplit("/", 1)[-1] for k in workers._open) == ["concert_singer.sqlite", "pets_1.sqlite"]
    finally:
        workers.close()
    want = [pipe.correct(t) for t in tasks]
    assert [(c.sql, c.error) for c in got] == [(c.sql, c.error) for c in want]
    assert got[0].changed and got[3].error.startswith("DatabaseNotFoundError") and got[4].error == "empty SQL"

"""The stage contract (sqlmend.stage): typed settings, one parse and one execution per SQL version."""

from __future__ import annotations

import pytest

from sqlmend.db import connect
from sqlmend.errors import ConfigError
from sqlmend.pipeline import STAGES, STRATEGIES, Pipeline, PipelineConfig, build_stages
from sqlmend.rules.stage import StaticStage
from sqlmend.stage import RunSettings, StageContext
from sqlmend.types import Task

CASE = "SELECT Song_Name FROM singer WHERE Country = 'united states'"
FIXED = "SELECT Song_Name FROM singer WHERE Country = 'United States'"


def test_an_unknown_option_key_fails_at_start_naming_the_known_keys():
    with pytest.raises(ValueError) as err:
        PipelineConfig(options={"static": {"timout": 3}})
    assert "timout" in str(err.value) and "apply_fixes" in str(err.value) and "codes" in str(err.value)
    with pytest.raises(ValueError, match="known: static, memory"):
        PipelineConfig(options={"statik": {}})
    with pytest.raises(ValueError, match="max_errors"):  # a bad value names its key
        PipelineConfig(options={"refine": {"max_errors": 0}})
    # the refine options are validated against the chosen strategy's settings
    assert PipelineConfig(strategy="mac-sql", options={"refine": {"rounds": 2}})
    with pytest.raises(ValueError, match="rounds"):
        PipelineConfig(options={"refine": {"rounds": 2}})
    with pytest.raises(ConfigError, match="known: apply_fixes, codes"):
        StaticStage.from_config({"timeout": 3}, RunSettings())


def test_every_stage_is_imported_directly_with_typed_settings():
    for cls in [c for c in STAGES.values() if c is not None] + list(STRATEGIES.values()):
        assert cls.Settings.model_config.get("extra") == "forbid", cls
        assert callable(cls.from_config)
    stages = build_stages(PipelineConfig(timeout=7, options={"static": {"codes": ["VL01"]}}))
    static = stages[0]
    assert isinstance(static, StaticStage) and static.settings.codes == ["VL01"]
    assert static.run_settings.timeout == 7  # the run's limit reaches every stage
    assert stages[-1] == "guard"


class _Counting:
    """A real database that counts how often the query under test is executed."""

    def __init__(self, db, sql):
        self._db, self._sql, self.runs = db, sql, 0

    def execute(self, sql, *args, **kwargs):
        self.runs += sql == self._sql
        return self._db.execute(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._db, name)


def test_the_context_parses_and_executes_once_per_sql_version(spider_db):
    with connect(spider_db("concert_singer")) as real:
        db = _Counting(real, CASE)
        ctx = StageContext(task=Task("q", "concert_singer", "?", CASE), db=db, sql=CASE)
        tree = ctx.tree()
        assert tree is ctx.tree() and ctx.parse_error is None
        first = ctx.execute()
        assert ctx.execute() is first and db.runs == 1
        StaticStage().run(ctx)  # rules, probes and the guard reuse the context's result
        assert db.runs == 1
        ctx.accept(FIXED)
        assert ctx.tree() is not tree and ctx.execute()[0].rows != first[0].rows
        bad = StageContext(task=Task("q", "concert_singer", "?", "SELECT name FROM singer WHERE"), db=real,
                           sql="SELECT name FROM singer WHERE")
        assert bad.tree() is None and bad.parse_error
        assert bad.execute()[0] is None and bad.execute()[1]


CAR = ("SELECT T1.Make, T1.Year FROM cars_data AS T1 "
       "JOIN car_names AS T2 ON T1.Id = T2.MakeId ORDER BY T1.Year LIMIT 1")  # AT01, fixed strictly


def test_the_task_names_its_database(spider_db):
    pipe = Pipeline(PipelineConfig(stages=["static", "guard"]))
    named = pipe.correct(Task("q", "car_1", "?", CAR, db=str(spider_db("car_1"))))
    assert "T2.Make" in named.sql
    orphan = pipe.correct(Task("q", "car_1", "?", CAR))
    assert orphan.sql == CAR and "names no database" in orphan.error
    rooted = Pipeline(PipelineConfig(stages=["static", "guard"]), db_root=spider_db("car_1").parent.parent)
    assert rooted.correct(Task("q", "car_1", "?", CAR)).sql == named.sql

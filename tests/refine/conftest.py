"""Fixtures of the refinement tests: a stage context on a real Spider database."""

from __future__ import annotations

import pytest

from sqlmend.db import connect
from sqlmend.pipeline import PipelineConfig
from sqlmend.stage import StageContext
from sqlmend.types import Finding, Task


@pytest.fixture()
def concert_db(spider_db):
    with connect(spider_db("concert_singer")) as db:
        yield db


@pytest.fixture()
def make_ctx(concert_db):
    """``make_ctx(question, sql, findings=[], backends={stage: backend}, **run config)`` -> StageContext."""

    def make(question: str, sql: str, findings: list[Finding] | None = None,
             backends: dict | None = None, **config) -> StageContext:
        task = Task(question_id="t1", db_id="concert_singer", question=question, sql=sql)
        backends = backends or {}
        return StageContext(task=task, db=concert_db, sql=sql, findings=list(findings or []),
                            run=PipelineConfig(**config).run_settings(), resolve=backends.get)

    return make

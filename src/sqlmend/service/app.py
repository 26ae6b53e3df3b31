"""The HTTP service: correct or check one query per request.

* ``POST /correct`` -- ``{db_id | db, question, sql, evidence?}`` -> the
  :class:`~sqlmend.types.Correction` as JSON (SQL, changed, traces);
* ``POST /check`` -- the same body -> the findings of the detecting stages only
  (static, memory, detector), without rewriting anything;
* ``GET /health`` -- the stages configured and whether each is available.

Per-request problems (unknown database, empty SQL) come back as the
correction's ``error`` with status 200, like a batch item; a malformed body is a
422. One :class:`~sqlmend.pipeline.Pipeline` serves every request.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.types import Task

#: Stages that only look; ``/check`` runs those of the configuration.
CHECK_STAGES = ("static", "memory", "detector")


class CorrectRequest(BaseModel):
    """One query to correct or check."""

    question: str = Field(..., description="the natural-language question")
    sql: str = Field(..., description="the SQL an upstream system produced")
    db_id: str | None = Field(None, description="a database of the configured root")
    db: str | None = Field(None, description="or a database path/URL (when the service allows it)")
    evidence: str = Field("", description="external knowledge (BIRD style)")
    question_id: str = Field("request", description="an id echoed in the answer")


def create_app(config: PipelineConfig | None = None, allow_paths: bool = False,
               resolve: Any = None, db_root: str | None = None) -> Any:
    """Build the FastAPI app.

    Args:
        config: the pipeline configuration.
        db_root: the folder of ``<db_id>/<db_id>.sqlite`` that ``db_id`` names.
        allow_paths: accept ``db`` paths/URLs in requests (off: only ``db_id``).
        resolve: the model resolver (default: from the configuration).

    Returns:
        A ``fastapi.FastAPI`` app.
    """
    from fastapi import FastAPI, HTTPException

    config = config or PipelineConfig()
    pipe = Pipeline(config, resolve=resolve, db_root=db_root)
    check_cfg = config.model_copy(update={"stages": [s for s in config.stage_names()
                                                     if s in CHECK_STAGES]})
    checker = Pipeline(check_cfg, resolve=pipe.resolve, db_root=db_root)
    app = FastAPI(title="sqlmend", version="1",
                  description="Correct the SQL written by text-to-SQL systems.")

    def run(p: Pipeline, req: CorrectRequest) -> dict[str, Any]:
        if req.db and not allow_paths:
            raise HTTPException(400, "this service takes db_id only (start it with --allow-paths)")
        if not (req.db or req.db_id):
            raise HTTPException(400, "give db_id (or db)")
        task = Task(question_id=req.question_id, db_id=req.db_id or req.db or "", question=req.question,
                    sql=req.sql, evidence=req.evidence, db=req.db or None)
        return p.correct(task).to_dict()

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"strategy": config.strategy, "stages": {name: True for name in config.stage_names()}}

    @app.post("/correct")
    def correct(req: CorrectRequest) -> dict[str, Any]:
        return run(pipe, req)

    @app.post("/check")
    def check(req: CorrectRequest) -> dict[str, Any]:
        out = run(checker, req)
        findings = [f for s in out["stages"] for f in s["findings"]]
        return {"question_id": out["question_id"], "error": out["error"], "findings": findings,
                "wrong": bool(findings), "stages": out["stages"]}

    return app

"""The HTTP service: correct or check one query per request.

* ``POST /correct`` -- ``{db_id | db, question, sql, evidence?, alternatives?}`` -> the
  :class:`~sqlmend.types.Correction` as JSON (SQL, changed, traces);
* ``POST /check`` -- the same body -> the findings of the detecting stages only
  (static, memory, detector), without rewriting anything; ``refused`` is true
  when the text is not one read-only query (finding EX03);
* ``POST /schema`` -- ``{db_id | db, question, sql?, budget?}`` -> the relations and columns the
  question needs, their joins and values, within ``budget`` characters of text
  (:meth:`sqlmend.api.Corrector.schema_for`, the MCP tool ``find_schema``'s answer); an unknown
  database is a 404, a bad budget a 400;
* ``GET /health`` -- the stages configured and whether each is available, and ``login``:
  whether the login of every database met so far is read-only, with those that may write
  (:mod:`sqlmend.db.account`; open without a token, for probes);
* ``GET /metrics`` -- Prometheus metrics (:mod:`sqlmend.service.observe`).

A ``db_id`` is a plain name (:func:`sqlmend.db.check_db_id`); anything else is
a 400 whose message names no server path. Per-request problems (unknown
database, empty SQL) come back as the correction's ``error`` with status 200,
like a batch item; a malformed body is a 422. No answer and no request-log line
carries a server path (:mod:`sqlmend.service.scrub`).

Admission (:mod:`sqlmend.service.limits`, :class:`ServiceSettings`): optional
bearer token (401), body size limit (413), at most ``max_concurrency`` requests
corrected at once with ``max_queue`` more waiting, beyond that 503 with
``Retry-After``; a request still running at its deadline is answered 504 and its correction is told
to stop (it ends at its next unit of work: ``sqlmend.db.base.WorkBudget.cancel``), so its thread
serves the next request. A request whose SQL is longer than ``wide_sql_chars`` (an IN list of
thousands of values) runs on a lane of its own (``wide_concurrency`` threads, one by default): wide
requests never hold every thread, nor most of the interpreter's time (its lock runs one Python thread
at a time), and a normal one sent during them is answered.

One :class:`~sqlmend.pipeline.Pipeline` per endpoint serves every request: built
once when the app is made (models and indexes load once), shared by the worker
threads. A request's database (``db`` or ``db_id`` under the app's ``db_root``)
gets a :class:`sqlmend.api.Corrector` on these pipelines, kept open for the
next requests on it (:class:`sqlmend.api.Correctors`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Request
from pydantic import BaseModel, Field

from sqlmend.api import Correctors, check_answer, check_config, database_name
from sqlmend.db import check_db_id
from sqlmend.db.account import Login, admit, health, root_logins
from sqlmend.db.base import limit_malloc_arenas
from sqlmend.db.pgmigrate import is_url
from sqlmend.errors import ConfigError, DatabaseNotFoundError, SqlmendError
from sqlmend.pipeline import Pipeline, PipelineConfig, database_for
from sqlmend.service.limits import AdmissionMiddleware, Gate
from sqlmend.service.observe import CONTENT_TYPE_LATEST, LOGGER, Metrics, usage_of, verdict_of
from sqlmend.service.scrub import Scrubber, server_roots
from sqlmend.service.settings import ServiceSettings
from sqlmend.types import Task, json_text

#: Endpoints named in metrics (any other path counts as "other").
ENDPOINTS = frozenset({"/correct", "/check", "/schema", "/health", "/metrics"})
#: Environment variables of a worker process started by ``sqlmend serve --workers N``.
CONFIG_ENV, SETTINGS_ENV, DB_ROOT_ENV = ("SQLMEND_SERVICE_CONFIG", "SQLMEND_SERVICE_SETTINGS",
                                         "SQLMEND_SERVICE_DB_ROOT")

_log = logging.getLogger(LOGGER)


class CorrectRequest(BaseModel):
    """One query to correct or check."""

    question: str = Field(..., description="the natural-language question")
    sql: str = Field(..., description="the SQL an upstream system produced")
    db_id: str | None = Field(None, description="a database of the configured root (a plain name)")
    db: str | None = Field(None, description="or a database path/URL (when the service allows it)")
    evidence: str = Field("", description="external knowledge (BIRD style)")
    question_id: str = Field("request", max_length=200, description="an id echoed in the answer")
    alternatives: list[str] = Field(default_factory=list, max_length=64,
                                    description="other answers to the question (other systems, prompts, samples): "
                                                "their vote is reported and may replace the SQL under the consensus "
                                                "rule; one that is not one read-only query is reported, never run")


class SchemaRequest(BaseModel):
    """A question whose schema is asked for (``POST /schema``)."""

    question: str = Field(..., max_length=100_000, description="the natural-language question")
    sql: str | None = Field(None, max_length=100_000,
                            description="a draft query (never run): its names, invented ones too, are evidence")
    budget: int = Field(4096, description="characters of the answer's text at most (256 to 1,048,576)")
    db_id: str | None = Field(None, description="a database of the configured root (a plain name)")
    db: str | None = Field(None, description="or a database path/URL (when the service allows it)")


class Refusal(Exception):
    """A request answered with an HTTP error before (or instead of) the pipeline."""

    def __init__(self, status: int, message: str, reason: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.reason, self.headers = status, message, reason, headers or {}


def check_logins(config: PipelineConfig, db_root: str | None) -> list[Login]:
    """Check the logins of the databases of ``db_root`` (files: may this process write them?) when a
    service starts: warn once about those that may write where sqlmend's own lock does not hold, or
    refuse to start under ``require_read_only_login`` (:func:`sqlmend.db.account.admit`). A database
    named in a request is checked when it is first opened.

    Returns:
        The logins of the root's databases.

    Raises:
        ConfigError: a login that may write, under ``require_read_only_login``.
    """
    logins = root_logins(db_root) if db_root else []
    admit(logins, config.require_read_only_login)
    return logins


def default_db_root() -> str | None:
    """The Spider databases of the data root, when there is one (else None: requests need ``db``)."""
    from sqlmend.errors import SqlmendError
    from sqlmend.paths import data_root

    try:
        return str(data_root() / "spider" / "database")
    except SqlmendError:
        return None


class Service:
    """The shared state of one app: pipelines, worker threads, gate, metrics, scrubber.

    Args:
        config: the pipeline configuration.
        settings: admission and logging settings.
        resolve: the model resolver (default: from the configuration).
        db_root: the folder of ``<db_id>/<db_id>.sqlite`` that a ``db_id`` names.
    """

    def __init__(self, config: PipelineConfig, settings: ServiceSettings, resolve: Any = None,
                 db_root: str | None = None):
        if config.timeout > settings.deadline:  # no SQL may outlive the request
            config = config.model_copy(update={"timeout": settings.deadline})
        self.config, self.settings, self.db_root = config, settings, db_root
        self.pipe = Pipeline(config, resolve=resolve, db_root=db_root)
        self.checker = Pipeline(check_config(config), resolve=self.pipe.resolve, db_root=db_root)
        self.correctors = Correctors(self.pipe, self.checker)
        self.gate = Gate(settings.max_concurrency + settings.max_queue)
        self.executor = ThreadPoolExecutor(settings.max_concurrency, thread_name_prefix="sqlmend-serve")
        self.wide = ThreadPoolExecutor(settings.wide_concurrency, thread_name_prefix="sqlmend-wide")
        self.metrics = Metrics()
        store = (config.options.get("memory") or {}).get("store") or None
        self.memory_store = "postgresql" if is_url(store) else "folder"
        self.check_logins(db_root)
        self.scrub = Scrubber(server_roots([db_root, None if is_url(store) else store]))

    def check_logins(self, db_root: str | None) -> None:
        """:func:`check_logins` of the app's database root, kept for ``/health``."""
        self.root_logins = check_logins(self.config, db_root)

    def logins(self) -> dict[str, Any]:
        """``/health``'s ``login``: whether every database's login is read-only, and those that may write."""
        seen = {x.target: x for x in [*self.root_logins, *self.correctors.login_list()]}
        return health(seen.values())

    # --- one request -------------------------------------------------------

    def task(self, req: CorrectRequest) -> Task:
        """The task of a request, or a :class:`Refusal` (400) when it names no usable database."""
        if req.db and not self.settings.allow_paths:
            raise Refusal(400, "this service takes db_id only (start it with --allow-paths)", "db_path")
        if not (req.db or req.db_id):
            raise Refusal(400, "give db_id (or db)", "no_database")
        if not req.db:
            try:
                check_db_id(req.db_id)
            except ConfigError as exc:
                raise Refusal(400, str(exc), "invalid_db_id") from None
        # a path's name is its file's stem, as the Python API and the CLI name it (its repair memory's key)
        return Task(question_id=req.question_id, db_id=req.db_id or database_name(req.db or ""), question=req.question,
                    sql=req.sql, evidence=req.evidence, db=req.db or None, alternatives=list(req.alternatives))

    def correct(self, task: Task, check: bool = False, cancel: threading.Event | None = None) -> dict[str, Any]:
        """Correct (or check) one task in a worker thread and return its scrubbed answer: the
        record of :meth:`sqlmend.api.Correctors.answer`, the one path of every door (``cancel``: set
        when the request's deadline passes)."""
        body = self.correctors.answer(task, check, cancel).to_dict()
        self.metrics.record_correction(body)
        return self.scrub.value(body)

    async def run(self, req: CorrectRequest, check: bool) -> dict[str, Any]:
        """Admit, run under the deadline, and answer one request."""
        task = self.task(req)
        cancel = threading.Event()
        lane = self.wide if len(req.sql) > self.settings.wide_sql_chars else self.executor
        return await self._admitted(lane, cancel, self.correct, task, check, cancel)

    async def _admitted(self, lane: ThreadPoolExecutor, cancel: threading.Event | None, fn: Any,
                        *args: Any) -> dict[str, Any]:
        """Run ``fn(*args)`` on ``lane`` once the gate admits it, under the deadline (``cancel``: set past it)."""
        if not self.gate.enter():
            raise Refusal(503, "service saturated: too many requests in flight, retry later", "saturated",
                          {"Retry-After": str(self.settings.retry_after)})
        self.metrics.in_flight.set(self.gate.in_flight)
        try:
            future = lane.submit(fn, *args)
        except RuntimeError:  # shutting down
            self.gate.leave()
            raise Refusal(503, "service shutting down", "shutdown",
                          {"Retry-After": str(self.settings.retry_after)}) from None
        future.add_done_callback(self._leave)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.settings.deadline)
        except asyncio.TimeoutError:
            if cancel is not None:
                cancel.set()  # nobody waits for it any more: its work stops at its next unit
            raise Refusal(504, f"deadline of {self.settings.deadline:g} s exceeded", "deadline") from None

    def database(self, req: CorrectRequest | SchemaRequest) -> tuple[str, str]:
        """``(path or URL, name)`` of a request's database, or a :class:`Refusal` (400)."""
        task = self.task(CorrectRequest(question="", sql="", db_id=req.db_id, db=req.db))
        return database_for(task, self.db_root), task.db_id

    def find_schema(self, req: SchemaRequest) -> dict[str, Any]:
        """The schema a request's question needs (in a worker thread): ``find_schema``'s answer."""
        target, name = self.database(req)
        fixer = self.correctors.get(target, db_id=name)
        found = fixer.schema_for(req.question, req.sql, req.budget)
        return self.scrub.value({"database": name, "dialect": fixer.dialect, **found.to_dict()})

    async def schema(self, req: SchemaRequest) -> dict[str, Any]:
        """Admit, run under the deadline, and answer one ``/schema`` request."""
        try:
            self.database(req)  # a request naming no usable database is refused before it waits
            return await self._admitted(self.executor, None, self.find_schema, req)
        except DatabaseNotFoundError as exc:
            raise Refusal(404, str(exc), "no_database") from None
        except SqlmendError as exc:  # a budget out of range, a database that cannot be opened
            raise Refusal(400, str(exc), "bad_request") from None

    def _leave(self, _: Any) -> None:
        self.gate.leave()
        self.metrics.in_flight.set(self.gate.in_flight)

    # --- after each response ----------------------------------------------

    def done(self, scope: dict[str, Any], status: int, seconds: float) -> None:
        """Count the response and write its log line (called by the admission middleware)."""
        path = scope.get("path", "")
        endpoint = path if path in ENDPOINTS else "other"
        self.metrics.requests.labels(endpoint, str(status)).inc()
        self.metrics.latency.labels(endpoint).observe(seconds)
        state = scope.get("state") or {}
        fields = dict(state.get("log") or {})
        if fields.get("refused"):
            self.metrics.rejected.labels(fields["refused"]).inc()
        if not self.settings.log_requests or endpoint in ("/health", "/metrics"):
            return
        line = {"request_id": state.get("request_id"), "method": scope.get("method"),
                "endpoint": endpoint, "status": status, "ms": round(seconds * 1000, 2), **fields}
        _log.info(self.scrub.value(line, free=True))

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.wide.shutdown(wait=False, cancel_futures=True)
        self.correctors.close()


def _log_fields(body: dict[str, Any] | None, req: CorrectRequest) -> dict[str, Any]:
    fields: dict[str, Any] = {"database": req.db_id if not req.db else "(path)"}
    if body is not None:
        calls, tin, tout = usage_of(body)
        fields.update(question_id=body.get("question_id"),
                      stages=[f"{t['stage']}:{t['status']}" for t in body.get("stages") or []],
                      verdict=verdict_of(body), model_calls=calls, tokens_in=tin, tokens_out=tout)
        if body.get("error"):
            fields["error"] = body["error"]
    return fields


def create_app(config: PipelineConfig | None = None, allow_paths: bool = False,
               resolve: Any = None, db_root: str | None = None,
               settings: ServiceSettings | None = None) -> Any:
    """Build the FastAPI app.

    Args:
        config: the pipeline configuration.
        db_root: the folder of ``<db_id>/<db_id>.sqlite`` that ``db_id`` names
            (default: the Spider databases of the data root).
        allow_paths: accept ``db`` paths/URLs in requests (off: only ``db_id``);
            ``settings.allow_paths`` does the same.
        resolve: the model resolver (default: from the configuration).
        settings: token, limits, deadline, concurrency (:class:`ServiceSettings`;
            default: ``ServiceSettings.from_env()``).

    Returns:
        A ``fastapi.FastAPI`` app (``app.state.service`` holds its :class:`Service`).
    """
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, Response

    limit_malloc_arenas()  # a long-running process: its memory must not rise with its threads
    settings = settings or ServiceSettings.from_env()
    if allow_paths:
        settings = settings.model_copy(update={"allow_paths": True})
    service = Service(config or PipelineConfig(), settings, resolve, db_root or default_db_root())

    class Json(JSONResponse):
        def render(self, content: Any) -> bytes:
            return json_text(content).encode("utf-8")

    @asynccontextmanager
    async def lifespan(_: Any):
        yield
        service.close()

    app = FastAPI(title="sqlmend", version="1", lifespan=lifespan,
                  description="Correct the SQL written by text-to-SQL systems.")
    app.state.service = service

    async def answer(request: Request, req: CorrectRequest, check: bool) -> Any:
        try:
            body = await service.run(req, check)
        except Refusal as exc:
            request.state.log = {**_log_fields(None, req), "refused": exc.reason}
            return Json({"detail": service.scrub.text(exc.message, free=True)}, status_code=exc.status,
                        headers=exc.headers)
        request.state.log = _log_fields(body, req)
        return Json(check_answer(body) if check else body)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"strategy": service.config.strategy,
                "stages": {name: True for name in service.config.stage_names()},
                "memory_store": service.memory_store, "login": service.logins()}

    @app.get("/metrics")
    def metrics() -> Any:
        return Response(service.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/correct")
    async def correct(req: CorrectRequest, request: Request) -> Any:
        return await answer(request, req, check=False)

    @app.post("/check")
    async def check(req: CorrectRequest, request: Request) -> Any:
        return await answer(request, req, check=True)

    @app.post("/schema")
    async def schema(req: SchemaRequest, request: Request) -> Any:
        fields = {"database": req.db_id if not req.db else "(path)"}
        try:
            body = await service.schema(req)
        except Refusal as exc:
            request.state.log = {**fields, "refused": exc.reason}
            return Json({"detail": service.scrub.text(exc.message, free=True)}, status_code=exc.status,
                        headers=exc.headers)
        request.state.log = {**fields, "tables": len(body["tables"])}
        return Json(body)

    app.add_middleware(AdmissionMiddleware, token=settings.token, max_body_bytes=settings.max_body_bytes,
                       on_done=service.done)
    return app


def app_from_env() -> Any:
    """The app of one worker process of ``sqlmend serve --workers N`` (uvicorn factory).

    Reads the pipeline configuration and the settings as JSON from
    ``$SQLMEND_SERVICE_CONFIG`` and ``$SQLMEND_SERVICE_SETTINGS``, the database
    root from ``$SQLMEND_SERVICE_DB_ROOT``.
    """
    from sqlmend.service.observe import configure_logging

    config = PipelineConfig.model_validate_json(os.environ.get(CONFIG_ENV) or "{}")
    settings = ServiceSettings.model_validate_json(os.environ.get(SETTINGS_ENV) or "{}")
    if settings.log_requests:  # a worker process starts with no logging set up
        configure_logging()
    return create_app(config, settings=settings, db_root=os.environ.get(DB_ROOT_ENV) or None)

"""The correction pipeline: static → memory → consensus → detector → search → refinement → guard.

``Pipeline(config).correct(task)`` runs the configured stages on one task and
returns a :class:`~sqlmend.types.Correction`; :func:`correct_batch` runs many
tasks in parallel (a concurrency limit for model calls, a progress bar, a JSONL
checkpoint that a killed run resumes from, per-item errors recorded while the
batch goes on) and :func:`summarize` totals calls, tokens and time.

Stages follow the contract of :mod:`sqlmend.stage`: each is imported here
directly, built once per pipeline from its typed settings (an unknown option
key fails at start) and shared by every task. The task names its database
(``Task.db``, a path or URL; else ``<db_root>/<db_id>/<db_id>.sqlite`` of the
pipeline's ``db_root``). Every rewrite, from any stage, passes
``sqlmend.guard.validate``; the final ``guard`` stage checks the end result
against the input once more, so the output is either a guarded rewrite or the
input unchanged ("never turn a correct query into a wrong one"). A rewrite of a
query the engine refuses also keeps ``sqlmend.guard.SecondLaw`` unless a strict
rule's fixes make it ("never turn a visible error into a silent wrong answer").
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sqlmend import guard, llm, rules
from sqlmend.db import benchmark_db, connect
from sqlmend.consensus.stage import ConsensusStage
from sqlmend.db.account import Login, target_logins
from sqlmend.db.base import ITEM_BUDGET, WorkBudget
from sqlmend.db.results import ItemResults
from sqlmend.detect.stage import DetectorStage
from sqlmend.errors import (ConfigError, DatabaseNotFoundError, InputError, ItemAborted, OutputError,
                            SqlmendError, StructuredOutputError)
from sqlmend.memory.stage import MemoryStage
from sqlmend.refine.baselines import DinSqlStage, MacSqlStage, SelfCorrectionStage, SelfDebugStage
from sqlmend.refine.stage import RefineStage
from sqlmend.rules.stage import StaticStage
from sqlmend.search.gate import GateVerdict, ModelGate
from sqlmend.search.stage import SearchStage
from sqlmend.sql import fixes as sql_fixes
from sqlmend.sql.answer import extract
from sqlmend.sql.functions import normalize_names
from sqlmend.stage import RunSettings, Stage, StageContext, refused_by_engine, settings_of
from sqlmend.taxonomy import REFUSED
from sqlmend.types import Correction, Finding, GuardVerdict, StageTrace, Task, json_text

#: The stages that detect or rewrite, by name, in pipeline order (``refine`` is
#: filled by the chosen strategy); ``guard`` (the final check) follows them.
STAGES: dict[str, type[Stage] | None] = {
    "static": StaticStage,
    "memory": MemoryStage,
    "consensus": ConsensusStage,  # only on a task with alternatives (Task.alternatives)
    "detector": DetectorStage,
    "search": SearchStage,
    "refine": None,
}

#: Stage names in pipeline order.
STAGE_ORDER = (*STAGES, "guard")

#: The refinement strategies: ErrorLLM's error-guided refinement and the baselines.
STRATEGIES: dict[str, type[Stage]] = {
    "errorllm": RefineStage,
    "self-correction": SelfCorrectionStage,
    "din-sql": DinSqlStage,
    "self-debug": SelfDebugStage,
    "mac-sql": MacSqlStage,
}

Strategy = Literal["errorllm", "self-correction", "din-sql", "self-debug", "mac-sql"]


class PipelineConfig(BaseModel):
    """Settings of one correction run (``extra="forbid"``: a typo is an error).

    The database is not part of the run's settings: each task names its own
    (``Task.db`` or the pipeline's ``db_root``).
    """

    model_config = ConfigDict(extra="forbid")

    strategy: Strategy = Field("errorllm", description="refinement strategy: ErrorLLM or a baseline")
    stages: list[str] | None = Field(
        None, description="stages to run, in pipeline order; default: all for errorllm but the "
                          "detector (opt-in: weak on real predictions, docs/benchmarks.md), "
                          "refine+guard for a baseline (they do not detect first)")
    timeout: float = Field(30.0, gt=0, description="seconds per SQL execution, in every stage")
    max_rows: int = Field(10_000, gt=0, description="rows fetched per execution")
    workers: int = Field(4, ge=1, description="tasks corrected in parallel")
    model_concurrency: int = Field(1, ge=1, description="model calls in flight at once")
    models: list[str] = Field(
        default_factory=list,
        description="model assignments STAGE=ENDPOINT ('*=local': the embedded SmolLM2 for every "
                    "model stage), applied over the llm config file and environment")
    llm_config: str | None = Field(None, description="path of the llm endpoints file (TOML)")
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per-stage settings, by stage name ('refine' for the strategy's stage); "
                    "validated against each stage's Settings")
    allow_functions: list[str] = Field(
        default_factory=list,
        description="functions a query may call beside its dialect's read-only list (your own pure "
                    "functions; NAME or SCHEMA.NAME): every other function a query calls that the engine "
                    "has is refused (finding EX03)")
    require_read_only_login: bool = Field(
        False, description="refuse a database whose login may do more than read (a superuser, write grants, "
                           "a writable file: sqlmend.db.account); off: such a login is warned about once")
    model_gate: bool | None = Field(
        None, description="a rewrite that came from a model call is kept only when the query it replaces "
                          "fails to run, a strict rule proves it wrong, or the trained verifier prefers the "
                          "rewrite by its margin calibrated on Spider train (sqlmend.search.gate); default: "
                          "on for errorllm, off for the baselines (run as published)")

    @field_validator("stages")
    @classmethod
    def _known_stages(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        unknown = [s for s in value if s not in STAGE_ORDER]
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; known: {', '.join(STAGE_ORDER)}")
        return [s for s in STAGE_ORDER if s in value]

    @field_validator("allow_functions")
    @classmethod
    def _function_names(cls, value: list[str]) -> list[str]:
        try:
            return sorted(normalize_names(value))
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("options")
    @classmethod
    def _known_option_stages(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        unknown = sorted(k for k in value if k not in STAGES)
        if unknown:
            raise ValueError(f"options for unknown stage(s) {unknown}; known: {', '.join(STAGES)}")
        return value

    @model_validator(mode="after")
    def _valid_stage_settings(self) -> "PipelineConfig":
        for name, opts in self.options.items():
            try:
                settings_of(self.stage_class(name).Settings, name, opts)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return self

    def stage_names(self) -> list[str]:
        """Return the stages this configuration runs, in pipeline order."""
        if self.stages is not None:
            return list(self.stages)
        if self.strategy == "errorllm":  # a stage class may keep itself out of the default
            return [s for s in STAGE_ORDER if s not in STAGES or self.stage_class(s).default_on]
        return ["refine", "guard"]

    def gated(self) -> bool:
        """Whether model rewrites pass the model gate (:attr:`model_gate`, default by strategy)."""
        return self.strategy == "errorllm" if self.model_gate is None else self.model_gate

    def run_settings(self) -> RunSettings:
        """The run-wide limits every stage honours."""
        return RunSettings(timeout=self.timeout, max_rows=self.max_rows)

    def stage_class(self, name: str) -> type[Stage]:
        """The class of stage ``name`` (``refine``: the strategy's)."""
        cls = STRATEGIES[self.strategy] if name == "refine" else STAGES[name]
        assert cls is not None
        return cls


def build_stages(config: PipelineConfig) -> list[Stage | str]:
    """Build the stages of ``config`` in pipeline order (``"guard"`` stands for the final guard).

    Every stage's options are validated, also those of stages this run leaves off,
    so a misspelt key fails before any task runs.

    Raises:
        ConfigError: an unknown option key or a bad option value (the message names the known keys).
    """
    run = config.run_settings()
    built = {name: config.stage_class(name).from_config(config.options.get(name, {}), run)
             for name in STAGES}
    return ["guard" if name == "guard" else built[name] for name in config.stage_names()]


# --- models ---------------------------------------------------------------


class _Limited:
    """A model backend whose calls share a semaphore (the model concurrency limit)."""

    def __init__(self, backend: Any, gate: threading.Semaphore):
        self._backend = backend
        self._gate = gate

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        with self._gate:
            return self._backend.chat(*args, **kwargs)

    def __getattr__(self, item: str) -> Any:
        return getattr(self._backend, item)


def make_resolver(config: PipelineConfig, gate: threading.Semaphore | None = None,
                  llm_config: Any = None) -> Callable[[str], Any]:
    """Return ``resolve(stage) -> backend | None`` for this configuration.

    The llm layer's configuration (file, environment, then ``config.models``)
    says which endpoint serves which model stage (``localizer``, ``refiner``,
    ``baseline``, ``detector``, ...); a stage without one gets ``None`` and skips.
    Backends are built once and shared; their ``chat`` calls pass through ``gate``.

    Args:
        config: the run's configuration.
        gate: the semaphore limiting concurrent model calls (one is made if None).
        llm_config: an ``sqlmend.llm.LLMConfig`` to use as is (tests, services).

    Raises:
        ConfigError: a model assignment names an unknown endpoint.
    """
    gate = gate or threading.Semaphore(config.model_concurrency)
    cfg = llm_config or llm.LLMConfig.load(config.llm_config)
    if config.models and llm_config is None:
        cfg = cfg.with_overrides(config.models)

    def resolve(stage: str) -> Any:
        backend = cfg.resolve(stage)
        return None if backend is None else _Limited(backend, gate)

    return resolve


# --- databases ------------------------------------------------------------


def database_for(task: Task, db_root: str | os.PathLike | None = None) -> str:
    """Return the path or URL of the database of ``task``.

    Args:
        task: the task; its ``db`` (a path or URL) wins.
        db_root: the folder of ``<db_id>/<db_id>.sqlite`` for tasks that name only a ``db_id``.

    Raises:
        DatabaseNotFoundError: the task names no database, or the benchmark file does not exist.
    """
    if task.db:
        return task.db
    if db_root is None:
        raise DatabaseNotFoundError(f"task {task.question_id} names no database (db_id {task.db_id!r} "
                                    "and no database folder given)")
    return str(benchmark_db(db_root, task.db_id))


def task_logins(tasks: Iterable[Task], db_root: str | os.PathLike | None = None) -> list[Login]:
    """The logins of the databases of ``tasks``, each once (:func:`sqlmend.db.account.target_logins`;
    a task whose database is missing is left to its item's error)."""
    named = []
    for task in tasks:
        try:
            named.append((task.db_id or task.db or "", database_for(task, db_root)))
        except DatabaseNotFoundError:
            continue
    return target_logins(named)


# --- one task -------------------------------------------------------------


def _resolved(trace: StageTrace) -> bool:
    """True when a stage's accepted rewrite applied its findings' fixes."""
    return bool(trace.verdict and trace.verdict.accepted)


def _run_stage(stage: Any, ctx: StageContext) -> StageTrace:
    start = time.perf_counter()
    if ctx.budget is not None:  # between stages: the item's deadline and its caller's cancellation
        ctx.budget.check()
    try:
        trace = stage.run(ctx)
    except ItemAborted:  # a safety net fired or the database went away: the item's clear error
        raise
    except Exception as exc:  # one stage failing never stops the task
        kind = type(exc).__name__
        trace = StageTrace(stage=getattr(stage, "name", "?"), status="failed", note=f"{kind}: {exc}")
        if isinstance(exc, StructuredOutputError):  # its calls were made: count them
            trace.calls, trace.tokens_in, trace.tokens_out = exc.attempts, exc.tokens_in, exc.tokens_out
    aborted = getattr(ctx.db, "aborted", None) or getattr(ctx.budget, "aborted", None)
    if aborted is not None:  # a handler inside the stage caught it: still the item's
        raise aborted
    if not trace.seconds:
        trace.seconds = round(time.perf_counter() - start, 4)
    return trace


def _final_guard(ctx: StageContext, original: str) -> StageTrace:
    trace = StageTrace(stage="guard", status="ran")
    if ctx.sql == original:
        trace.note = "no rewrite to check; the input is kept"
        return trace
    verdict = guard.validate(ctx.db, original, ctx.sql, ctx.run.timeout, max_rows=ctx.run.max_rows)
    trace.candidate = ctx.sql
    trace.verdict = verdict
    trace.note = verdict.reason
    if not verdict.accepted:
        ctx.accept(original)
    return trace


def _proven(candidate: str, ctx: StageContext, findings: list[Finding], applied: list[dict] | None = None) -> bool:
    """Whether ``candidate`` is the current SQL with the fixes of the strict static findings applied:
    a rule proves the change (the static stage's rewrite). A whole-query rewrite (``transpile``, rule
    EX04) is applied alone first and the strict fixes the rules found on what it wrote after it, as the
    static stage did (``applied``: its trace's fixes, each one a strict finding's)."""
    fixes = [fx for f in findings if f.severity == "strict" and f.source == "static" for fx in f.fixes]
    if not fixes:
        return False
    try:
        whole = [fx for fx in fixes if fx.get("op") == "transpile"][:1]
        if not whole:
            return sql_fixes.apply(ctx.sql, fixes, dialect=ctx.dialect).strip() == candidate.strip()
        steps = applied if applied and applied[0] == whole[0] and all(fx in fixes for fx in applied) else whole
        text = sql_fixes.apply(ctx.sql, steps[:1], dialect=ctx.dialect)
        if steps[1:]:
            text = sql_fixes.apply(text, steps[1:], dialect=ctx.dialect)
        return text.strip() == candidate.strip()
    except SqlmendError:  # fixes planned on another SQL
        return False


def _second_law(trace: StageTrace, ctx: StageContext) -> str | None:
    """Why a stage's rewrite of a query the engine refuses is not admitted by the second law
    (:class:`sqlmend.guard.SecondLaw`), or None: a query that runs, or a rewrite a strict rule proves."""
    result, error = ctx.execute()
    if result is not None or not refused_by_engine(error):
        return None
    candidate = trace.verdict.sql
    if _proven(candidate, ctx, [*ctx.findings, *trace.findings], trace.detail.get("fixes")):
        return None
    why = guard.SecondLaw(ctx.db, ctx.sql, ctx.task.question).check(candidate)
    return f"rewrite not admitted (second law: a failing query is kept rather than answer another question): {why}" \
        if why else None


def _joined_schemas(trace: StageTrace, ctx: StageContext) -> str | None:
    """Why a stage's rewrite is not admitted because it joins a schema the query does not name
    (:func:`sqlmend.guard.joined_schemas`), or None."""
    why = guard.joined_schemas(ctx.db, ctx.sql, trace.verdict.sql)
    return f"rewrite not admitted (a repair joins no schema the query does not name): {why}" if why else None


def _admitted(trace: StageTrace, ctx: StageContext, gate: Any, whole: bool = False) -> bool:
    """Whether a stage's rewrite the guard accepted is taken: a rewrite of a query the engine refuses
    keeps the second law (:func:`_second_law`, every stage), and one that came from a model call passes
    the model gate too (:mod:`sqlmend.search.gate`); a refusal turns the trace's verdict into one.

    ``whole``: the rewrite is a whole other answer to the question, not an edit of the query (a stage with
    ``replaces_query``, the consensus stage): "drops no clause, adds no table" says nothing of another
    system's query, so its own rule judges it (the consensus rule keeps what the question names), and so
    does it when the answer is a model's sample (``consensus.samples``): the model gate is for edits."""
    law = None if whole else _second_law(trace, ctx) or _joined_schemas(trace, ctx)
    if law is not None:
        trace.detail["rejected"] = law
        trace.verdict = GuardVerdict(False, law, ctx.sql)
        trace.note = (trace.note + "; " if trace.note else "") + law
        return False
    chats = trace.detail.get("usage", {}).get("chat", trace.calls)  # the memory stage counts embeddings apart
    if gate is None or not chats or whole:
        return True
    try:
        verdict = gate.check(ctx, trace.verdict.sql, [*ctx.findings, *trace.findings])
    except ItemAborted:
        raise
    except Exception as exc:  # a gate that cannot decide keeps the query
        verdict = GateVerdict(False, None, f"model rewrite not admitted: the gate failed ({type(exc).__name__}: {exc})")
    trace.detail["model_gate"] = verdict.note
    if verdict.admitted:
        trace.detail["admitted_by"] = verdict.by
        return True
    trace.detail["rejected"] = verdict.note
    trace.verdict = GuardVerdict(False, verdict.note, ctx.sql)
    trace.note = (trace.note + "; " if trace.note else "") + verdict.note
    return False


def stage_applies(stage: Any, task: Task) -> bool:
    """Whether a stage has anything to do for a task (``StageBase.applies``; the consensus stage needs
    alternatives); one that does not is left out of the task's run and trace."""
    applies = getattr(stage, "applies", None)
    return applies is None or applies(task)


def run_stages(ctx: StageContext, stages: list[Any], original: str, gate: Any = None) -> None:
    """Run ``stages`` on ``ctx`` in order, chaining accepted rewrites and findings.

    A stage's candidate is taken only with an accepted guard verdict (the
    context's tree and result are then computed anew). Findings of a stage whose
    rewrite was accepted are recorded in the trace but not passed on (they are
    fixed); the others reach the later stages through ``ctx.findings``.
    After a ``refused`` finding (not one read-only query) the later stages are
    skipped: a refusal is reported, never rewritten.

    Args:
        ctx: the context; ``ctx.traces`` receives one trace per stage.
        stages: stage objects (``"guard"`` stands for the final guard).
        original: the input SQL, for the final guard.
        gate: the model gate (:class:`sqlmend.search.gate.ModelGate`) a stage's accepted rewrite
            passes when the stage called a model; None: the guard alone decides.
    """
    refused = False
    for stage in stages:
        if stage != "guard" and not stage_applies(stage, ctx.task):  # nothing to do: no trace
            continue
        if refused and stage != "guard":  # a refusal is reported, never rewritten
            ctx.traces.append(StageTrace(stage=getattr(stage, "name", "?"), status="skipped",
                                         note="refused: not one read-only query"))
            continue
        if stage == "guard":
            start = time.perf_counter()
            trace = _final_guard(ctx, original)
            trace.seconds = round(time.perf_counter() - start, 4)
            ctx.traces.append(trace)
            continue
        trace = _run_stage(stage, ctx)
        ctx.traces.append(trace)
        if trace.candidate and trace.verdict and trace.verdict.accepted and \
                _admitted(trace, ctx, gate, whole=getattr(stage, "replaces_query", False)):
            ctx.accept(trace.verdict.sql)
            if getattr(stage, "replaces_query", False):  # the findings were about the query it replaced
                ctx.findings.clear()
        elif trace.candidate and trace.verdict is None:
            # a stage must guard its own rewrite; an unguarded candidate is not taken
            trace.note = (trace.note + "; " if trace.note else "") + "candidate without guard verdict ignored"
        if not _resolved(trace):
            ctx.findings.extend(trace.findings)
        refused = refused or any(f.error_type == REFUSED for f in trace.findings)


class Pipeline:
    """The stages of one configuration, built once and shared by every task (and thread)."""

    def __init__(self, config: PipelineConfig | None = None,
                 resolve: Callable[[str], Any] | None = None,
                 db_root: str | os.PathLike | None = None):
        """Build the stages of ``config``.

        Args:
            config: the run's configuration (defaults: errorllm, every stage).
            resolve: ``stage -> backend | None``; default :func:`make_resolver`.
            db_root: the folder of ``<db_id>/<db_id>.sqlite`` for tasks without ``db``.

        Raises:
            ConfigError: an unknown option key, a bad value or an unknown model endpoint.
        """
        self.config = config or PipelineConfig()
        self.db_root = db_root
        self.run = self.config.run_settings()
        self.stages: list[Any] = build_stages(self.config)
        self.resolve = resolve or make_resolver(self.config)
        self.gate = ModelGate() if self.config.gated() else None
        self.allow_functions = frozenset(self.config.allow_functions)

    def correct(self, task: Task, db: Any = None, cancel: threading.Event | None = None,
                results: ItemResults | None = None) -> Correction:
        """Correct one task. Never raises for a per-item problem: it goes to ``error``.

        Args:
            task: the question, its database and the SQL to check.
            db: an open database to run on, left open (a :class:`sqlmend.api.Corrector`'s);
                default: the task's (``Task.db`` or under ``db_root``), opened for this task.
            cancel: set by whoever stops waiting for the answer (the service's deadline): the item's
                work stops at its next unit of work and the item ends with ``ItemCancelled``.
            results: the item's executed queries (:class:`~sqlmend.db.results.ItemResults`; default a
                new one): a caller that wants to see which queries ran (``results.queries()``) gives its own.

        Returns:
            The correction: the SQL to use (the input when nothing was proven
            wrong or every rewrite was rejected) and one trace per stage.
        """
        result = Correction(question_id=task.question_id, db_id=task.db_id,
                            original_sql=task.sql, sql=task.sql)
        try:  # the database first, then the SQL: the one precedence of every door (api.Correctors.answer)
            with nullcontext(db) if db is not None else connect(database_for(task, self.db_root)) as db:
                _check_text(task)
                if not task.sql.strip():
                    result.error = "empty SQL"
                    return result
                db.aborted = None  # a connection kept across items (a Corrector's) starts each one clean
                db.allow_functions = self.allow_functions  # the configuration's own pure functions
                # one budget for all the item's queries and checks, and each distinct query run once
                db.budget = WorkBudget(ITEM_BUDGET * self.run.timeout, cancel=cancel)
                db.results = results if results is not None else ItemResults()
                try:
                    db.refresh()  # a kept connection sees a DDL change made since its last item
                    intake, query = take_sql_out(task, db)
                    with scope_of(db, query):
                        ctx = StageContext(task=query, db=db, sql=query.sql, run=self.run, resolve=self.resolve)
                        if intake is not None:
                            ctx.traces.append(intake)
                        run_stages(ctx, self.stages, query.sql, self.gate)
                        if intake is not None and (ran := ctx.execute())[0] is None:
                            _keep_raw_answer(intake, ctx, task.sql, ran[1])
                finally:
                    result.executions = db.results.counts()
                    db.budget = db.results = None
        except SqlmendError as exc:
            result.error = error_text(exc)
            return result
        result.stages = ctx.traces
        result.sql = ctx.sql
        return result


def scope_of(db: Any, task: Task) -> Any:
    """The relations an item of a big catalogue sees (:mod:`sqlmend.db.scope`: those its query and its
    alternatives name, the ones a name they invent may stand for, their neighbours by foreign key), as a
    context for the item's stages; the whole database (no context) for a catalogue of at most
    :data:`~sqlmend.db.scope.SCOPE_ABOVE` relations."""
    if not hasattr(db, "scoped") or not db.large():
        return nullcontext()
    texts = [task.sql, *task.alternatives]
    return db.scoped(db.catalogue_index().relations(texts, getattr(db, "dialect", "sqlite")))


def take_sql_out(task: Task, db: Any) -> tuple[StageTrace | None, Task]:
    """The SQL of a model's raw answer, taken out once before anything parses it (rule EX05:
    :func:`sqlmend.sql.answer.extract`), and the trace step that says so (``input``, its finding
    kept out of the later stages' evidence); the task as it came and no step when the SQL is plain.

    Every door reaches this through :meth:`Pipeline.correct`, so a fenced answer gets one answer
    everywhere; the record keeps the raw answer as its ``original_sql``.
    """
    dialect = getattr(db, "dialect", "sqlite")
    found = extract(task.sql, dialect)
    if found is None:
        return None, task
    start = time.perf_counter()
    findings = rules.check(db, task.sql, task.question, codes=["EX05"])
    for f in findings:
        f.source = "input"
    trace = StageTrace(stage="input", status="ran", findings=findings, detail={"sql": found.sql},
                       note=findings[0].message if findings else "SQL taken out of a raw answer")
    trace.seconds = round(time.perf_counter() - start, 4)
    return trace, replace(task, sql=found.sql)


def _keep_raw_answer(intake: StageTrace, ctx: StageContext, raw: str, error: str | None) -> None:
    """The raw answer as given when the SQL taken out of it still does not run (refused, or the engine
    fails it): the output is the input or one query that runs, never a third text; the ``input``
    step keeps what was taken out and says why it is not returned."""
    why = error or "it does not run"
    intake.note += f"; the SQL taken out does not run ({why}): the answer is returned as given"
    intake.detail["returned"] = "as given"
    ctx.sql = raw


def _check_text(task: Task) -> None:
    """Refuse an item whose SQL, question or evidence is not text UTF-8 can carry.

    Raises:
        InputError: naming the field and the character's place.
    """
    for name in ("sql", "question", "evidence"):
        value = getattr(task, name)
        if not isinstance(value, str):
            raise InputError(f"the {name} is not text (got {type(value).__name__})")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(f"the {name} is not valid Unicode: a lone surrogate {value[exc.start]!r} at "
                             f"character {exc.start + 1}") from None


def correct(task: Task, config: PipelineConfig | None = None,
            db_root: str | os.PathLike | None = None) -> Correction:
    """Correct one task with a fresh pipeline (for many tasks use :func:`correct_batch`).

    Args:
        task: the question, its database and the SQL to check.
        config: the run's configuration.
        db_root: the folder of ``<db_id>/<db_id>.sqlite`` when the task has no ``db``.

    Returns:
        The :class:`~sqlmend.types.Correction`.
    """
    return Pipeline(config, db_root=db_root).correct(task)


# --- checkpoints ----------------------------------------------------------


def correction_from_dict(d: dict[str, Any]) -> Correction:
    """Rebuild a :class:`Correction` from its ``to_dict()`` form (a checkpoint line)."""
    stages = []
    for s in d.get("stages", []):
        s = dict(s)
        s["findings"] = [Finding(**f) for f in s.get("findings", [])]
        s["verdict"] = GuardVerdict(**s["verdict"]) if s.get("verdict") else None
        stages.append(StageTrace(**s))
    return Correction(question_id=str(d["question_id"]), db_id=d["db_id"],
                      original_sql=d["original_sql"], sql=d["sql"], stages=stages,
                      error=d.get("error"), executions=dict(d.get("executions") or {}))


def read_checkpoint(path: str | os.PathLike) -> dict[str, Correction]:
    """Read the corrections already written to a JSONL checkpoint.

    A last line cut short by a kill is ignored (its task runs again).

    Returns:
        ``{question_id: Correction}``.
    """
    done: dict[str, Correction] = {}
    p = Path(path)
    if not p.exists():
        return done
    with p.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                c = correction_from_dict(json.loads(line))
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
            done[c.question_id] = c
    return done


def _repair_tail(path: Path) -> None:
    """Cut a partial last line (a kill mid-write) so that appends start on a new line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    with path.open("r+b") as fh:
        fh.truncate(keep)


class _Checkpoint:
    def __init__(self, path: Path | None):
        self.path = path
        self.lock = threading.Lock()
        self.fh = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            _repair_tail(path)
            self.fh = path.open("ab", buffering=0)

    def write(self, c: Correction) -> None:
        """Append one line, whole or not at all: a failed write (a full disk) is cut off again.

        Raises:
            OutputError: the line cannot be written (the items before it stay in the file).
        """
        if self.fh is None:
            return
        data = memoryview((json_text(c.to_dict()) + "\n").encode("utf-8"))
        with self.lock:
            fd = self.fh.fileno()
            end = os.lseek(fd, 0, os.SEEK_END)
            try:
                while data:
                    data = data[os.write(fd, data):]
                os.fsync(fd)
            except OSError as exc:
                os.ftruncate(fd, end)
                raise OutputError(f"cannot write the checkpoint {self.path}: {exc.strerror or exc}; the items "
                                  "finished before are kept in it: make room and run the same command "
                                  "again to resume") from None

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()

    def reorder(self, ids: list[str]) -> None:
        """Rewrite the finished checkpoint with ``ids`` first, in that order (the dataset's, not the
        order the workers finished in), then any other task it holds; atomically (a kill now
        leaves the old file whole)."""
        if self.path is None:
            return
        lines: dict[str, str] = {}
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    lines[str(json.loads(line)["question_id"])] = line if line.endswith("\n") else line + "\n"
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
        rank = {q: i for i, q in enumerate(ids)}
        ordered = sorted(lines, key=lambda q: (q not in rank, rank.get(q, 0)))
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with tmp.open("w", encoding="utf-8") as fh:
                fh.writelines(lines[q] for q in ordered)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:  # a full disk: the checkpoint holds every item, in finishing order
            tmp.unlink(missing_ok=True)
            raise OutputError(f"cannot rewrite the checkpoint {self.path} in order: {exc.strerror or exc}; it "
                              "holds every item: make room and run the same command again") from None
        os.replace(tmp, self.path)


# --- batches --------------------------------------------------------------


def correct_batch(tasks: Iterable[Task], config: PipelineConfig | None = None, *,
                  checkpoint: str | os.PathLike | None = None, progress: bool = True,
                  resolve: Callable[[str], Any] | None = None,
                  db_root: str | os.PathLike | None = None,
                  pipeline: Pipeline | None = None) -> list[Correction]:
    """Correct many tasks in parallel, resumably.

    Tasks whose ``question_id`` is already in ``checkpoint`` are not run again (but those
    that failed on a transient error, :data:`TRANSIENT_ERRORS`, are);
    each finished task is appended (and flushed) to it at once, so a killed run
    loses at most the tasks in flight; a finished batch rewrites it in the order of
    ``tasks``. A task that fails gets its ``error`` set and the batch goes on.

    Args:
        tasks: the tasks, in output order.
        config: the run's configuration (``workers`` tasks at once,
            ``model_concurrency`` model calls at once).
        checkpoint: a JSONL file of corrections to resume from and append to.
        progress: show a progress bar.
        resolve: the model resolver (default :func:`make_resolver`).
        db_root: the folder of ``<db_id>/<db_id>.sqlite`` for tasks without ``db``.
        pipeline: a pipeline already built (its config then wins over ``config``).

    Returns:
        One correction per task, in the order of ``tasks``.
    """
    config = pipeline.config if pipeline is not None else (config or PipelineConfig())
    tasks = list(tasks)
    ids = [t.question_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ConfigError("question ids of a batch must be unique")
    done = read_checkpoint(checkpoint) if checkpoint else {}
    todo = [t for t in tasks if t.question_id not in done or transient(done[t.question_id].error)]
    pipe = pipeline or Pipeline(config, resolve=resolve, db_root=db_root)
    sink = _Checkpoint(Path(checkpoint) if checkpoint else None)
    results: dict[str, Correction] = {k: v for k, v in done.items() if k in set(ids)}
    bar = _progress(len(tasks), len(tasks) - len(todo), progress)
    try:
        with ThreadPoolExecutor(max_workers=config.workers) as pool:
            futures = {pool.submit(_safe_correct, pipe, t): t for t in todo}
            try:
                for fut in as_completed(futures):
                    c = fut.result()
                    results[c.question_id] = c
                    sink.write(c)
                    bar.update(1)
            except BaseException:  # the checkpoint cannot be written (or ^C): start no other task
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    finally:
        bar.close()
        sink.close()
    sink.reorder(ids)
    return [results[i] for i in ids]


#: Item errors a re-run retries: the database was missing, locked, changed, or the machine too slow
#: for the safety net, which a later run may not meet (an empty SQL or a bug fails the same way
#: again and is kept).
TRANSIENT_ERRORS = frozenset({"DatabaseError", "DatabaseNotFoundError", "DatabaseUnavailable", "DeadlineExceeded"})


def transient(error: str | None) -> bool:
    """Whether an item's ``error`` (``"Kind: message"``) is one a re-run retries."""
    return error is not None and error.split(":", 1)[0] in TRANSIENT_ERRORS


def error_text(exc: BaseException) -> str:
    """The ``error`` of an item that an exception ended: ``"Kind: message"``, the same through
    every door (the Python API's raised error reads the same way)."""
    return f"{type(exc).__name__}: {exc}"


def failed(task: Task, exc: BaseException) -> Correction:
    """The record of an item that ``exc`` ended: the input kept, the error named."""
    return Correction(question_id=task.question_id, db_id=task.db_id, original_sql=task.sql, sql=task.sql,
                      error=error_text(exc))


def _safe_correct(pipe: Pipeline, task: Task) -> Correction:
    try:
        return pipe.correct(task)
    except Exception as exc:  # a bug in one item must not kill the batch
        return failed(task, exc)


def _progress(total: int, initial: int, enabled: bool) -> Any:
    from sqlmend.progress import bar

    return bar(total=total, initial=initial, disable=not enabled, desc="correct", unit="q", dynamic_ncols=True)


# --- summary --------------------------------------------------------------


@dataclass
class Summary:
    """Totals of a batch: what changed, what failed, and what it cost."""

    queries: int = 0
    changed: int = 0
    errors: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    stages: dict[str, dict[str, int]] = field(default_factory=dict)  # stage -> status -> count
    executed: int = 0  # queries the engine ran (each distinct query of an item once)
    reused: int = 0  # calls answered from an earlier run of the same query in the item

    @property
    def calls_per_query(self) -> float:
        return self.calls / self.queries if self.queries else 0.0

    @property
    def tokens_per_query(self) -> float:
        return (self.tokens_in + self.tokens_out) / self.queries if self.queries else 0.0

    @property
    def seconds_per_query(self) -> float:
        return self.seconds / self.queries if self.queries else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries, "changed": self.changed, "errors": self.errors,
            "calls": self.calls, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
            "seconds": round(self.seconds, 3),
            "calls_per_query": round(self.calls_per_query, 3),
            "tokens_per_query": round(self.tokens_per_query, 1),
            "seconds_per_query": round(self.seconds_per_query, 4),
            "executed": self.executed, "reused": self.reused,
            "executed_per_query": round(self.executed / self.queries, 3) if self.queries else 0.0,
            "stages": self.stages,
        }


def summarize(corrections: Iterable[Correction]) -> Summary:
    """Total the calls, tokens, time and stage outcomes of a batch.

    Args:
        corrections: the batch's results.

    Returns:
        A :class:`Summary` (per-query averages as properties).
    """
    s = Summary()
    for c in corrections:
        s.queries += 1
        s.changed += int(c.changed)
        s.errors += int(c.error is not None)
        s.executed += c.executions.get("executed", 0)
        s.reused += c.executions.get("reused", 0)
        for t in c.stages:
            s.calls += t.calls
            s.tokens_in += t.tokens_in
            s.tokens_out += t.tokens_out
            s.seconds += t.seconds
            counts = s.stages.setdefault(t.stage, {})
            counts[t.status] = counts.get(t.status, 0) + 1
    return s

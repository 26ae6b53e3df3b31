"""The stage contract: what every pipeline stage receives, how it is configured, what it returns.

A stage is a class with

- ``name`` - its name in ``--stages`` and in ``--option NAME.key=value``;
- ``Settings`` - a pydantic model (a subclass of :class:`StageSettings`, so
  ``extra="forbid"``) holding every option the stage reads;
- ``from_config(options, run)`` - builds the stage from the raw options of its
  name (validated against ``Settings``: an unknown key fails at start, naming
  the known keys) and the run-wide :class:`RunSettings`;
- ``run(ctx) -> StageTrace``.

:class:`StageContext` owns the current SQL's parsed tree and its execution
result: each is computed once per SQL version and shared by every stage, and
both are reset when a rewrite is accepted (:meth:`StageContext.accept`). A
stage that proposes a rewrite puts it in ``StageTrace.candidate`` with the
verdict of :meth:`StageContext.guard` in ``StageTrace.verdict``.

>>> class Echo(StageBase):
...     name = "echo"
...     class Settings(StageSettings):
...         loud: bool = False
...     def run(self, ctx):
...         return StageTrace(self.name, "ran", note=ctx.sql.upper() if self.settings.loud else ctx.sql)
>>> Echo.from_config({"loud": True}, RunSettings()).settings.loud
True
>>> Echo.from_config({"lod": True}, RunSettings())
Traceback (most recent call last):
...
sqlmend.errors.ConfigError: unknown option(s) for stage 'echo': lod; known: loud
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sqlmend import guard, sql
from sqlmend.errors import (ConfigError, DatabaseError, ItemLimitExceeded, MemoryLimitExceeded, QueryTimeout,
                            ReadOnlyViolation, SqlError, WorkLimitExceeded)  # noqa: F401 (the doctest's)
from sqlmend.types import Backend, Database, ExecResult, Finding, GuardVerdict, StageTrace, Task


class RunSettings(BaseModel):
    """Run-wide limits every stage honours (from ``PipelineConfig``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(30.0, gt=0, description="seconds per SQL execution (query, probes, guard)")
    max_rows: int = Field(10_000, gt=0, description="rows fetched per execution")


class StageSettings(BaseModel):
    """Base of every stage's settings: typed, and a misspelt key is an error."""

    model_config = ConfigDict(extra="forbid")


def settings_of(cls: type[StageSettings], stage: str, options: dict[str, Any] | None) -> StageSettings:
    """Validate the raw options of one stage against its settings model.

    Args:
        cls: the stage's ``Settings`` class.
        stage: the stage's name (for the message).
        options: ``{key: value}`` as given (``--option stage.key=value``, a config file, code).

    Returns:
        The validated settings.

    Raises:
        ConfigError: an unknown key (the message names the known keys) or a bad value.
    """
    options = dict(options or {})
    known = sorted(cls.model_fields)
    unknown = sorted(k for k in options if k not in cls.model_fields)
    if unknown:
        raise ConfigError(f"unknown option(s) for stage {stage!r}: {', '.join(unknown)}; "
                          f"known: {', '.join(known) or '(none)'}")
    try:
        return cls.model_validate(options)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"bad option(s) for stage {stage!r}: {problems}") from exc


class Stage(Protocol):
    """What the pipeline requires of a stage."""

    name: ClassVar[str]
    Settings: ClassVar[type[StageSettings]]
    default_on: ClassVar[bool]

    @classmethod
    def from_config(cls, options: dict[str, Any], run: RunSettings) -> "Stage": ...

    def run(self, ctx: "StageContext") -> StageTrace: ...


class StageBase:
    """The constructor and ``from_config`` every stage shares (subclasses set ``name``, ``Settings``)."""

    name: ClassVar[str] = ""
    Settings: ClassVar[type[StageSettings]] = StageSettings
    #: Whether the default stage list (no ``--stages``) includes the stage.
    default_on: ClassVar[bool] = True
    #: Whether the stage's rewrite is a whole other query, not an edit of the current one: when it is
    #: taken, the earlier stages' findings (about the query it replaced) no longer reach later stages.
    replaces_query: ClassVar[bool] = False

    def __init__(self, settings: StageSettings | None = None, run: RunSettings | None = None):
        """Args:
            settings: the stage's settings (defaults when omitted).
            run: the run-wide limits (defaults when omitted).
        """
        self.settings = settings if settings is not None else self.Settings()
        self.run_settings = run if run is not None else RunSettings()

    @classmethod
    def from_config(cls, options: dict[str, Any] | None = None, run: RunSettings | None = None):
        """Build the stage from its raw options and the run-wide settings.

        Raises:
            ConfigError: an unknown option key or a bad value.
        """
        return cls(settings_of(cls.Settings, cls.name, options), run)

    def applies(self, task: Task) -> bool:
        """Whether the stage has anything to do for ``task``. One that does not leaves no trace: the
        consensus stage on a task without alternatives, so such a task runs exactly as before."""
        return True

    def run(self, ctx: "StageContext") -> StageTrace:  # pragma: no cover - the interface
        raise NotImplementedError


class _ModelCalls:
    """A model backend whose calls (``chat``, ``embed``, ``next_token_scores``) are set aside from the item's
    wall-clock deadline (:meth:`sqlmend.db.base.WorkBudget.aside`); anything else is the backend's own."""

    _CALLS = frozenset({"chat", "embed", "next_token_scores"})

    def __init__(self, backend: Any, budget: Any):
        self._backend, self._budget = backend, budget

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._backend, name)
        if name not in self._CALLS or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._budget.aside():
                return attr(*args, **kwargs)

        return call


#: How a text refused by the read-only layer (not one read-only query) reads as an execution error.
REFUSED_PREFIX = "refused: "
#: How :func:`exec_error_text` words a timeout.
TIMEOUT_PREFIX = "timeout: "


def exec_error_text(exc: DatabaseError) -> str:
    """How an execution failure reads in findings and prompts (one wording for every stage).

    A refusal of the read-only layer starts with :data:`REFUSED_PREFIX` (rule EX03 reports it).
    """
    if isinstance(exc, QueryTimeout):
        return f"{TIMEOUT_PREFIX}{exc}"
    if isinstance(exc, ReadOnlyViolation):
        return f"{REFUSED_PREFIX}{exc or 'not one read-only query'}"
    return getattr(exc, "engine_message", None) or str(exc)


def refused_by_engine(error: str | None) -> bool:
    """Whether an execution failure (:func:`exec_error_text`'s wording) makes the query wrong for
    certain: an engine error or a refusal, not a timeout (a slow query may be right)."""
    return bool(error) and not error.startswith(TIMEOUT_PREFIX)


def limit_reason(exc: QueryTimeout) -> str:
    """Why an item ends whose input passed its own limit (the item's error, after its kind).

    >>> limit_reason(WorkLimitExceeded("...", timeout=24.0, work=600_000))
    'the query did not finish within its limit: 600,000 work units (24s of work); the input is kept'
    """
    work = getattr(exc, "work", None)
    if isinstance(exc, MemoryLimitExceeded):
        limit = str(exc)
    elif work is not None:
        limit = f"{work:,} work units ({exc.timeout:g}s of work)"
    else:
        limit = f"{exc.timeout:g}s" if exc.timeout else str(exc)
    return f"the query did not finish within its limit: {limit}; the input is kept"


@dataclass(frozen=True)
class Vote:
    """What other answers to the question say about one SQL (the consensus stage's count).

    ``k`` alternatives were given; ``agree`` of them return this SQL's rows (the evaluator's set rule).
    """

    sql: str
    k: int
    agree: int

    def p_error(self, p_error: float) -> float:
        """P(error) of the SQL with this vote: another judge's P(error) counts as one more voter.

        >>> Vote("SELECT 1", k=4, agree=0).p_error(0.2), Vote("SELECT 1", k=0, agree=0).p_error(0.2)
        (0.84, 0.2)
        """
        return ((self.k - self.agree) + p_error) / (self.k + 1)


@dataclass(frozen=True)
class Offered:
    """A query one stage offers later ones as a candidate repair (the consensus stage: a group of
    alternatives that agree), with its result when it has one."""

    sql: str
    label: str
    result: ExecResult | None = None


@dataclass
class StageContext:
    """What a pipeline stage receives.

    ``db`` is the open database; ``sql`` the current SQL (the input, or the last
    rewrite a guard accepted); ``findings`` the findings of earlier stages not
    fixed yet; ``traces`` what earlier stages did; ``run`` the run-wide limits;
    ``resolve(stage)`` the model backend configured for a stage, or ``None``.
    """

    task: Task
    db: Database
    sql: str
    run: RunSettings = field(default_factory=RunSettings)
    resolve: Callable[[str], Backend | None] | None = None
    findings: list[Finding] = field(default_factory=list)
    traces: list[StageTrace] = field(default_factory=list)
    #: The alternatives' vote on each SQL they were compared with (the consensus stage's), by SQL text.
    votes: dict[str, Vote] = field(default_factory=dict)
    #: Candidate repairs an earlier stage offers (the consensus stage's groups), for the search and refinement.
    offered: list[Offered] = field(default_factory=list)
    _tree: Any = field(default=None, repr=False)
    _parse_error: str | None = field(default=None, repr=False)
    _parsed: bool = field(default=False, repr=False)
    _exec: tuple[ExecResult | None, str | None] | None = field(default=None, repr=False)

    @property
    def dialect(self) -> str:
        """The database's sqlglot dialect."""
        return getattr(self.db, "dialect", "sqlite")

    @property
    def budget(self) -> Any:
        """The item's :class:`~sqlmend.db.base.WorkBudget` (None outside a pipeline item)."""
        return getattr(self.db, "budget", None)

    @property
    def results(self) -> Any:
        """The item's executed queries (:class:`sqlmend.db.results.ItemResults`; None outside a pipeline
        item). Every ``ctx.db.execute`` / ``execute_parsed`` of the item is answered from it when the same
        query ran before, so a stage that runs SQL of its own (alternatives, candidates) shares the runs
        of the others and adds none twice; ``ctx.results.counts()`` says how many ran."""
        return getattr(self.db, "results", None)

    def spend(self, seconds: float, what: str) -> None:
        """Charge a stage's own work to the item's budget (:meth:`~sqlmend.db.base.WorkBudget.spend`:
        ``ItemLimitExceeded`` past it, ``DeadlineExceeded`` / ``ItemCancelled`` from the safety net);
        nothing outside a pipeline item."""
        budget = self.budget
        if budget is not None:
            budget.spend(seconds, what)

    def backend(self, stage: str) -> Backend | None:
        """Return the model backend for ``stage``, or ``None`` (no resolver or none configured).

        Within a pipeline item its calls run outside the item's wall-clock deadline (they have time-outs
        of their own; :class:`_ModelCalls`), so a slow model never turns an answer into a time-out.
        """
        backend = self.resolve(stage) if self.resolve is not None else None
        budget = self.budget
        return _ModelCalls(backend, budget) if backend is not None and budget is not None else backend

    def tree(self) -> Any:
        """The current SQL parsed (once per SQL version), or ``None`` when it does not parse.

        Callers that edit the tree must copy it first (``tree.copy()``): it is shared.
        """
        if not self._parsed:
            try:
                self._tree = sql.parse(self.sql, dialect=self.dialect)
            except SqlError as exc:
                self._tree, self._parse_error = None, str(exc)
            self._parsed = True
        return self._tree

    @property
    def parse_error(self) -> str | None:
        """Why the current SQL does not parse (``None`` when it does)."""
        self.tree()
        return self._parse_error

    def execute(self) -> tuple[ExecResult | None, str | None]:
        """Execute the current SQL once per SQL version (run-wide time limit and row cap).

        Returns:
            ``(result, None)``, or ``(None, why it failed)`` - the engine's message,
            ``timeout: ...``, or the read-only layer's refusal.

        Raises:
            ItemLimitExceeded: the item's input passed its own limit (work, time or memory): its
                variants would too, so the item ends with the input kept (:func:`limit_reason`).
        """
        if self._exec is None:
            try:
                self._exec = (self.db.execute(self.sql, timeout=self.run.timeout,
                                              max_rows=self.run.max_rows), None)
            except DatabaseError as exc:
                if isinstance(exc, QueryTimeout) and self.sql == self.task.sql:
                    self.db.aborted = ItemLimitExceeded(limit_reason(exc))
                    raise self.db.aborted from exc
                self._exec = (None, exec_error_text(exc))
        return self._exec

    def run_query(self, text: str, timeout: float | None = None,
                  max_rows: int | None = None) -> tuple[ExecResult | None, str | None]:
        """Execute another query of the item (an alternative, a probe) on its database, under the item's
        budget: ``(result, None)`` or ``(None, why it failed)`` as :meth:`execute` words it.

        Raises:
            ItemAborted: the item's budget is spent (the item ends), or a safety net fired.
        """
        try:
            return self.db.execute(text, timeout=self.run.timeout if timeout is None else timeout,
                                   max_rows=self.run.max_rows if max_rows is None else max_rows), None
        except DatabaseError as exc:
            return None, exec_error_text(exc)

    def vote(self) -> Vote | None:
        """The alternatives' vote on the current SQL, when the consensus stage counted one."""
        return self.votes.get(self.sql)

    def set_execution(self, result: ExecResult | None, error: str | None) -> None:
        """Record the current SQL's execution when a caller already has it."""
        self._exec = (result, error)

    def guard(self, candidate: str) -> GuardVerdict:
        """Pass a candidate through the validate-or-retain guard against the current SQL.

        The current SQL's result is reused unless it was cut at the row cap.
        """
        result, error = self.execute()
        return guard.validate(self.db, self.sql, candidate, timeout=self.run.timeout,
                              max_rows=self.run.max_rows,
                              original_result=None if result is not None and result.truncated else result,
                              original_error=error)

    def accept(self, new_sql: str) -> None:
        """Make an accepted rewrite the current SQL (its tree and result are computed anew)."""
        self.sql = new_sql
        self._tree, self._parse_error, self._parsed, self._exec = None, None, False, None

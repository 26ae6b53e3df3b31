"""The Python API: correct the SQL of a text-to-SQL system from your own code.

::

    import sqlmend

    fixer = sqlmend.Corrector("path/to.sqlite")     # or "postgresql://..." / "duckdb:///x.duckdb"
    result = fixer.correct("How many singers are from France?",
                           "SELECT count(*) FROM singer WHERE country = 'france'")
    result.sql          # "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    result.changed      # True
    result.findings     # [Finding(code="VL01", error_type="value_error", ...)]
    print(result.explain())

    fixer.check(question, sql).findings          # what is wrong, nothing rewritten
    fixer.correct_many([(q1, sql1), {"question": q2, "sql": sql2}], workers=4)  # input order

A :class:`Corrector` belongs to one database. It builds the stages, models and
repair memory once and keeps them, with the database's schema and value index,
across calls. It is safe to share between threads: each query in flight gets a
connection of its own from a small pool (a connection runs one query at a time;
the schema and value index are shared by every connection of the process); a
connection whose file changed on disk since it was opened, or whose server no
longer answers, is opened afresh.

A per-item problem never raises: an empty SQL, a database file deleted since
the Corrector was made, a failing stage go into ``result.error`` or the stage's
trace; a text that is not one read-only query is reported as a ``refused``
finding (``result.refused``) and kept as it is. Only a problem of the Corrector
itself raises, at construction: a missing database
(:class:`~sqlmend.errors.DatabaseNotFoundError`), an unknown stage or option
(:class:`~sqlmend.errors.ConfigError`).

The CLI's single query (``sqlmend correct --db ... --sql ...``, ``sqlmend check``),
the HTTP service, the MCP server (``sqlmend mcp``) and the Ray workers of
``sqlmend correct --engine ray`` (one Corrector per database, sharing one set of
stages: :class:`Correctors`) are built on this class. ``fixer.schema()`` and
``fixer.value_index()`` are the database as the stages see it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sqlmend.db import MYSQL_SCHEMES, Database, ValueIndex, connect, split_schemas, with_schemas
from sqlmend.db.account import Login, admit, check_login
from sqlmend.errors import ConfigError, SqlmendError
from sqlmend.pipeline import Pipeline, PipelineConfig, database_for, failed
from sqlmend.structure import needs
from sqlmend.structure.needs import QuestionSchema
from sqlmend.taxonomy import REFUSED
from sqlmend.types import Correction, Finding, Schema, StageTrace, Table, Task

#: Stages that only look; :meth:`Corrector.check` runs those of the configuration (the consensus stage
#: reports the alternatives' vote there and replaces nothing).
CHECK_STAGES = ("static", "memory", "consensus", "detector")

#: What ``models=`` takes: assignments ``STAGE=ENDPOINT`` (one string, a list, or a
#: ``{stage: endpoint}`` mapping; ``"*=local"``: the embedded SmolLM2 everywhere), or
#: a resolver ``stage -> backend | None`` (``sqlmend.llm`` backends, e.g. a ``ReplayBackend``).
Models = str | Sequence[str] | Mapping[str, str] | Callable[[str], Any] | None


# --- results ----------------------------------------------------------------


def _stage_lines(c: Correction, dialect: str) -> Iterator[tuple[str, str, str]]:
    from sqlmend.rules.engine import unapplied

    for s in c.stages:
        yield "stage", s.stage, f" {s.status}: {s.note}  ({len(s.findings)} findings, {s.calls} calls)"
        for f in s.findings:
            yield "finding", "", f"   {f.code} {f.describe()}"
    for f, text in unapplied(c.original_sql, c.sql, c.findings, dialect):
        yield "suggested", f"suggested by {f.code} ({f.severity}, not applied):", f" {text}"
    if c.executions:
        yield "queries", "queries:", (f" {c.executions.get('executed', 0)} run on the database, "
                                      f"{c.executions.get('reused', 0)} answered again from those runs")
    if c.error:
        yield "error", "error:", f" {c.error}"


def explain_lines(c: Correction, dialect: str = "sqlite") -> Iterator[tuple[str, str, str]]:
    """The explanation of a correction, line by line, as ``(kind, label, rest)``.

    One line per stage (status, note, counts) followed by its findings, then the
    fixes proposed but not applied (advisory rules, rewrites the guard refused),
    the error if any, and the outcome. ``kind`` is ``stage``, ``finding``,
    ``suggested``, ``error``, ``corrected`` or ``unchanged``; ``label + rest`` is the
    line's text (the CLI styles ``label``).

    Args:
        c: the correction.
        dialect: the database's dialect (to write the suggested fixes).
    """
    yield from _stage_lines(c, dialect)
    if c.changed:
        yield "corrected", "corrected:", f" {c.sql}"
    else:
        yield "unchanged", "", f"unchanged: {c.sql}"


@dataclass(frozen=True)
class _Result:
    """What the stages recorded for one query (the part :class:`CorrectionResult` and
    :class:`CheckResult` share).

    Attributes:
        correction: the pipeline's full record (``to_dict()`` is the JSON of the CLI's
            ``corrections.jsonl`` and of the service's answers).
        question: the question asked.
    """

    correction: Correction
    question: str = ""
    dialect: str = field(default="sqlite", repr=False)

    @property
    def findings(self) -> list[Finding]:
        """Every finding of every stage (those a rewrite fixed too)."""
        return self.correction.findings

    @property
    def stages(self) -> list[StageTrace]:
        """One trace per stage run: status, note, findings, candidate, guard verdict, calls, time."""
        return self.correction.stages

    @property
    def error(self) -> str | None:
        """A per-item failure (``"empty SQL"``, ``"DatabaseNotFoundError: ..."``); the SQL is then the input."""
        return self.correction.error

    @property
    def refused(self) -> bool:
        """True when the input is not one read-only query (finding ``EX03``): reported, never rewritten."""
        return any(f.error_type == REFUSED for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return self.correction.to_dict()


@dataclass(frozen=True)
class CorrectionResult(_Result):
    """What :meth:`Corrector.correct` decided for one query: ``sql`` to use, ``changed``,
    ``findings``, ``stages``, ``error``, ``refused``, and :meth:`explain`."""

    @property
    def sql(self) -> str:
        """The SQL to use: the guarded rewrite, or the input unchanged."""
        return self.correction.sql

    @property
    def original_sql(self) -> str:
        return self.correction.original_sql

    @property
    def changed(self) -> bool:
        return self.correction.changed

    def explain(self) -> str:
        """What each stage decided and why, the fixes proposed but not applied, and the outcome."""
        return "\n".join(label + rest for _, label, rest in explain_lines(self.correction, self.dialect))


@dataclass(frozen=True)
class CheckResult(_Result):
    """What :meth:`Corrector.check` found in one query, nothing rewritten: ``findings``, ``wrong``,
    ``refused``, ``stages``, ``error``, and :meth:`explain` (``correction.sql`` is no answer)."""

    @property
    def sql(self) -> str:
        """The SQL checked, as given."""
        return self.correction.original_sql

    @property
    def wrong(self) -> bool:
        """True when some stage found something wrong."""
        return bool(self.findings)

    def explain(self) -> str:
        """What each detecting stage found, and the fixes its findings propose."""
        shown = Correction(question_id=self.correction.question_id, db_id=self.correction.db_id,
                           original_sql=self.sql, sql=self.sql, stages=self.stages, error=self.error)
        lines = [label + rest for _, label, rest in _stage_lines(shown, self.dialect)]
        lines.append(f"{len(self.findings)} finding(s)" + (": wrong" if self.wrong else ": nothing found"))
        return "\n".join(lines)


def check_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The answer of a check (``/check``, ``sqlmend check --json``) from a correction's ``to_dict()``:
    the findings of its stages, nothing rewritten; ``refused`` when the text is not one read-only
    query (but not when the item failed: ``error``)."""
    findings = [f for s in body["stages"] for f in s["findings"]]
    return {"question_id": body["question_id"], "error": body["error"], "findings": findings,
            "wrong": bool(findings), "refused": not body["error"] and any(f["error_type"] == REFUSED
                                                                          for f in findings),
            "stages": body["stages"]}


# --- connections ------------------------------------------------------------


def _stamp(db: Database) -> tuple[int, int, int] | None:
    """The file of a file database as (inode, mtime, size); None for a server or a file gone."""
    path = getattr(db, "path", None)
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class _Pool:
    """Open connections to one database; a connection serves one query at a time.

    A file database whose file changed (replaced, rewritten, deleted) since a pooled
    connection was opened gets a new connection, as a fresh ``connect`` would; so does a
    server database whose connection no longer answers (a restart). Closing
    the pool closes the idle connections at once and the busy ones when their query ends.
    """

    def __init__(self, target: str):
        self.target = target
        self._idle: list[tuple[Database, tuple[int, int, int] | None]] = []
        self._lock = threading.Lock()
        self._closed = False

    def _open(self) -> tuple[Database, tuple[int, int, int] | None]:
        db = connect(self.target)
        return db, _stamp(db)

    def prime(self) -> Database:
        """Open the first connection (raises as :func:`sqlmend.db.connect` does) and read the schema (of a big
        catalogue, its listing: an item reads its relations, ``Database.scoped``)."""
        db, stamp = self._open()
        try:
            if not db.large():
                db.schema()
        except BaseException:
            db.close()
            raise
        self._idle.append((db, stamp))
        return db

    @contextmanager
    def acquire(self) -> Iterator[Database]:
        """A connection for one query; after :meth:`close` one is opened for it and closed after."""
        with self._lock:
            entry = self._idle.pop() if self._idle else None
        if entry is not None and (_stamp(entry[0]) != entry[1] or not entry[0].alive()):
            entry[0].close()  # the file changed under it (read the new one), or the server went away
            entry = None
        if entry is None:
            entry = self._open()
        try:
            yield entry[0]
        finally:
            with self._lock:
                if self._closed:
                    entry[0].close()
                else:
                    self._idle.append(entry)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for db, _ in idle:
            db.close()


# --- the corrector ------------------------------------------------------------


def database_name(target: str) -> str:
    """The name a database is known by (its repair memory's key): a file's stem, a URL's database.

    >>> database_name("dbs/concert_singer/concert_singer.sqlite"), database_name("postgresql://h/shop?x=1")
    ('concert_singer', 'shop')
    >>> database_name("mysql://reader:pw@127.0.0.1:3306/concert_singer")
    'concert_singer'
    """
    target = split_schemas(target)[0]
    low = target.lower()
    if low.startswith(("postgresql://", "postgres://")):
        return urlparse(target).path.strip("/") or "postgres"
    if low.startswith(MYSQL_SCHEMES):
        return urlparse(target).path.strip("/") or "mysql"
    if "://" in low:
        target = target.split("://", 1)[1]
    return Path(target).stem


def _model_specs(models: Models) -> list[str]:
    if models is None:
        return []
    if isinstance(models, str):
        return [models]
    if isinstance(models, Mapping):
        return [f"{stage}={endpoint}" for stage, endpoint in models.items()]
    return [str(m) for m in models]


def _config(stages: Sequence[str] | str | None, models: Models, memory_store: str | os.PathLike | None,
            options: Mapping[str, Mapping[str, Any]] | None, timeout: float | None, strategy: str | None,
            config: PipelineConfig | None, **fields: Any) -> PipelineConfig:
    update: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    if stages is not None:
        update["stages"] = [s.strip() for s in stages.split(",") if s.strip()] if isinstance(stages, str) \
            else list(stages)
    if models is not None and not callable(models):
        update["models"] = _model_specs(models)
    merged = {k: dict(v) for k, v in (config.options if config else {}).items()}
    for stage, opts in (options or {}).items():
        merged.setdefault(stage, {}).update(opts)
    if memory_store is not None:
        merged.setdefault("memory", {})["store"] = os.fspath(memory_store)
    if options is not None or memory_store is not None:
        update["options"] = merged
    if timeout is not None:
        update["timeout"] = timeout
    if strategy is not None:
        update["strategy"] = strategy
    base = (config or PipelineConfig()).model_dump()
    try:
        return PipelineConfig(**{**base, **update})
    except ValueError as exc:  # pydantic's ValidationError: an unknown stage, option or value
        raise ConfigError(str(exc)) from None


def check_config(config: PipelineConfig) -> PipelineConfig:
    """The configuration of :meth:`Corrector.check`: ``config``'s detecting stages only, the consensus
    stage reporting the vote without deciding."""
    options = {**config.options, "consensus": {**config.options.get("consensus", {}), "decide": False}}
    return config.model_copy(update={"stages": [s for s in config.stage_names() if s in CHECK_STAGES],
                                     "options": options})


Item = tuple[str, str] | tuple[str, str, str] | Mapping[str, Any]


def alternatives_of(value: Any) -> list[str]:
    """``alternatives=`` as a list of texts (None: none).

    Raises:
        ConfigError: a single string (a list is meant) or an item that is not text.
    """
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ConfigError(f"alternatives is a list of SQL texts, got {type(value).__name__}")
    bad = [i for i, v in enumerate(value) if not isinstance(v, str)]
    if bad:
        raise ConfigError(f"alternatives is a list of SQL texts; item {bad[0]} is {type(value[bad[0]]).__name__}")
    return list(value)


def _task_of(item: Item, index: int) -> dict[str, Any]:
    if isinstance(item, Mapping):
        unknown = set(item) - {"question", "sql", "evidence", "question_id", "alternatives"}
        if unknown or "question" not in item or "sql" not in item:
            raise ConfigError(f"item {index}: a dict takes question, sql and optionally evidence, "
                              f"question_id, alternatives (got keys {sorted(item)})")
        return {"question": item["question"], "sql": item["sql"], "evidence": item.get("evidence"),
                "question_id": str(item.get("question_id", index)),
                "alternatives": alternatives_of(item.get("alternatives"))}
    if isinstance(item, (tuple, list)) and len(item) in (2, 3):
        return {"question": item[0], "sql": item[1], "evidence": item[2] if len(item) == 3 else None,
                "question_id": str(index), "alternatives": []}
    raise ConfigError(f"item {index}: expected (question, sql), (question, sql, evidence) or a dict, "
                      f"got {type(item).__name__}")


#: :meth:`Corrector.schema_for`'s budget, in characters: at least, at most.
MIN_BUDGET, MAX_BUDGET = 256, 1 << 20
#: A catalogue of at most this many relations has its values read whole for :meth:`Corrector.schema_for`
#: (once per version, kept on disk relation by relation: a question's values are then found in any
#: relation); a bigger one has those of each question's best candidates read
#: (:data:`sqlmend.structure.needs.VALUE_CANDIDATES`).
VALUES_WHOLE_UP_TO = 2_000


@dataclass(frozen=True)
class _Linking:
    """What :meth:`Corrector.schema_for` reads once per database version."""

    version: tuple[str | None, str | None]
    index: needs.SchemaIndex
    values: ValueIndex | None
    large: bool


class Corrector:
    """Correct or check queries against one database, with stages, models and memory kept open.

    Args:
        db: the database: a SQLite path (or ``sqlite:///path``), a ``postgresql://`` URL,
            a DuckDB file (``duckdb:///path`` or a path ending in ``.duckdb``) or a ``mysql://`` URL.
            PostgreSQL and DuckDB are read in every schema the login may read (tables, views,
            materialized views, comments); a table outside the search path is named ``schema.name``.
        schemas: the schema filter: only these schemas are read (``["sales", "hr"]``; the same as a
            ``?schemas=sales,hr`` parameter of the URL); on MySQL, the databases to read (default: the
            URL's alone).
        stages: stages to run, in pipeline order (a list or ``"static,guard"``); default:
            every default stage (static, memory, search, refine, guard; ``detector`` is opt-in).
        models: model assignments ``STAGE=ENDPOINT`` (a string, list or mapping; ``"*=local"``
            for the embedded SmolLM2), or a resolver ``stage -> backend | None``; default:
            the llm configuration file and environment (stages without a model skip).
        memory_store: the repair memory of the memory stage: a folder written by
            ``sqlmend memory add/build --store``, or a ``postgresql://`` URL.
        options: per-stage settings, ``{stage: {key: value}}`` (``sqlmend correct --option``).
        timeout: seconds per SQL execution, in every stage (default 30).
        strategy: the refinement strategy (``errorllm`` or a baseline).
        config: a whole :class:`~sqlmend.pipeline.PipelineConfig` to start from; the
            arguments above override its fields.
        db_id: the database's name (memory is kept per name); default: the file's stem or
            the URL's database name.
        pipeline: stages already built (advanced: several Correctors, one per database,
            sharing one set of stages, models and memory); the settings above must then be left out.
        checker: the detecting stages for :meth:`check`, built (advanced, with ``pipeline``).
        allow_functions: functions a query may call beside the dialect's read-only list (your own
            pure functions, ``NAME`` or ``SCHEMA.NAME``).
        require_read_only_login: refuse a database whose login may do more than read (else it is
            warned about once, in the ``sqlmend`` logger, unless sqlmend's own lock holds: a SQLite
            file). :attr:`login` says what it may do.

    Raises:
        DatabaseNotFoundError: the database does not exist.
        DatabaseError: it cannot be opened.
        ConfigError: an unknown stage, option key or model endpoint; a login that may write under
            ``require_read_only_login``.
    """

    def __init__(self, db: str | os.PathLike, *, stages: Sequence[str] | str | None = None,
                 models: Models = None, memory_store: str | os.PathLike | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None, timeout: float | None = None,
                 strategy: str | None = None, config: PipelineConfig | None = None,
                 db_id: str | None = None, pipeline: Pipeline | None = None,
                 checker: Pipeline | None = None, allow_functions: Sequence[str] | None = None,
                 require_read_only_login: bool | None = None, schemas: Sequence[str] | str | None = None) -> None:
        self.target = with_schemas(os.fspath(db), schemas)
        self.db_id = db_id or database_name(self.target)
        if pipeline is not None:
            given = [stages, models, memory_store, options, timeout, strategy, config, allow_functions,
                     require_read_only_login]
            if any(v is not None for v in given):
                raise ConfigError("give either a built pipeline or settings, not both")
            self.pipeline = pipeline
        else:
            cfg = _config(stages, models, memory_store, options, timeout, strategy, config,
                          allow_functions=None if allow_functions is None else list(allow_functions),
                          require_read_only_login=require_read_only_login)
            self.pipeline = Pipeline(cfg, resolve=models if callable(models) else None)
        self.config = self.pipeline.config
        self.checker = checker or Pipeline(check_config(self.config), resolve=self.pipeline.resolve)
        self._pool = _Pool(self.target)
        self._linked: _Linking | None = None  # schema_for's index of this database (one version)
        self._vectors: OrderedDict[str, Any] = OrderedDict()  # schema_for's questions embedded
        self._linking_lock = threading.Lock()
        first = self._pool.prime()
        self.dialect = first.dialect
        #: what the database's login may do beyond reading (:mod:`sqlmend.db.account`)
        self.login: Login = check_login(first, self.db_id)
        try:
            admit([self.login], self.config.require_read_only_login)
        except ConfigError:
            self._pool.close()
            raise

    # --- one query -------------------------------------------------------------

    def _task(self, question: str, sql: str, evidence: str | None, question_id: str | None,
              alternatives: Sequence[str] | None = None) -> Task:
        return Task(question_id=question_id or "q", db_id=self.db_id, question=question, sql=sql,
                    evidence=evidence or "", db=self.target, alternatives=alternatives_of(alternatives))

    def _run(self, pipe: Pipeline, task: Task, cancel: threading.Event | None = None) -> Correction:
        try:
            with self._pool.acquire() as db:  # the database first, then the SQL (Pipeline.correct)
                return pipe.correct(task, db=db, cancel=cancel)
        except SqlmendError as exc:  # the file went away or cannot be opened any more
            return failed(task, exc)

    def correct(self, question: str, sql: str, evidence: str | None = None, *,
                question_id: str | None = None, alternatives: Sequence[str] | None = None,
                cancel: threading.Event | None = None) -> CorrectionResult:
        """Correct one query: the guarded rewrite, or the input when nothing was proven wrong.

        Args:
            question: the natural-language question.
            sql: the SQL the text-to-SQL system wrote.
            evidence: external knowledge (BIRD style), if any.
            question_id: an id carried into the record (default ``"q"``).
            alternatives: other answers to the question (other systems, prompts, samples): the
                consensus stage groups them by result, reports the vote and may replace ``sql`` by
                their answer under its rule. Untrusted like ``sql``: one that is not one read-only
                query is reported and never run.
            cancel: an event another thread sets when it stops waiting for the answer: the
                correction stops at its next unit of work (``error``: ``ItemCancelled: ...``).

        Returns:
            A :class:`CorrectionResult`; never raises for a problem of this item.

        Raises:
            ConfigError: ``alternatives`` is not a list of texts.
        """
        task = self._task(question, sql, evidence, question_id, alternatives)
        return CorrectionResult(self._run(self.pipeline, task, cancel), question, self.dialect)

    def check(self, question: str, sql: str, evidence: str | None = None, *,
              question_id: str | None = None, alternatives: Sequence[str] | None = None,
              cancel: threading.Event | None = None) -> CheckResult:
        """Find what is wrong with one query, rewriting nothing: the configuration's detecting
        stages only (static, memory, consensus with ``alternatives``, detector). Arguments as
        :meth:`correct`.

        Returns:
            A :class:`CheckResult`; never raises for a problem of this item.
        """
        task = self._task(question, sql, evidence, question_id, alternatives)
        return CheckResult(self._run(self.checker, task, cancel), question, self.dialect)

    def correct_many(self, items: Iterable[Item], workers: int = 4) -> list[CorrectionResult]:
        """Correct many queries on ``workers`` threads; results in the order of ``items``.

        Args:
            items: ``(question, sql)`` or ``(question, sql, evidence)`` tuples, or dicts with
                ``question``, ``sql`` and optionally ``evidence``, ``question_id`` (default:
                the item's index), ``alternatives``.
            workers: queries corrected at once (model calls stay limited by the
                configuration's ``model_concurrency``).

        Returns:
            One :class:`CorrectionResult` per item, in input order.

        Raises:
            ConfigError: an item of another shape (checked before any is run), ``workers < 1``.
        """
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        tasks = [_task_of(item, i) for i, item in enumerate(items)]

        def one(t: dict[str, Any]) -> CorrectionResult:
            try:
                return self.correct(t["question"], t["sql"], t["evidence"], question_id=t["question_id"],
                                    alternatives=t["alternatives"])
            except Exception as exc:  # a bug in one item must not lose the others
                task = Task(question_id=t["question_id"], db_id=self.db_id, question=t["question"], sql=t["sql"])
                return CorrectionResult(failed(task, exc), t["question"], self.dialect)

        if workers == 1 or len(tasks) <= 1:
            return [one(t) for t in tasks]
        with ThreadPoolExecutor(max_workers=min(workers, len(tasks)),
                                thread_name_prefix="sqlmend-correct") as pool:
            return list(pool.map(one, tasks))  # map keeps the input order

    # --- the database as the stages see it --------------------------------------

    def schema(self) -> Schema:
        """The database's tables, columns, types, keys and row counts, as every stage reads them."""
        with self._pool.acquire() as db:
            return db.schema()

    def value_index(self) -> ValueIndex:
        """The distinct text values of every column, as the static rules look literals up in them."""
        with self._pool.acquire() as db:
            return db.value_index()

    def relations(self) -> Schema:
        """The database's relations by name (keys, schemas, kinds, comments, foreign keys between them): the
        listing a big catalogue is read by (``Database.listing``), seen anew after a DDL change."""
        with self._pool.acquire() as db:
            db.refresh()
            return db.listing()

    def definitions(self, relations: Sequence[str]) -> list[Table]:
        """Some relations (keys of :meth:`relations`) whole: columns, types, keys, comments (no values, and
        no row counts on a big catalogue), each read once per catalogue version in this process."""
        with self._pool.acquire() as db:
            db.refresh()
            return db.definitions(list(relations))

    @contextmanager
    def reading(self, relations: Sequence[str]) -> Iterator[tuple[Schema, ValueIndex]]:
        """Some relations (keys of :meth:`relations`) whole, with their row counts, and the value index of
        their columns, read as an item reads its scope (``Database.scoped``): what costs follows the
        relations asked for, not the catalogue. The connection is held until the block ends."""
        with self._pool.acquire() as db:
            db.refresh()
            with db.scoped(list(relations)):
                yield db.schema(), db.value_index()

    # --- the schema a question needs ------------------------------------------------

    def schema_for(self, question: str, sql: str | None = None, budget: int = needs.BUDGET) -> QuestionSchema:
        """The relations and columns ``question`` needs, ranked, their join paths and the stored values its
        values match, written within ``budget`` characters (:mod:`sqlmend.structure.needs`): what a prompt
        or an agent reads of a database too big to send whole.

        Args:
            question: the natural-language question.
            sql: a draft query, untrusted and never run (a failing one too: the names it writes, invented
                ones included, are evidence of the names it meant).
            budget: characters of ``.text`` at most (256 to 1,048,576).

        Returns:
            A :class:`~sqlmend.structure.needs.QuestionSchema`: ``tables`` (as a query writes them),
            ``columns``, ``joins``, ``values``, ``text``.

        Raises:
            ConfigError: a question or SQL that is not text, a budget out of range.
        """
        if not isinstance(question, str) or (sql is not None and not isinstance(sql, str)):
            raise ConfigError("schema_for takes a question (text) and optionally a draft SQL (text)")
        if isinstance(budget, bool) or not isinstance(budget, int) or not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise ConfigError(f"budget is a number of characters from {MIN_BUDGET} to {MAX_BUDGET:,}, got {budget!r}")
        with self._pool.acquire() as db:
            db.refresh()
            linking = self._linking(db)
            vector = self._question_vector(question) if linking.index.embedded else None

            @contextmanager
            def scoped(keys: list[str]) -> Iterator[ValueIndex]:
                with db.scoped(keys):
                    yield db.value_index()

            found = needs.schema_for(linking.index, question, sql, budget, dialect=self.dialect,
                                     values=linking.values, read_values=None if linking.values is not None else scoped,
                                     question_vector=vector)
        found.embedded = vector is not None
        return found

    def _embedder(self) -> Any:
        """The backend of the ``embedder`` llm stage (None: none configured, or it does not load)."""
        try:
            return self.pipeline.resolve("embedder")
        except SqlmendError:
            return None

    def _question_vector(self, question: str) -> Any:
        """The question embedded (None: no embedder, or it failed), the last 256 questions kept (an agent asks
        one question again with a draft, or another budget)."""
        with self._linking_lock:
            found = self._vectors.get(question)
        if found is not None:
            return found
        backend = self._embedder()
        try:
            vector = None if backend is None else backend.embed([question], stage="embedder")[0]
        except SqlmendError:
            return None
        if vector is not None:
            with self._linking_lock:
                self._vectors[question] = vector
                while len(self._vectors) > 256:
                    self._vectors.popitem(last=False)
        return vector

    def _linking(self, db: Database) -> _Linking:
        """The catalogue's :class:`~sqlmend.structure.needs.SchemaIndex` and value index, read once per
        version of the database (:meth:`Database.keys`): a database of at most
        :data:`~sqlmend.db.scope.SCOPE_ABOVE` relations whole; a bigger catalogue's relations by
        :meth:`definitions`, and its values whole up to :data:`VALUES_WHOLE_UP_TO` relations (read once,
        kept on disk by relation), else those of each question's best candidates."""
        version = db.catalogue_version()
        with self._linking_lock:
            have = self._linked
            if have is not None and have.version == version:
                return have
            if db.large():
                listing = db.listing()
                keys = [t.name for t in listing.tables]
                reuse = have is not None and have.version[0] == version[0] and have.large
                index = have.index if reuse else needs.SchemaIndex(db.definitions(keys), embed=self._embed_texts())
                values = None
                if len(keys) <= VALUES_WHOLE_UP_TO:
                    with db.scoped(keys):
                        values = db.value_index()
            else:
                index = needs.SchemaIndex(db.schema().tables, embed=self._embed_texts())
                values = db.value_index()
            self._linked = _Linking(version, index, values, db.large())
            return self._linked

    def _embed_texts(self) -> Callable[[list[str]], Any] | None:
        backend = self._embedder()
        if backend is None:
            return None

        def embed(texts: list[str]) -> Any:
            try:
                return backend.embed(texts, stage="embedder")
            except SqlmendError:  # the embedder failed: the lexical evidence alone
                return None
        return embed

    # --- lifetime ----------------------------------------------------------------

    def close(self) -> None:
        """Close the database connections (a query running now finishes first). Safe to call twice."""
        self._pool.close()

    def __enter__(self) -> Corrector:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Corrector({self.target!r}, stages={self.config.stage_names()})"


class Correctors:
    """One :class:`Corrector` per database, all sharing one set of stages, models and memory.

    For code that meets many databases (the HTTP service, a batch worker): a
    database's Corrector is made on first use and kept; past ``size`` databases
    the least recently used one is closed.

    Args:
        pipeline: the stages of :meth:`Corrector.correct`.
        checker: those of :meth:`Corrector.check` (default: ``pipeline``'s detecting stages).
        size: Correctors kept open at most.
    """

    def __init__(self, pipeline: Pipeline, checker: Pipeline | None = None, size: int = 32):
        self.pipeline = pipeline
        self.checker = checker or Pipeline(check_config(pipeline.config), resolve=pipeline.resolve)
        self.size = size
        self._open: OrderedDict[tuple[str, str | None], Corrector] = OrderedDict()
        self._lock = threading.Lock()
        #: the login of every database opened so far (kept past its Corrector's eviction), by target
        self.logins: dict[str, Login] = {}

    def get(self, db: str | os.PathLike, db_id: str | None = None) -> Corrector:
        """The Corrector of ``db`` (``db_id``: its name, as :class:`Corrector` takes it).

        Raises:
            DatabaseNotFoundError, DatabaseError: as :class:`Corrector`.
        """
        key = (os.fspath(db), db_id)
        with self._lock:
            found = self._open.get(key)
            if found is not None:
                self._open.move_to_end(key)
                return found
        made = Corrector(key[0], db_id=db_id, pipeline=self.pipeline, checker=self.checker)
        with self._lock:
            self.logins[made.login.target] = made.login
            found = self._open.setdefault(key, made)  # another thread may have made one meanwhile
            self._open.move_to_end(key)
            evicted = [self._open.popitem(last=False)[1] for _ in range(len(self._open) - self.size)]
        if found is not made:
            evicted.append(made)
        for c in evicted:
            c.close()  # a query running on it now finishes first
        return found

    def login_list(self) -> list[Login]:
        """The logins of every database opened so far (what ``/health`` shows)."""
        with self._lock:
            return list(self.logins.values())

    def answer(self, task: Task, check: bool = False, cancel: threading.Event | None = None) -> Correction:
        """Correct (or check) one task: the one code path of every door for one query.

        The command line's single query (``sqlmend correct --db``, ``sqlmend check``), the HTTP
        service and a Ray worker all call this, so one input gets one answer and one error
        through each of them. The database is resolved first (``task.db``, else ``db_id`` under
        the pipeline's ``db_root``), then the SQL is looked at: an empty SQL on an unknown
        database is the unknown database, as :class:`Corrector` raises it at construction.

        Args:
            task: the query; its database is ``task.db`` or ``db_id`` under ``db_root``.
            check: run the detecting stages only (:meth:`Corrector.check`), rewriting nothing.
            cancel: set by a caller that stops waiting (the service's deadline): the item stops.

        Returns:
            The record ``Pipeline.correct(task)`` gives (the task's id, ``db_id`` and evidence
            kept). Never raises for a problem of the item: it is the record's ``error``
            (:func:`sqlmend.pipeline.error_text`).
        """
        try:
            corrector = self.get(database_for(task, self.pipeline.db_root), db_id=task.db_id)
            return corrector._run(self.checker if check else self.pipeline, task, cancel)
        except Exception as exc:  # a missing database, or a bug in one item: the item's error
            return failed(task, exc)

    def correct_task(self, task: Task) -> Correction:
        """Correct a whole task on its database's Corrector (made on first use, then kept open):
        :meth:`answer`, what a batch worker calls for each task of a prediction file, opening
        each database once instead of once per task."""
        return self.answer(task)

    def close(self) -> None:
        """Close every Corrector."""
        with self._lock:
            items, self._open = list(self._open.values()), OrderedDict()
        for c in items:
            c.close()


__all__ = ["CHECK_STAGES", "CheckResult", "CorrectionResult", "Corrector", "Correctors", "Item", "MAX_BUDGET",
           "MIN_BUDGET", "Models", "QuestionSchema", "VALUES_WHOLE_UP_TO",
           "alternatives_of", "check_answer", "check_config", "database_name", "explain_lines"]

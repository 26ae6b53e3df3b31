"""``sqlmend bench engines``: the Spider dev databases copied into another engine (MySQL/MariaDB,
PostgreSQL, DuckDB), and what sqlmend does there against what it does on the SQLite files.

Per engine, on throw-away copies (:mod:`sqlmend.testing.copydb`; a MariaDB or PostgreSQL server is
started for the run and stopped after it):

* **(a) golds**: each dev gold, transpiled from SQLite by sqlglot (SQLite's double-quoted strings
  written as strings, :func:`sqlmend.sql.transpile` with the schema), run on the engine: how many
  return SQLite's rows (BIRD's set rule, numbers compared to 4 decimals: MySQL's AVG is a DECIMAL),
  and why the others do not (the engine's error, grouped with names blanked, or "different rows");
* **(b) a prediction file**: each prediction transpiled the same way and corrected by the
  default pipeline on the engine; the prediction and its correction run there, scored against
  SQLite's gold rows. The same file corrected on SQLite (untranslated) is scored by the same rule.
  Fixes, regressions, and every question whose outcome differs between the engines.

The copies hold SQLite's values; MySQL's text columns compare as SQLite does
(``utf8mb4_nopad_bin``) unless ``collation=`` asks for another, e.g. the server default
``utf8mb4_general_ci`` (case-insensitive, trailing spaces ignored).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlmend import sql as sqlmod
from sqlmend.testing.copydb import MYSQL_COLLATION
from sqlmend.db import connect
from sqlmend.errors import SqlmendError

#: Engines this bench copies Spider into (sqlglot's dialect names).
ENGINES = ("mysql", "postgres", "duckdb")


def _norm(value: Any) -> Any:
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        return round(float(value), 4)
    return value


def same_rows(got: list[tuple], expected: list[tuple]) -> bool:
    """BIRD's set rule with numbers compared as floats to 4 decimals (Decimal, float and int alike).

    >>> same_rows([(Decimal("34.5000"),)], [(34.5,)]), same_rows([("France",)], [("france",)])
    (True, False)
    """
    return {tuple(map(_norm, r)) for r in got} == {tuple(map(_norm, r)) for r in expected}


_QUOTED = re.compile(r"(['`\"])[^'`\"]*\1")
_NUMBER = re.compile(r"\b\d+\b")


def reason(error: str) -> str:
    """An error message with its quoted names and numbers blanked, so that equal causes group.

    >>> reason("QueryError: MySQL: Unknown column 'France' in 'WHERE', line 1")
    "QueryError: MySQL: Unknown column '?' in '?', line N"
    """
    return _NUMBER.sub("N", _QUOTED.sub(r"\1?\1", error.split("\n", 1)[0]))[:120]


@contextmanager
def engine_targets(engine: str, sqlite_files: dict[str, Path], collation: str = MYSQL_COLLATION,
                   echo: Callable[[str], None] = lambda line: None) -> Iterator[dict[str, str]]:
    """Copy each SQLite file into a throw-away instance of ``engine``; yield ``{db_id: URL or path}``.

    Args:
        engine: one of :data:`ENGINES`.
        sqlite_files: ``{db_id: SQLite file}``.
        collation: MySQL's collation of text columns.
        echo: told what is started and loaded.

    Yields:
        The target of each database, read-only (a SELECT-only user on the servers).
    """
    if engine == "mysql":
        from sqlmend.testing.copydb import load_mysql
        from sqlmend.testing.mysqlserver import READER, MySQLServer

        with MySQLServer.start() as server:
            conn = server.connection()
            try:
                for db_id, path in sqlite_files.items():
                    load_mysql(path, conn, db_id.lower(), READER, collation=collation)
            finally:
                conn.close()
            echo(f"mysql: {len(sqlite_files)} databases loaded into a MariaDB server on port {server.port}")
            yield {db_id: server.url(db_id.lower()) for db_id in sqlite_files}
    elif engine == "postgres":
        from sqlmend.testing.copydb import load_postgres
        from sqlmend.testing.pgserver import READER as PG_READER
        from sqlmend.testing.pgserver import PgServer

        with PgServer.start() as server:
            for db_id, path in sqlite_files.items():
                name = db_id.lower()
                server.admin(f'CREATE DATABASE "{name}"')
                server.admin(f'GRANT CONNECT ON DATABASE "{name}" TO {PG_READER}')
                load_postgres(path, server.url(name, user="postgres"), PG_READER)
            echo(f"postgres: {len(sqlite_files)} databases loaded into a PostgreSQL server on port {server.port}")
            yield {db_id: server.url(db_id.lower()) for db_id in sqlite_files}
    elif engine == "duckdb":
        from sqlmend.testing.copydb import load_duckdb

        folder = Path(tempfile.mkdtemp(prefix="sqlmend-duckdb-"))
        try:
            for db_id, path in sqlite_files.items():
                load_duckdb(path, folder / f"{db_id}.duckdb")
            echo(f"duckdb: {len(sqlite_files)} databases copied into {folder}")
            yield {db_id: f"duckdb:///{folder / f'{db_id}.duckdb'}" for db_id in sqlite_files}
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    else:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")


@dataclass
class GoldCheck:
    """(a): the dev golds on one engine."""

    golds: int = 0
    match: int = 0
    transpile_error: int = 0
    engine_error: int = 0
    different_rows: int = 0
    reasons: list[tuple[str, int]] = field(default_factory=list)  # the commonest causes, with counts
    failures: list[dict[str, Any]] = field(default_factory=list)  # every gold that did not match, and why


@dataclass
class FileCheck:
    """(b): one prediction file corrected on SQLite and on the engine, scored against SQLite's gold rows."""

    pred: str
    questions: int = 0
    sqlite: dict[str, int] = field(default_factory=dict)  # before, after, fixed, regressed, changed
    engine: dict[str, int] = field(default_factory=dict)
    differ: list[tuple[str, int]] = field(default_factory=list)  # the patterns of differing questions
    questions_differing: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class EngineReport:
    engine: str
    version: str = ""
    collation: str = ""
    databases: int = 0
    golds: GoldCheck = field(default_factory=GoldCheck)
    files: list[FileCheck] = field(default_factory=list)


class Runner:
    """Runs queries on databases it opens once each (closed by :meth:`close`)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._open: dict[str, Any] = {}

    def rows(self, target: str | Path, text: str) -> tuple[list[tuple] | None, str]:
        """Rows of ``text`` on a database, or None and the error."""
        key = str(target)
        try:
            if key not in self._open or not self._open[key].alive():
                self._open[key] = connect(key)
            return self._open[key].execute(text, timeout=self.timeout, max_rows=100_000).rows, ""
        except SqlmendError as e:
            return None, f"{type(e).__name__}: {e}"

    def outcome(self, target: str | Path, text: str, gold: list[tuple]) -> str:
        """``right`` / ``wrong`` against the gold's rows, or ``error``."""
        rows, _ = self.rows(target, text)
        return "error" if rows is None else "right" if same_rows(rows, gold) else "wrong"

    def close(self) -> None:
        for db in self._open.values():
            db.close()
        self._open.clear()


def _tally(before: list[str], after: list[str], changed: list[bool]) -> dict[str, int]:
    pairs = list(zip(before, after))
    return {"before": before.count("right"), "after": after.count("right"),
            "fixed": sum(b != "right" and a == "right" for b, a in pairs),
            "regressed": sum(b == "right" and a != "right" for b, a in pairs),
            "changed": sum(changed)}


def bench_engine(engine: str, dataset: Any, preds: list[Path], timeout: float = 30.0,
                 collation: str = MYSQL_COLLATION, workers: int = 2, limit: int | None = None,
                 echo: Callable[[str], None] = lambda line: None) -> EngineReport:
    """Measure (a) and (b) on one engine (see the module doc).

    Args:
        engine: one of :data:`ENGINES`.
        dataset: Spider dev (:func:`sqlmend.data.datasets.load_dataset`).
        preds: prediction files for (b) (none: (a) only).
        timeout: seconds per query.
        collation: MySQL's text collation.
        workers: tasks corrected at once.
        limit: only the first N questions (a quick look).
        echo: progress lines.

    Returns:
        The report.
    """
    from sqlmend.data.predictions import load_predictions
    from sqlmend.pipeline import PipelineConfig, correct_batch

    tasks = [t for t in dataset.tasks if dataset.db_path(t.db_id) is not None][:limit]
    files = {t.db_id: dataset.db_path(t.db_id) for t in tasks}
    dialect = sqlmod.dialects.resolve(engine)
    report = EngineReport(engine=engine, collation=collation if engine == "mysql" else "", databases=len(files))
    schemas = {}
    for db_id, path in files.items():
        with connect(path) as db:
            schemas[db_id] = db.schema()

    def carry(text: str, db_id: str) -> str:
        return sqlmod.transpile(text, read="sqlite", write=dialect, schema=schemas[db_id])

    run = Runner(timeout)
    with engine_targets(engine, files, collation=collation, echo=echo) as targets:
        with connect(next(iter(targets.values()))) as db:
            version = getattr(db, "version", "") or str(db._query("SELECT version()")[0][0])
            report.version = " ".join(version.split()[:2])  # "PostgreSQL 15.10", "v2.0.1"
        gold_rows: dict[str, list[tuple] | None] = {}
        reasons: Counter = Counter()
        g = report.golds
        for task in tasks:
            rows, error = run.rows(files[task.db_id], task.gold or "")
            gold_rows[task.question_id] = rows
            if rows is None:
                continue
            g.golds += 1
            try:
                text = carry(task.gold or "", task.db_id)
            except SqlmendError as e:
                g.transpile_error += 1
                reasons[reason(f"transpile: {type(e).__name__}: {e}")] += 1
                g.failures.append({"question_id": task.question_id, "gold": task.gold, "why": str(e)[:300]})
                continue
            got, error = run.rows(targets[task.db_id], text)
            if got is not None and same_rows(got, rows):
                g.match += 1
                continue
            if got is None:
                g.engine_error += 1
                reasons[reason(error)] += 1
            else:
                g.different_rows += 1
                reasons["different rows"] += 1
                error = f"different rows: {repr(got[:3])[:120]} for SQLite's {repr(rows[:3])[:120]}"
            g.failures.append({"question_id": task.question_id, "gold": task.gold, "sql": text, "why": error[:300]})
        g.reasons = reasons.most_common(8)
        echo(f"{engine}: {g.match} of {g.golds} golds return SQLite's rows")

        config = PipelineConfig(workers=workers, timeout=timeout)
        for path in preds:
            pred = load_predictions(path, dataset)
            mine = [replace(t, sql=pred.get(t.question_id, "")) for t in tasks]
            carried: list[Any] = []
            for t in mine:
                try:
                    text = carry(t.sql, t.db_id)
                except SqlmendError:
                    text = t.sql  # as written: the engine says what it makes of it
                carried.append(replace(t, sql=text, db=targets[t.db_id]))
            echo(f"{engine}: correcting {path.name} on SQLite, then on {engine}")
            on_sqlite = correct_batch(mine, config, progress=False, db_root=dataset.db_root)
            on_engine = correct_batch(carried, config, progress=False)
            report.files.append(_compare(path.stem, mine, carried, on_sqlite, on_engine, files, targets,
                                         gold_rows, run))
        run.close()
    return report


def _compare(name: str, mine: list, carried: list, on_sqlite: list, on_engine: list, files: dict,
             targets: dict, gold_rows: dict, run: Runner) -> FileCheck:
    check = FileCheck(pred=name)
    lite_b, lite_a, eng_b, eng_a, lite_c, eng_c = [], [], [], [], [], []
    patterns: Counter = Counter()
    for t, c, lc, ec in zip(mine, carried, on_sqlite, on_engine):
        gold = gold_rows.get(t.question_id)
        if gold is None:
            continue
        check.questions += 1
        lb = run.outcome(files[t.db_id], t.sql, gold)
        la = lb if lc.sql == t.sql else run.outcome(files[t.db_id], lc.sql, gold)
        eb_rows, eb_error = run.rows(targets[t.db_id], c.sql)
        eb = "error" if eb_rows is None else "right" if same_rows(eb_rows, gold) else "wrong"
        ea = eb if ec.sql == c.sql else run.outcome(targets[t.db_id], ec.sql, gold)
        lite_b.append(lb), lite_a.append(la), eng_b.append(eb), eng_a.append(ea)
        lite_c.append(lc.sql != t.sql), eng_c.append(ec.sql != c.sql)
        if (lb, la) != (eb, ea):
            pattern = f"SQLite {lb}->{la}, engine {eb}->{ea}"
            patterns[pattern] += 1
            check.questions_differing.append({
                "question_id": t.question_id, "db_id": t.db_id, "pattern": pattern,
                "sqlite": {"sql": t.sql, "corrected": lc.sql, "findings": [f.code for f in lc.findings]},
                "engine": {"sql": c.sql, "corrected": ec.sql, "findings": [f.code for f in ec.findings],
                           "error": eb_error[:300]}})
    check.sqlite = _tally(lite_b, lite_a, lite_c)
    check.engine = _tally(eng_b, eng_a, eng_c)
    check.differ = patterns.most_common()
    return check


def markdown(reports: list[EngineReport]) -> str:
    """The reports as Markdown tables: (a) per engine, (b) per engine and file."""
    lines = ["| engine | golds | same rows as SQLite | transpile error | engine error | other rows |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in reports:
        g = r.golds
        label = f"{r.engine} ({r.version}{', ' + r.collation if r.collation else ''})"
        lines.append(f"| {label} | {g.golds} | {g.match} | {g.transpile_error} | {g.engine_error} | "
                     f"{g.different_rows} |")
    for r in reports:
        lines += ["", f"{r.engine}: commonest causes: " + "; ".join(f"{why} ({n})" for why, n in r.golds.reasons)]
    if any(r.files for r in reports):
        lines += ["", "| engine | file | questions | right before → after (SQLite) | fixed / regressed (SQLite) | "
                      "right before → after (engine) | fixed / regressed (engine) | differ |",
                  "| --- | --- | ---: | --- | --- | --- | --- | ---: |"]
        for r in reports:
            for f in r.files:
                s, e = f.sqlite, f.engine
                lines.append(f"| {r.engine} | {f.pred} | {f.questions} | {s['before']} → {s['after']} | "
                             f"{s['fixed']} / {s['regressed']} | {e['before']} → {e['after']} | "
                             f"{e['fixed']} / {e['regressed']} | {len(f.questions_differing)} |")
        for r in reports:
            for f in r.files:
                lines += ["", f"{r.engine}, {f.pred}: " + "; ".join(f"{p} ({n})" for p, n in f.differ)]
    return "\n".join(lines) + "\n"


def write(reports: list[EngineReport], out: Path) -> None:
    """``report.json`` (every differing question) and ``report.md`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps([asdict(r) for r in reports], indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(reports), encoding="utf-8")

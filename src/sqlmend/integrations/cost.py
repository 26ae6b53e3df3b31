"""What sqlmend adds to one call of each framework: the measurement docs/integrations.md reports.

For every question of a prediction file whose database exists, each framework's own way of running the SQL
(its baseline) and sqlmend's stand-in for it run the same SQL, one after the other, and the difference is
what sqlmend added to that call (its correction, and the read-only run with its bounds), in wall-clock time
and in CPU time (the process's, every thread: what a busy machine's other work does not inflate)::

    python -m sqlmend.integrations.cost --pred ../shared/data/predictions/spider-dev/gpt-4_zero-shot.sql

| framework | baseline | with sqlmend |
| --- | --- | --- |
| ``langchain`` | ``QuerySQLDatabaseTool`` (``sql_db_query``; langchain-community) | :class:`~.langchain.SqlmendQueryTool` |
| ``llamaindex`` | ``SQLDatabase.run_sql`` (what the engine calls) | :class:`~.llamaindex.SqlmendSQLDatabase` ``.run_sql`` |
| ``vanna`` | ``SqliteRunner.run_sql`` | :class:`~.vanna.SqlmendRunner` ``.run_sql`` |
| ``run_sql`` | sqlmend's read-only ``execute``, no correction | :func:`sqlmend.mcpserver.tools.run_query` (MCP ``run_sql`` less its transport) |

Every call runs on a copy of the database made for the measurement (the baselines open their files for
writing), with sqlmend's default stages and no model. Each database is opened and warmed once before its
first timed call (schema, value index, the frameworks' reflection): the numbers are a call's, not a start's.
A framework that is not installed is left out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from sqlmend.api import Corrector
from sqlmend.data import load_dataset, load_predictions
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.mcpserver import tools
from sqlmend.progress import bar

#: A call: ``(sql, question) -> anything`` (an error counts as the call's answer).
Call = Callable[[str, str], Any]


@dataclass
class Timing:
    """One framework's calls, item by item: wall-clock and CPU seconds of its baseline and of sqlmend's."""

    baseline: list[float] = field(default_factory=list)
    sqlmend: list[float] = field(default_factory=list)
    baseline_cpu: list[float] = field(default_factory=list)
    sqlmend_cpu: list[float] = field(default_factory=list)

    def add(self, baseline: tuple[float, float], sqlmend: tuple[float, float]) -> None:
        self.baseline.append(baseline[0]), self.baseline_cpu.append(baseline[1])
        self.sqlmend.append(sqlmend[0]), self.sqlmend_cpu.append(sqlmend[1])

    def row(self, name: str) -> list[str]:
        added = [s - b for s, b in zip(self.sqlmend, self.baseline, strict=True)]
        added_cpu = [s - b for s, b in zip(self.sqlmend_cpu, self.baseline_cpu, strict=True)]

        def ms(values: list[float], q: float | None = None) -> str:
            v = statistics.median(values) if q is None else statistics.quantiles(values, n=100)[int(q) - 1]
            return f"{v * 1000:.1f}"

        return [name, str(len(added)), ms(self.baseline), ms(self.sqlmend), ms(added), ms(added, 90), ms(added, 99),
                f"{statistics.mean(added) * 1000:.1f}", ms(added_cpu), f"{statistics.mean(added_cpu) * 1000:.1f}"]


def _timed(call: Call, sql: str, question: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds (the process's, every thread) of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    try:
        call(sql, question)
    except Exception:  # noqa: BLE001  (a query the engine refuses: its error is the call's answer)
        pass
    return time.perf_counter() - start, time.process_time() - cpu


def _calls(fixer: Corrector, path: Path) -> dict[str, tuple[Call, Call]]:
    """Each framework's (baseline, sqlmend) calls on one database; the frameworks installed only."""
    out: dict[str, tuple[Call, Call]] = {}
    uri = f"sqlite:///file:{path}?uri=true"
    try:
        warnings.filterwarnings("ignore", message=".*langchain-community.*", category=DeprecationWarning)
        from langchain_community.tools.sql_database.tool import QuerySQLDatabaseTool
        from langchain_community.utilities.sql_database import SQLDatabase as LangChainDatabase

        from sqlmend.integrations.langchain import SqlmendQueryTool

        theirs, ours = QuerySQLDatabaseTool(db=LangChainDatabase.from_uri(uri)), SqlmendQueryTool(db=fixer)
        out["langchain"] = (lambda sql, q: theirs.invoke({"query": sql}),
                            lambda sql, q: ours.invoke({"query": sql, "question": q}))
    except ImportError:
        pass
    try:
        from llama_index.core import SQLDatabase as LlamaDatabase
        from sqlalchemy import create_engine

        from sqlmend.integrations.llamaindex import QUESTION, SqlmendSQLDatabase

        plain, mended = LlamaDatabase(create_engine(uri)), SqlmendSQLDatabase(fixer)

        def llama(sql: str, q: str) -> Any:
            QUESTION.set(q)  # as the engine's QueryStartEvent sets it
            return mended.run_sql(sql)

        out["llamaindex"] = (lambda sql, q: plain.run_sql(sql), llama)
    except ImportError:
        pass
    try:
        from vanna import User
        from vanna.capabilities.sql_runner import RunSqlToolArgs
        from vanna.core.tool import ToolContext
        from vanna.integrations.local.agent_memory import DemoAgentMemory
        from vanna.integrations.sqlite import SqliteRunner

        from sqlmend.integrations.vanna import SqlmendRunner

        sqlite_runner, runner = SqliteRunner(str(path)), SqlmendRunner(fixer)

        def context(q: str) -> Any:
            return ToolContext(user=User(id="u"), conversation_id="c", request_id="r", agent_memory=DemoAgentMemory(),
                               metadata={"question": q})

        out["vanna"] = (lambda sql, q: asyncio.run(sqlite_runner.run_sql(RunSqlToolArgs(sql=sql), context(q))),
                        lambda sql, q: asyncio.run(runner.run_sql(RunSqlToolArgs(sql=sql), context(q))))
    except ImportError:
        pass

    def execute(sql: str, q: str) -> Any:
        with connect(fixer.target) as db:
            return db.execute(sql, timeout=fixer.config.timeout, max_rows=100)

    out["run_sql"] = (execute, lambda sql, q: tools.run_query(fixer, sql, q))
    return out


def measure(pred: str | Path, dataset: str = "spider-dev", limit: int | None = None,
            progress: bool = True) -> dict[str, Timing]:
    """Time each framework's baseline and sqlmend's call on every question of ``pred`` with a database.

    Args:
        pred: a prediction file of ``dataset`` (line i answers question i).
        dataset: the dataset's name (``sqlmend.data.load_dataset``).
        limit: the first ``limit`` questions only.
        progress: show a progress bar.

    Returns:
        ``{framework: Timing}``.
    """
    data = load_dataset(dataset)
    predictions = load_predictions(pred, data)
    tasks = [t for t in data.tasks if data.db_path(t.db_id) is not None][:limit]
    timings: dict[str, Timing] = {}
    opened: dict[str, tuple[Corrector, dict[str, tuple[Call, Call]]]] = {}
    with tempfile.TemporaryDirectory(prefix="sqlmend-cost-") as folder:
        try:
            for task in bar(tasks, desc="cost", unit="q", disable=not progress):
                if task.db_id not in opened:
                    path = Path(folder) / f"{task.db_id}.sqlite"
                    shutil.copyfile(data.db_path(task.db_id), path)
                    fixer = Corrector(path)
                    fixer.value_index()  # warm: the value index, then each call once (models, reflection)
                    calls = _calls(fixer, path)
                    for baseline, mended in calls.values():
                        _timed(baseline, "SELECT 1", ""), _timed(mended, "SELECT 1", "")
                    opened[task.db_id] = (fixer, calls)
                sql = predictions.get(task.question_id, "")
                for name, (baseline, mended) in opened[task.db_id][1].items():
                    timings.setdefault(name, Timing()).add(_timed(baseline, sql, task.question),
                                                           _timed(mended, sql, task.question))
        finally:
            for fixer, _ in opened.values():
                fixer.close()
    return timings


def table(timings: dict[str, Timing]) -> str:
    """The timings as a Markdown table, in milliseconds (wall clock, then the added CPU time)."""
    head = ["framework", "calls", "baseline median", "with sqlmend median", "added median", "added p90",
            "added p99", "added mean", "added CPU median", "added CPU mean"]
    rows = [head, ["---"] * len(head)] + [t.row(name) for name, t in timings.items()]
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def main(argv: list[str] | None = None) -> int:
    """``python -m sqlmend.integrations.cost``: print the table of :func:`measure`."""
    parser = argparse.ArgumentParser(prog="python -m sqlmend.integrations.cost", description=__doc__.splitlines()[0])
    parser.add_argument("--pred", required=True, help="a prediction file (line i answers question i)")
    parser.add_argument("--dataset", default="spider-dev", help="its dataset (default spider-dev)")
    parser.add_argument("--limit", type=int, default=None, help="the first N questions only")
    args = parser.parse_args(argv)
    try:
        timings = measure(args.pred, args.dataset, args.limit, progress=sys.stderr.isatty())
    except SqlmendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"{date.today().isoformat()}, {Path(args.pred).name}, milliseconds per call; {os.cpu_count()} cores, "
          f"load average at the end {load}")
    print(table(timings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

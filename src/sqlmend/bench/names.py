"""``sqlmend bench names``: gold queries with names not in the schema, through the default correction.

Seeded variants of a dataset's golds (:mod:`sqlmend.synth.names`): one or two names per query, tables and
columns, written wrong in one kind (plural, camelCase, underscores, a dropped or added prefix, ``id``
dropped, a keyword for a table, a one-letter edit), every occurrence renamed. A variant counts only when
the engine refuses it (the gold runs and the variant does not). Each one is corrected by the default
pipeline (static rules, repair search, guard) and its output is

* **restored**: it returns the gold's rows and drops no clause of the gold
  (:func:`sqlmend.sql.diff.dropped_clauses`);
* **gold rows, clause dropped**: the gold's rows, but a clause of the gold is missing (right rows for a
  wrong reason);
* **still failing**: the engine still refuses it (the input kept: the error stays visible);
* **wrong rows**: it runs and returns other rows (the silent wrong answer the second law is about).

On PostgreSQL a seeded sample of the databases (and, for a kind the sample offers none of, one database
that does) is copied into a throw-away server (as ``bench engines`` does,
:func:`sqlmend.bench.engines.engine_targets`); the gold is transpiled from SQLite
(:func:`sqlmend.sql.transpile`) and renamed there as on SQLite (:func:`sqlmend.synth.names.renamed`), a
gold counts only when it returns SQLite's rows there, a variant only when PostgreSQL refuses it too, and
rows are compared with SQLite's gold rows.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable

from sqlmend import sql as sqlmod
from sqlmend.bench.engines import Runner, engine_targets, same_rows
from sqlmend.data.sampling import seeded_sample
from sqlmend.db import connect
from sqlmend.errors import QueryTimeout, SqlmendError
from sqlmend.pipeline import PipelineConfig, correct_batch
from sqlmend.sql.diff import dropped_clauses
from sqlmend.synth.names import KINDS, renamed, variants
from sqlmend.types import Task

#: The outcomes, in the report's order.
OUTCOMES = ("restored", "clause_dropped", "failing", "wrong")
#: The engines it runs on.
ENGINES = ("sqlite", "postgres")


@dataclass
class Case:
    """One variant: the task (its SQL the variant), its kind and how many names it renames."""

    task: Task
    kind: str
    count: int
    names: tuple[tuple[str, str], ...]
    gold: list[tuple]  # SQLite's gold rows
    gold_sql: str  # the gold as run on the engine


def _refused(db: Any, text: str, timeout: float) -> bool:
    try:
        db.execute(text, timeout=timeout, max_rows=1)
    except QueryTimeout:
        return False
    except SqlmendError:
        return True
    return False


def _single_quoted(gold: str, schema: Any) -> str:
    """The gold with SQLite's double-quoted strings written as strings (``name = "Google"``), so that a
    variant means the same on another engine once its names are restored."""
    try:
        return sqlmod.transpile(gold, read="sqlite", write="sqlite", schema=schema)
    except SqlmendError:
        return gold


def make_cases(ds: Any, per_kind: int, seed: int = 0, counts: tuple[int, ...] = (1, 2), timeout: float = 10.0,
               db_ids: set[str] | None = None, kinds: tuple[str, ...] = KINDS) -> list[Case]:
    """Up to ``per_kind`` failing variants per kind and name count, from the golds of ``ds`` taken in a
    seeded order (on ``db_ids`` only, when given); each question gives at most one variant per kind and
    count."""
    tasks = [t for t in ds.tasks if t.gold and ds.db_path(t.db_id) is not None
             and (db_ids is None or t.db_id in db_ids)]
    out: list[Case] = []
    gold_rows: dict[str, list[tuple] | None] = {}
    with ds.databases() as conn:
        for kind in kinds:
            for count in counts:
                found = 0
                order = list(tasks)
                random.Random(f"{seed}:{kind}:{count}").shuffle(order)
                for task in order:
                    if found >= per_kind:
                        break
                    db = conn(task.db_id)
                    rng = random.Random(f"{seed}:{task.question_id}:{kind}:{count}")
                    made = variants(_single_quoted(task.gold, db.schema()), db.schema(), kind, count, rng)
                    if not made or not _refused(db, made[0].sql, timeout):
                        continue
                    if task.question_id not in gold_rows:
                        try:
                            gold_rows[task.question_id] = db.execute(task.gold, timeout=timeout,
                                                                     max_rows=100_000).rows
                        except SqlmendError:
                            gold_rows[task.question_id] = None
                    if gold_rows[task.question_id] is None:
                        continue
                    v = made[0]
                    qid = f"{task.question_id}:{kind}:{count}"
                    out.append(Case(replace(task, question_id=qid, sql=v.sql), kind, count, v.names,
                                    gold_rows[task.question_id], task.gold))
                    found += 1
    return out


def _carry(cases: list[Case], ds: Any, targets: dict[str, str], run: Runner, timeout: float) -> list[Case]:
    """The cases as PostgreSQL sees them: gold and variant transpiled; kept when the gold returns SQLite's
    rows there and PostgreSQL refuses the variant."""
    schemas: dict[str, Any] = {}
    out = []
    for c in cases:
        db_id = c.task.db_id
        if db_id not in targets:
            continue
        if db_id not in schemas:
            with connect(ds.db_path(db_id)) as db:
                schemas[db_id] = db.schema()
        try:  # the gold carried over, then renamed there as on SQLite (a keyword table does not transpile)
            gold = sqlmod.transpile(c.gold_sql, read="sqlite", write="postgres", schema=schemas[db_id])
            text = renamed(gold, schemas[db_id], c.names, "postgres")
        except SqlmendError:
            continue
        rows, _ = run.rows(targets[db_id], gold)
        if rows is None or not same_rows(rows, c.gold):
            continue
        bad, _ = run.rows(targets[db_id], text)
        if bad is not None:
            continue
        out.append(replace(c, task=replace(c.task, sql=text, db=targets[db_id]), gold_sql=gold))
    return out


def _outcome(c: Case, output: str, target: Any, run: Runner, dialect: str) -> str:
    rows, _ = run.rows(target, output)
    if rows is None:
        return "failing"
    if not same_rows(rows, c.gold):
        return "wrong"
    return "clause_dropped" if dropped_clauses(c.gold_sql, output, dialect) else "restored"


def _tally(cases: list[Case], outputs: list[Any], targets: Callable[[Case], Any], run: Runner,
           dialect: str) -> dict[str, Any]:
    table: dict[str, dict[str, Counter]] = {}
    examples: list[dict[str, Any]] = []
    by_stage: Counter = Counter()
    for c, corr in zip(cases, outputs):
        outcome = "failing" if corr.error else _outcome(c, corr.sql, targets(c), run, dialect)
        cell = table.setdefault(c.kind, {}).setdefault(str(c.count), Counter())
        cell["cases"] += 1
        cell[outcome] += 1
        if outcome == "restored":
            stage = next((t.stage for t in corr.stages if t.candidate and t.verdict and t.verdict.accepted
                          and t.stage != "guard"), "?")
            by_stage[stage] += 1
        if outcome != "restored" and sum(e["outcome"] == outcome for e in examples) < 20:
            examples.append({"question_id": c.task.question_id, "kind": c.kind, "names": c.names,
                             "outcome": outcome, "variant": c.task.sql, "output": corr.sql, "gold": c.gold_sql,
                             "error": corr.error})
    total: Counter = Counter()
    per_count: dict[str, Counter] = {}
    for kind in table.values():
        for count, cell in kind.items():
            total.update(cell)
            per_count.setdefault(count, Counter()).update(cell)
    return {"kinds": {k: {n: dict(v) for n, v in table[k].items()} for k in KINDS if k in table},
            "counts": {n: dict(v) for n, v in sorted(per_count.items())}, "all": dict(total),
            "restored_by": dict(by_stage), "examples": examples}


def _databases(ds: Any, cases: list[Case], n: int, seed: int) -> set[str]:
    """A seeded sample of ``n`` databases, and for a kind none of them takes, the first database (by id)
    whose golds take it, so that every kind the dataset offers is measured."""
    ids = sorted({t.db_id for t in ds.tasks if ds.db_path(t.db_id) is not None})
    chosen = set(seeded_sample(ids, n, seed))
    for kind in KINDS:
        holders = sorted({c.task.db_id for c in cases if c.kind == kind})
        if holders and not chosen & set(holders):
            chosen.add(holders[0])
    return chosen


def bench_names(ds: Any, engines: tuple[str, ...] = ("sqlite",), per_kind: int = 60, seed: int = 0,
                workers: int = 2, timeout: float = 10.0, pg_databases: int = 6,
                echo: Callable[[str], None] = lambda line: None, kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """Measure (see the module doc) on each of ``engines``.

    Args:
        ds: the dataset (Spider train to develop on, Spider dev to report).
        engines: ``sqlite`` and/or ``postgres``.
        per_kind: variants per kind and name count (fewer where the golds offer fewer).
        seed: the seed of the variants and of PostgreSQL's databases.
        workers: tasks corrected at once.
        timeout: seconds per query.
        pg_databases: databases copied into PostgreSQL (a seeded sample, plus one for each kind it misses).
        echo: progress lines.

    Returns:
        ``{"dataset", "seed", "per_kind", engine: {"cases", "kinds", "counts", "all", ...}}``.
    """
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engine {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    config = PipelineConfig(workers=workers, timeout=timeout)
    run = Runner(timeout)
    report: dict[str, Any] = {"dataset": ds.name, "seed": seed, "per_kind": per_kind, "asked": list(kinds)}
    try:
        cases = make_cases(ds, per_kind, seed, timeout=timeout, kinds=kinds)
        if "sqlite" in engines:
            echo(f"sqlite: {len(cases)} variants; correcting")
            outputs = correct_batch([c.task for c in cases], config, progress=False, db_root=ds.db_root)
            report["sqlite"] = {"databases": len({c.task.db_id for c in cases}),
                                **_tally(cases, outputs, lambda c: ds.db_path(c.task.db_id), run, "sqlite")}
        if "postgres" in engines:
            chosen = _databases(ds, cases, pg_databases, seed)
            cases = make_cases(ds, per_kind, seed, timeout=timeout, db_ids=chosen, kinds=kinds)
            with engine_targets("postgres", {d: ds.db_path(d) for d in sorted(chosen)}, echo=echo) as targets:
                carried = _carry(cases, ds, targets, run, timeout)
                echo(f"postgres: {len(carried)} variants of {len(cases)} carried over; correcting")
                outputs = correct_batch([c.task for c in carried], config, progress=False)
                report["postgres"] = {"databases": len(chosen), "database_ids": sorted(chosen),
                                      **_tally(carried, outputs, lambda c: c.task.db, run, "postgres")}
    finally:
        run.close()
    return report


def _pct(n: int, d: int) -> str:
    return f"{n} ({100 * n / d:.1f}%)" if d else "0"


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: per engine, a row per kind and name count, then the totals."""
    lines: list[str] = []
    for engine in ENGINES:
        r = report.get(engine)
        if not r:
            continue
        lines += [f"{engine} ({r['databases']} databases of {report['dataset']}, {r['all'].get('cases', 0)} "
                  f"variants, seed {report['seed']}):", "",
                  "| kind | names | variants | restored | gold rows, clause dropped | still failing | wrong rows |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        rows = [(k, n, c) for k, per in r["kinds"].items() for n, c in per.items()]
        rows += [("all", n, c) for n, c in r["counts"].items()] + [("all", "1-2", r["all"])]
        for kind, n, c in rows:
            d = c.get("cases", 0)
            lines.append(f"| {kind} | {n} | {d} | " + " | ".join(_pct(c.get(o, 0), d) for o in OUTCOMES) + " |")
        missing = [k for k in report.get("asked", KINDS) if k not in r["kinds"]]
        if missing:
            lines += ["", f"No variant of kind {', '.join(missing)}: no gold name takes it on these databases."]
        lines.append("")
    return "\n".join(lines)

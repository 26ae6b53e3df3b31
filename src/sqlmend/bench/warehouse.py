"""``sqlmend bench warehouse``: sqlmend on a warehouse of many schemas and on schemas of thousands of tables.

**The warehouse.** Every Spider database (163) loaded as a schema of one database (:func:`warehouse`):
PostgreSQL (a throw-away server, a reader login granted every schema) or DuckDB (one file); 838 relations,
4,018 columns, the size of the SpiderUnion benchmark. The same name lives in several schemas (``people``
in five, ``singer`` in two). Each gold of a Spider split is carried over (transpiled from SQLite) and
written two ways:

* **with its schema** (``concert_singer.singer``): what a system that knows the warehouse writes. It must
  come back unchanged (any change is listed);
* **without it** (``singer``): what a model that does not know the schema writes. The engine refuses it
  (no schema of the search path holds it). It comes back **restored** (the gold's rows, no clause of the
  gold dropped), **failing** (kept: the error stays visible), or with **wrong rows** (a silent wrong
  answer: a name read from another schema).

A gold counts when, with its schema, it runs on the warehouse (some Spider golds do not run on
PostgreSQL: a GROUP BY PostgreSQL refuses, text compared with a number). The name variants of ``sqlmend
bench names`` written by spelling (:data:`sqlmend.synth.names.SPELLING_KINDS`: a plural, a camelCase, a
dropped prefix...) are made on SQLite, written without their schema on the warehouse, and scored the same
way.

**Size.** A generated schema of N tables x 8 columns, 40 rows each (:func:`generate`: SQLite, one schema;
PostgreSQL, the tables spread over ten schemas), for each N (10^2 to 10^4): in a fresh process, the
seconds to open it and correct a first query (a value in another case), then a query with a column name
not in the schema (``status`` for ``state``), and the process's peak memory; once with an empty cache
(cold) and once with the cache the first left (warm). The report gives each size's ratio to the smallest.

Develop on Spider train's questions (``--dataset spider-train``); report dev.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlmend import sql as sqlmod
from sqlmend.bench.engines import Runner, same_rows
from sqlmend.bench.names import Case, _tally, make_cases
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.pipeline import PipelineConfig
from sqlmend.sql import ast
from sqlmend.sql.diff import dropped_clauses
from sqlmend.synth.names import SPELLING_KINDS, renamed

#: Engines a warehouse is loaded into.
ENGINES = ("postgres", "duckdb")
#: Engines a generated schema of N tables is made in.
SIZE_ENGINES = ("sqlite", "postgres")
#: Table counts of the size rows by default.
DEFAULT_SIZES = (100, 10_000)
#: Columns and rows of each generated table.
COLUMNS, ROWS = 8, 40
#: The schemas a generated PostgreSQL catalogue spreads its tables over (and the SQLite one's name prefixes).
MODULES = ("sales", "purchase", "stock", "finance", "hr", "crm", "mfg", "project", "fleet", "pos")
#: The entities of a generated table's name.
ENTITIES = ("orders", "invoices", "items", "lines", "partners", "moves", "batches", "tickets", "leads",
            "contracts")


# --- the warehouse -------------------------------------------------------------------------------------


@contextmanager
def warehouse(engine: str, files: dict[str, Path], echo: Callable[[str], None] = lambda line: None
              ) -> Iterator[str]:
    """Load each SQLite file of ``files`` (``{db_id: path}``) as a schema named by its ``db_id`` (lower case)
    of one database of ``engine``; yield its read-only URL. A PostgreSQL server is started for it and
    stopped after; a DuckDB file is made in a temporary folder and deleted after."""
    if engine == "postgres":
        from sqlmend.testing.copydb import load_postgres
        from sqlmend.testing.pgserver import READER, PgServer

        with PgServer.start() as server:
            server.admin("CREATE DATABASE warehouse")
            server.admin(f"GRANT CONNECT ON DATABASE warehouse TO {READER}")
            for db_id, path in files.items():
                load_postgres(path, server.url("warehouse", user="postgres"), READER, schema=db_id.lower())
            server.admin("ANALYZE", dbname="warehouse")
            echo(f"postgres: {len(files)} databases loaded as the schemas of one database on port {server.port}")
            yield server.url("warehouse")
    elif engine == "duckdb":
        from sqlmend.testing.copydb import load_duckdb

        folder = Path(tempfile.mkdtemp(prefix="sqlmend-warehouse-"))
        try:
            target = folder / "warehouse.duckdb"
            for db_id, path in files.items():
                load_duckdb(path, target, schema=db_id.lower())
            echo(f"duckdb: {len(files)} databases loaded as the schemas of {target}")
            yield f"duckdb:///{target}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    else:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")


def with_schema(text: str, schema: str, dialect: str) -> str:
    """``text`` with each table it reads that names no schema read from ``schema`` (CTEs left alone).

    >>> with_schema("SELECT count(*) FROM singer AS T1 JOIN song ON 1 = 1", "singer", "postgres")
    'SELECT COUNT(*) FROM singer.singer AS T1 JOIN singer.song ON 1 = 1'
    """
    tree = sqlmod.parse(text, dialect=dialect)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(ast.CTE)}
    for t in tree.find_all(ast.Table):
        if t.name and not t.db and t.name.lower() not in ctes:
            t.set("db", ast.to_identifier(schema))
    return tree.sql(dialect=dialect)


def gold_cases(ds: Any, target: str, dialect: str, run: Runner, limit: int | None = None,
               seed: int = 0) -> tuple[list[Case], Counter]:
    """The golds of ``ds`` on the warehouse: each a :class:`~sqlmend.bench.names.Case` whose task's SQL is
    the gold without its schema (its ``gold_sql`` the gold with it, its ``gold`` that one's rows there),
    in a seeded order, at most ``limit``; and why the others do not count."""
    tasks = [t for t in ds.tasks if t.gold and ds.db_path(t.db_id) is not None]
    random.Random(f"warehouse:{seed}").shuffle(tasks)
    skipped: Counter = Counter()
    out: list[Case] = []
    schemas: dict[str, Any] = {}
    for task in tasks:
        if limit is not None and len(out) >= limit:
            break
        if task.db_id not in schemas:
            with connect(ds.db_path(task.db_id)) as db:
                schemas[task.db_id] = db.schema()
        try:
            plain = sqlmod.transpile(task.gold, read="sqlite", write=dialect, schema=schemas[task.db_id])
            full = with_schema(plain, task.db_id.lower(), dialect)
        except SqlmendError:
            skipped["does not transpile"] += 1
            continue
        rows, _ = run.rows(target, full)
        if rows is None:
            skipped["does not run with its schema"] += 1
            continue
        out.append(Case(replace(task, sql=plain, db=target), "gold", 0, (), rows, full))
    return out, skipped


def variant_cases(ds: Any, target: str, dialect: str, run: Runner, per_kind: int, seed: int = 0,
                  timeout: float = 10.0) -> list[Case]:
    """``sqlmend bench names``' variants (made on SQLite) written without their schema on the warehouse:
    kept when the gold, carried over with its schema, runs there and the variant is refused."""
    schemas: dict[str, Any] = {}
    out = []
    for c in make_cases(ds, per_kind, seed, timeout=timeout, kinds=SPELLING_KINDS):
        db_id = c.task.db_id
        if db_id not in schemas:
            with connect(ds.db_path(db_id)) as db:
                schemas[db_id] = db.schema()
        try:
            plain = sqlmod.transpile(c.gold_sql, read="sqlite", write=dialect, schema=schemas[db_id])
            text = renamed(plain, schemas[db_id], c.names, dialect)
            full = with_schema(plain, db_id.lower(), dialect)
        except SqlmendError:
            continue
        rows, _ = run.rows(target, full)
        if rows is None or run.rows(target, text)[0] is not None:
            continue
        out.append(replace(c, task=replace(c.task, sql=text, db=target), gold=rows, gold_sql=full))
    return out


def bench_warehouse(ds: Any, engines: tuple[str, ...] = ENGINES, limit: int | None = None, per_kind: int = 30,
                    seed: int = 0, workers: int = 2, timeout: float = 10.0,
                    echo: Callable[[str], None] = lambda line: None,
                    done: Callable[[dict[str, Any]], None] = lambda report: None) -> dict[str, Any]:
    """The warehouse rows (see the module doc) on each of ``engines``.

    Args:
        ds: the dataset (Spider train to develop on, Spider dev to report).
        engines: of :data:`ENGINES`.
        limit: golds at most (a seeded sample; None: every one that runs there).
        per_kind: ``bench names``' variants per kind and name count (0: none).
        seed: the seed of the sample and of the variants.
        workers: tasks corrected at once.
        timeout: seconds per query.
        echo: progress lines.
        done: told the report so far after each engine (a long run keeps what it measured).

    Returns:
        ``{engine: {"relations", "golds", "skipped", "with_schema", "without_schema", "names"}}``.
    """
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engine {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    files = {d: ds.db_path(d) for d in sorted({t.db_id for t in ds.tasks}) if ds.db_path(d) is not None}
    every = _every_database(ds)
    config = PipelineConfig(workers=workers, timeout=timeout)
    report: dict[str, Any] = {"dataset": ds.name, "seed": seed, "databases": len(every)}
    for engine in engines:
        dialect = sqlmod.dialects.resolve(engine)
        run = Runner(timeout)
        try:
            with warehouse(engine, every, echo=echo) as target:
                with connect(target) as db:
                    catalogue = db.catalogue()
                    size = {"relations": len(catalogue.tables),
                            "columns": sum(len(t.columns) for t in catalogue.tables),
                            "schemas": len(catalogue.schemas)}
                size["agent"] = agent_sizes(target)
                cases, skipped = gold_cases(ds, target, dialect, run, limit, seed)
                echo(f"{engine}: {len(cases)} golds of {len(files)} databases run with their schema; correcting")
                correct = _correcting(target, config)
                kept = correct([replace(c.task, sql=c.gold_sql) for c in cases])
                changed = [{"question_id": c.task.question_id, "gold": c.gold_sql, "output": k.sql,
                            "same_rows": _same(run, target, k.sql, c.gold)}
                           for c, k in zip(cases, kept) if k.sql != c.gold_sql]
                outputs = correct([c.task for c in cases])
                entry: dict[str, Any] = {**size, "golds": len(cases), "skipped": dict(skipped),
                                         "with_schema": {"golds": len(cases), "changed": changed},
                                         "without_schema": _tally(cases, outputs, lambda c: target, run, dialect)}
                if per_kind:
                    variants = variant_cases(ds, target, dialect, run, per_kind, seed, timeout)
                    echo(f"{engine}: {len(variants)} name variants; correcting")
                    fixed = correct([c.task for c in variants])
                    entry["names"] = _tally(variants, fixed, lambda c: target, run, dialect)
                report[engine] = entry
                done(report)
        finally:
            run.close()
    return report


def _correcting(target: str, config: PipelineConfig) -> Callable[[list[Any]], list[Any]]:
    """Tasks corrected on one warehouse through one :class:`sqlmend.Corrector` (its connections pooled: a
    DuckDB worker or a PostgreSQL session is not started again for each item), their corrections in order."""
    import sqlmend

    def correct(tasks: list[Any]) -> list[Any]:
        with sqlmend.Corrector(target, config=config) as fixer:
            items = [{"question": t.question, "sql": t.sql, "evidence": t.evidence, "question_id": t.question_id}
                     for t in tasks]
            return [r.correction for r in fixer.correct_many(items, workers=config.workers)]

    return correct


def agent_sizes(target: str) -> dict[str, Any]:
    """What an agent reads of the warehouse through the MCP tools (:mod:`sqlmend.mcpserver.tools`): the bytes
    of ``list_databases``' answer (and with ``tables=true``), of ``describe_schema``'s default answer and
    the relations it shows, the pages every relation takes, and the seconds of the first page."""
    import sqlmend
    from sqlmend.mcpserver import tools

    with sqlmend.Corrector(target, stages="static,guard") as fixer:
        dbs = {"warehouse": fixer}
        start = time.perf_counter()
        first = tools.describe_schema(dbs, "warehouse")
        seconds = time.perf_counter() - start
        pages, page = 1, first
        while page["next_cursor"] is not None:
            page = tools.describe_schema(dbs, "warehouse", cursor=page["next_cursor"])
            pages += 1
        return {"list_databases_bytes": len(json.dumps(tools.list_databases(dbs))),
                "list_databases_tables_bytes": len(json.dumps(tools.list_databases(dbs, tables=True))),
                "describe_schema_bytes": len(json.dumps(first)), "describe_schema_relations": len(first["tables"]),
                "describe_schema_pages": pages, "describe_schema_seconds": round(seconds, 3)}


def _every_database(ds: Any) -> dict[str, Path]:
    """Every database of the data folder (the warehouse holds all of them, whatever the split asks)."""
    root = Path(ds.db_root)
    return {p.name: p / f"{p.name}.sqlite" for p in sorted(root.iterdir()) if (p / f"{p.name}.sqlite").exists()}


def _same(run: Runner, target: str, text: str, gold: list[tuple]) -> bool:
    rows, _ = run.rows(target, text)
    return rows is not None and same_rows(rows, gold)


# --- size: a generated schema of N tables ------------------------------------------------------------------


def table_names(n: int) -> list[tuple[str, str]]:
    """``(module, table)`` of a generated schema of ``n`` tables: ``sales`` / ``orders_0000``, ...

    >>> table_names(3)
    [('sales', 'orders_0000'), ('purchase', 'invoices_0001'), ('stock', 'items_0002')]
    """
    return [(MODULES[i % len(MODULES)], f"{ENTITIES[i % len(ENTITIES)]}_{i:04d}") for i in range(n)]


_COLUMNS = ("id INTEGER PRIMARY KEY, name TEXT, state TEXT, amount REAL, created TEXT, owner_id INTEGER, "
            "note TEXT, code TEXT")
_STATES = ("open", "closed", "pending")


def _rows(i: int) -> list[tuple]:
    return [(r, f"name {i}-{r}", _STATES[(r + i) % 3], round((r * 7919 + i) % 10_000 / 100, 2),
             f"2024-{(r % 12) + 1:02d}-{(r % 28) + 1:02d}", (r * 31 + i) % 97, f"note {r}", f"C{i}-{r}")
            for r in range(ROWS)]


def generate(engine: str, n: int, where: Path | str) -> str:
    """Make the generated schema of ``n`` tables (see the module doc); return its target.

    Args:
        engine: ``sqlite`` (``where``: the file, reused when it exists) or ``postgres`` (``where``: an
            admin URL of an empty database; the tables go to the :data:`MODULES` schemas).
    """
    if engine == "sqlite":
        path = Path(where)
        if path.exists():
            return str(path)
        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        conn = sqlite3.connect(tmp)
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        for i, (module, table) in enumerate(table_names(n)):
            conn.execute(f"CREATE TABLE {module}_{table} ({_COLUMNS})")
            conn.executemany(f"INSERT INTO {module}_{table} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", _rows(i))
        conn.commit()
        conn.close()
        os.replace(tmp, path)
        return str(path)
    if engine == "postgres":
        import psycopg

        names = table_names(n)
        with psycopg.connect(str(where), autocommit=True) as conn:
            for module in MODULES:
                conn.execute(f"CREATE SCHEMA {module}")
            for start in range(0, n, 500):  # a transaction per 500 tables: each holds a lock until it ends
                with conn.transaction():
                    for i in range(start, min(n, start + 500)):
                        module, table = names[i]
                        conn.execute(f"CREATE TABLE {module}.{table} "
                                     f"({_COLUMNS.replace('INTEGER PRIMARY', 'int PRIMARY')})")
                        with conn.cursor() as cur, cur.copy(f"COPY {module}.{table} FROM STDIN") as copy:
                            for row in _rows(i):
                                copy.write_row(row)
            conn.execute("ANALYZE")
        return str(where)
    raise ValueError(f"unknown engine {engine!r}; known: {', '.join(SIZE_ENGINES)}")


def size_queries(engine: str, n: int) -> tuple[tuple[str, str], tuple[str, str]]:
    """The two queries of a size row: a value in another case, then a column name not in the schema; on
    tables in the middle of the schema (the same ones whatever ``n`` is above 100)."""
    (m1, t1), (m2, t2) = table_names(n)[min(n, 100) // 2], table_names(n)[min(n, 100) // 2 + 1]
    first, second = (f"{m1}.{t1}", f"{m2}.{t2}") if engine == "postgres" else (f"{m1}_{t1}", f"{m2}_{t2}")
    return ((f"How many of {first} are open?", f"SELECT count(*) FROM {first} WHERE state = 'Open'"),
            (f"How many of {second} are open?", f"SELECT count(*) FROM {second} WHERE status = 'open'"))


def probe(target: str, engine: str, n: int) -> dict[str, Any]:
    """In this process (a fresh one: :func:`measure`): open ``target``, correct the first query, then the
    name fix; seconds, the corrected SQL and the peak memory (``VmHWM``, MB)."""
    import sqlmend

    (q1, s1), (q2, s2) = size_queries(engine, n)
    start = time.perf_counter()
    with sqlmend.Corrector(target) as fixer:
        first = fixer.correct(q1, s1)
        opened = time.perf_counter() - start
        start = time.perf_counter()
        fix = fixer.correct(q2, s2)
        fixed = time.perf_counter() - start
    return {"open_first_seconds": round(opened, 3), "name_fix_seconds": round(fixed, 3),
            "first": first.sql, "fix": fix.sql, "peak_mb": _peak_mb()}


def _peak_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def measure(target: str, engine: str, n: int, cache: Path) -> dict[str, Any]:
    """:func:`probe` in a fresh Python process with ``cache`` as its cache folder."""
    env = {**os.environ, "SQLMEND_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-m", "sqlmend.bench.warehouse", target, engine, str(n)],
                          capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"the size probe failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_sizes(engines: tuple[str, ...] = SIZE_ENGINES, sizes: tuple[int, ...] = DEFAULT_SIZES,
                work: Path | None = None, echo: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """The size rows (see the module doc): ``{engine: [{"tables", "cold": ..., "warm": ...}, ...]}``, each
    with its ratio to the smallest size's seconds."""
    work = Path(work or tempfile.mkdtemp(prefix="sqlmend-sizes-"))
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}
    for engine in engines:
        rows = []
        server = None
        try:
            if engine == "postgres":
                from sqlmend.testing.pgserver import READER, PgServer

                server = PgServer.start()
            for n in sorted(sizes):
                if server is not None:
                    name = f"erp_{n}"
                    server.admin(f"CREATE DATABASE {name}")
                    generate("postgres", n, server.url(name, user="postgres"))
                    for module in MODULES:
                        server.admin(f"GRANT USAGE ON SCHEMA {module} TO {READER}; "
                                     f"GRANT SELECT ON ALL TABLES IN SCHEMA {module} TO {READER}", dbname=name)
                    target = server.url(name)
                else:
                    target = generate("sqlite", n, work / f"erp_{n}.sqlite")
                cache = work / f"cache-{engine}-{n}"
                shutil.rmtree(cache, ignore_errors=True)
                cold = measure(target, engine, n, cache)
                warm = measure(target, engine, n, cache)
                rows.append({"tables": n, "cold": cold, "warm": warm})
                echo(f"{engine} {n} tables: open + first correction {cold['open_first_seconds']}s cold, "
                     f"{warm['open_first_seconds']}s warm; name fix {cold['name_fix_seconds']}s; "
                     f"peak {cold['peak_mb']} MB")
        finally:
            if server is not None:
                server.stop()
        base = rows[0] if rows else None
        for row in rows:
            for kind in ("cold", "warm"):
                for what in ("open_first_seconds", "name_fix_seconds"):
                    row[kind][what.replace("seconds", "ratio")] = round(
                        row[kind][what] / max(base[kind][what], 1e-3), 2)
        out[engine] = rows
    return out


# --- the report ----------------------------------------------------------------------------------------------


def _pct(n: int, d: int) -> str:
    return f"{n} ({100 * n / d:.1f}%)" if d else "0"


def markdown(report: dict[str, Any]) -> str:
    """The report as the tables of docs/benchmarks.md."""
    lines = []
    engines = [e for e in ENGINES if e in report]
    if engines:
        lines += [f"Warehouse: the {report['databases']} Spider databases as the schemas of one database; "
                  f"{report['dataset']}'s golds (seed {report['seed']}).", "",
                  "| engine | relations | golds | with schema: changed | without schema: restored | clause dropped "
                  "| failing | wrong rows | names: variants | restored | failing | wrong rows |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for e in engines:
            r = report[e]
            w = r["without_schema"]["all"]
            n = r.get("names", {}).get("all", {})
            lines.append(f"| {e} | {r['relations']} | {r['golds']} | {len(r['with_schema']['changed'])} | "
                         f"{_pct(w.get('restored', 0), r['golds'])} | {w.get('clause_dropped', 0)} | "
                         f"{_pct(w.get('failing', 0), r['golds'])} | {_pct(w.get('wrong', 0), r['golds'])} | "
                         f"{n.get('cases', 0)} | {_pct(n.get('restored', 0), n.get('cases', 0))} | "
                         f"{_pct(n.get('failing', 0), n.get('cases', 0))} | {_pct(n.get('wrong', 0), n.get('cases', 0))} |")
    for e in engines:
        a = report[e].get("agent")
        if a:
            lines.append(f"\n{e}: `describe_schema`'s default answer {a['describe_schema_bytes']:,} bytes "
                         f"({a['describe_schema_relations']} of {report[e]['relations']} relations, "
                         f"{a['describe_schema_seconds']} s; every relation in {a['describe_schema_pages']} "
                         f"pages); `list_databases` {a['list_databases_bytes']:,} bytes "
                         f"({a['list_databases_tables_bytes']:,} with tables=true)")
    sizes = report.get("sizes") or {}
    if sizes:
        lines += ["", "| engine | tables | open + first correction, cold (x smallest) | warm (x) | name fix (x) "
                      "| peak MB |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for engine, rows in sizes.items():
            for row in rows:
                c, w = row["cold"], row["warm"]
                lines.append(f"| {engine} | {row['tables']:,} | {c['open_first_seconds']} s ({c['open_first_ratio']}x) | "
                             f"{w['open_first_seconds']} s ({w['open_first_ratio']}x) | "
                             f"{c['name_fix_seconds']} s ({c['name_fix_ratio']}x) | {c['peak_mb']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # the size probe's fresh process: TARGET ENGINE N
    print(json.dumps(probe(sys.argv[1], sys.argv[2], int(sys.argv[3]))))

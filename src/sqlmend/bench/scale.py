"""``sqlmend bench scale``: what a correction costs on a big database, against its distinct queries.

A seeded shop database is generated at each size (:func:`generate_sqlite`, :func:`generate_postgres`):
``orders`` holds N rows (10^5 to 2 x 10^7), ``customer`` N/10 (at least 1,000), ``country`` ten names,
and 500 small side tables (5 rows each), the shape of a real schema with many tables. The rows are
arithmetic on the row number and the seed (no random module), so the same seed gives the same bytes.
On SQLite the file is written once under the work folder and reused by later runs (its name holds the
size and the seed); on PostgreSQL it is loaded into a throw-away server.

Each query of :data:`QUERIES` (wrong ones the rules fix, right ones they keep) is corrected through
the Python API (:class:`sqlmend.Corrector`, default stages). Per size and engine, the report gives:

* the first correction's seconds on a fresh process's Corrector (value index built for what it needs;
  ``index_reused``: the next process found it in the cache);
* per query after the first: the correction's seconds, the seconds of its distinct queries run alone
  once (each SQL the item executed, timed on its own connection), their ratio, and the queries the item
  ran and reused (``ItemResults``);
* the process's peak memory (``VmHWM``).

The target (docs/scale.md): a correction costs at most 1.5 x its distinct queries + 0.5 s.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: The default sizes (rows of ``orders``): minutes on two cores. ``--sizes`` takes up to 20,000,000.
DEFAULT_SIZES = (100_000, 1_000_000)
#: Countries of the customers, as stored (the queries write them in lower case).
COUNTRIES = ("France", "Germany", "Spain", "Italy", "United Kingdom", "Netherlands", "Belgium", "Poland",
             "Sweden", "Norway")
#: Order statuses, as stored (lower case: the wrong queries capitalize them).
STATUSES = ("shipped", "pending", "delivered", "cancelled", "returned")
#: Side tables of the schema and their rows.
SIDE_TABLES, SIDE_ROWS = 500, 5


@dataclass(frozen=True)
class ScaleQuery:
    """One query of the bench: the question, the SQL as a system wrote it, and the SQL expected back."""

    name: str
    question: str
    sql: str
    expected: str  # the correction's SQL (the input itself for a right query)


#: The bench's fixed queries: wrong ones the value rules fix (the issue's VL01 cases) and right ones.
QUERIES: tuple[ScaleQuery, ...] = (
    ScaleQuery("count_france_wrong", "How many customers are from France?",
               "SELECT count(*) FROM customer WHERE country = 'france'",
               "SELECT COUNT(*) FROM customer WHERE country = 'France'"),
    ScaleQuery("sum_shipped_wrong", "What is the total amount of the shipped orders?",
               "SELECT sum(amount) FROM orders WHERE status = 'Shipped'",
               "SELECT SUM(amount) FROM orders WHERE status = 'shipped'"),
    ScaleQuery("sum_shipped_right", "What is the total amount of the shipped orders?",
               "SELECT sum(amount) FROM orders WHERE status = 'shipped'",
               "SELECT sum(amount) FROM orders WHERE status = 'shipped'"),
    ScaleQuery("customer_pending_wrong", "How many pending orders did Customer 4 place?",
               "SELECT count(*) FROM orders AS o JOIN customer AS c ON o.customer_id = c.id "
               "WHERE c.name = 'Customer 4' AND o.status = 'Pending'",
               "SELECT COUNT(*) FROM orders AS o JOIN customer AS c ON o.customer_id = c.id "
               "WHERE c.name = 'Customer 4' AND o.status = 'pending'"),
    ScaleQuery("customer_pending_right", "How many pending orders did Customer 4 place?",
               "SELECT count(*) FROM orders AS o JOIN customer AS c ON o.customer_id = c.id "
               "WHERE c.name = 'Customer 4' AND o.status = 'pending'",
               "SELECT count(*) FROM orders AS o JOIN customer AS c ON o.customer_id = c.id "
               "WHERE c.name = 'Customer 4' AND o.status = 'pending'"),
    ScaleQuery("max_amount_right", "What is the largest order amount?",
               "SELECT max(amount) FROM orders", "SELECT max(amount) FROM orders"),
)


def customers(n: int) -> int:
    """The rows of ``customer`` for ``n`` orders."""
    return max(1000, n // 10)


def _schema_sql() -> list[str]:
    out = ["CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT)",
           "CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, city TEXT, email TEXT)",
           "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer (id), "
           "amount REAL, status TEXT, order_date TEXT, note TEXT)"]
    out += [f"CREATE TABLE side_{k} (id INTEGER PRIMARY KEY, label TEXT, value INTEGER)" for k in range(SIDE_TABLES)]
    return out


#: The one index besides the keys: orders by customer (a foreign key's, as most schemas have).
INDEX_SQL = "CREATE INDEX orders_customer ON orders (customer_id)"


def _mix(expr: str, seed: int, mul: int, mod: int) -> str:
    """A seeded, spread-out integer in [0, mod) from an integer SQL expression (a multiplicative hash)."""
    return f"((({expr}) + {seed * 7919}) * {mul} % {mod})"


def _customer_select(n: int, seed: int, rows: str) -> str:
    country = "CASE " + _mix("i", seed, 7919, 10) + " " + " ".join(
        f"WHEN {k} THEN '{c}'" for k, c in enumerate(COUNTRIES)) + " END"
    return (f"SELECT i, 'Customer ' || i, {country}, 'City ' || {_mix('i', seed, 31, 500)}, "
            f"'c' || i || '@example.com' FROM {rows}")


def _orders_select(n: int, seed: int, rows: str, date: str) -> str:
    status = "CASE " + _mix("i", seed, 7, 5) + " " + " ".join(
        f"WHEN {k} THEN '{s}'" for k, s in enumerate(STATUSES)) + " END"
    return (f"SELECT i, 1 + {_mix('i', seed, 2654435761, customers(n))}, {_mix('i', seed, 40503, 100000)} / 100.0, "
            f"{status}, {date}, 'note ' || {_mix('i', seed, 13, 977)} FROM {rows}")


#: Bump when the generated data change (the file name holds it, so an old file is not reused).
DATA_VERSION = 2


def sqlite_path(work: Path, n: int, seed: int = 0) -> Path:
    """Where the SQLite database of ``n`` orders and ``seed`` is kept."""
    name = f"shop{DATA_VERSION}_{n}_s{seed}"
    return Path(work) / name / f"{name}.sqlite"


def generate_sqlite(path: Path, n: int, seed: int = 0) -> Path:
    """Write the seeded shop database of ``n`` orders to ``path`` (once: an existing file is kept).

    The rows come from recursive CTEs inside SQLite (no Python loop), so 2 x 10^7 orders take a couple
    of minutes and about 1.3 GB. Written to a temporary name and renamed, so a killed run leaves none.
    """
    path = Path(path)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    try:
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        for stmt in _schema_sql():
            con.execute(stmt)
        con.executemany("INSERT INTO country VALUES (?, ?)",
                        [(c[:2].upper() + str(k), c) for k, c in enumerate(COUNTRIES)])

        def series(m: int) -> str:
            return f"(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {m}) SELECT i FROM s)"

        con.execute("INSERT INTO customer " + _customer_select(n, seed, series(customers(n))))
        con.execute("INSERT INTO orders " + _orders_select(
            n, seed, series(n), "date('2020-01-01', '+' || (i % 1500) || ' days')"))
        for k in range(SIDE_TABLES):
            con.executemany(f"INSERT INTO side_{k} VALUES (?, ?, ?)",
                            [(j, f"label {j}", j * k) for j in range(SIDE_ROWS)])
        con.execute(INDEX_SQL)
        con.execute("ANALYZE")  # the planner's statistics: a join from the filtered side, by the index
        con.commit()
    finally:
        con.close()
    tmp.rename(path)
    return path


def generate_postgres(execute: Callable[[str], Any], n: int, seed: int = 0) -> None:
    """Create the same database through ``execute`` (a PostgreSQL connection's, autocommit), with
    ``generate_series``, and ANALYZE it (its statistics are what the value index reads for a column too
    big to list)."""
    for stmt in _schema_sql():
        execute(stmt.replace("INTEGER PRIMARY KEY", "BIGINT PRIMARY KEY").replace("REAL", "DOUBLE PRECISION"))
    values = ", ".join(f"('{c[:2].upper() + str(k)}', '{c}')" for k, c in enumerate(COUNTRIES))
    execute(f"INSERT INTO country VALUES {values}")
    execute("INSERT INTO customer " + _customer_select(
        n, seed, f"generate_series(1::bigint, {customers(n)}::bigint) AS s(i)"))
    execute("INSERT INTO orders " + _orders_select(
        n, seed, f"generate_series(1::bigint, {n}::bigint) AS s(i)",
        "to_char(date '2020-01-01' + (i % 1500)::int, 'YYYY-MM-DD')"))
    for k in range(SIDE_TABLES):
        rows = ", ".join(f"({j}, 'label {j}', {j * k})" for j in range(SIDE_ROWS))
        execute(f"INSERT INTO side_{k} VALUES {rows}")
    execute(INDEX_SQL)
    execute("ANALYZE")


# --- measuring -------------------------------------------------------------------------------------


@dataclass
class QueryRow:
    """One query corrected in one process: its seconds, its distinct queries' seconds alone, its executions."""

    query: str
    seconds: float
    alone: float  # its distinct queries (those the item executed), each run once on its own connection
    executed: int
    reused: int
    ok: bool  # the correction's SQL is the expected one
    error: str | None = None

    @property
    def ratio(self) -> float:
        return self.seconds / self.alone if self.alone > 0 else float("inf")

    @property
    def within(self) -> bool:
        """The target: at most 1.5 x its distinct queries + 0.5 s."""
        return self.seconds <= 1.5 * self.alone + 0.5


@dataclass
class SizeResult:
    """One database size on one engine."""

    engine: str
    rows: int
    megabytes: float
    generate_seconds: float
    first_seconds: float  # the first correction of a fresh process with an empty cache (index build)
    next_first_seconds: float  # the first correction of the next process (the index read from the cache)
    index_reused: bool  # the next process found the value index (and the columns read) in the cache
    peak_mb: float  # the largest peak resident memory (VmHWM) of the two processes
    cold: list[QueryRow] = field(default_factory=list)  # the first process: each query's first correction
    warm: list[QueryRow] = field(default_factory=list)  # the next process: what the target is read on

    @property
    def within(self) -> bool:
        return all(r.within for r in self.warm)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["within"] = self.within
        for part in ("cold", "warm"):
            for row, r in zip(d[part], getattr(self, part)):
                row["ratio"], row["within"] = round(r.ratio, 3), r.within
        return d


def _peak_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure(target: str, cache: str, queries: Iterable[ScaleQuery] = QUERIES, timeout: float = 30.0,
            name: str = "shop") -> dict[str, Any]:
    """Correct every query in this process (run it in a fresh one): the first correction's seconds, then
    per query its correction, its distinct queries alone, its executions. Returns a JSON-ready dict.

    Args:
        target: the database (a path or URL).
        cache: the ``SQLMEND_CACHE`` folder of this process (the value index and its sidecar files).
        queries: the queries.
        timeout: the pipeline's ``timeout`` (its item budget is 0.8 x that).
        name: the database's name in the tasks.
    """
    import os

    os.environ["SQLMEND_CACHE"] = cache
    from sqlmend.db import connect
    from sqlmend.db.results import ItemResults
    from sqlmend.errors import DatabaseError
    from sqlmend.pipeline import Pipeline, PipelineConfig
    from sqlmend.types import Task

    queries = list(queries)
    pipe = Pipeline(PipelineConfig(timeout=timeout))
    out: dict[str, Any] = {"rows": []}
    start = time.perf_counter()
    with connect(target) as db, connect(target) as solo:
        for i, q in enumerate([queries[0], *queries]):
            results = ItemResults()
            task = Task(question_id=q.name, db_id=name, question=q.question, sql=q.sql, db=target)
            began = time.perf_counter()
            c = pipe.correct(task, db=db, results=results)
            seconds = time.perf_counter() - began
            if i == 0:  # the first correction of the process: opening, schema, value index
                out["first_seconds"] = round(time.perf_counter() - start, 3)
                out["index_from_cache"] = bool(db.value_index().from_cache)
                continue
            alone = 0.0
            for sql in results.queries():
                began = time.perf_counter()
                try:
                    solo.execute(sql, timeout=3600.0)
                except DatabaseError:
                    pass
                alone += time.perf_counter() - began
            out["rows"].append(asdict(QueryRow(q.name, round(seconds, 3), round(alone, 3), c.executions.get("executed", 0),
                                               c.executions.get("reused", 0), c.sql == q.expected and not c.error,
                                               c.error)))
    out["peak_mb"] = round(_peak_mb(), 1)
    return out


def _in_process(target: str, cache: str, timeout: float) -> dict[str, Any]:
    """:func:`measure` in a fresh process (its own memory peak, its own in-memory caches)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(measure, target, cache, QUERIES, timeout).result()


def run_size(engine: str, target: str, rows: int, megabytes: float, generate_seconds: float, cache: Path,
             timeout: float = 30.0) -> SizeResult:
    """Measure one database: a process with an empty cache, then the next process."""
    import shutil

    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    cold = _in_process(target, str(cache), timeout)
    warm = _in_process(target, str(cache), timeout)
    return SizeResult(engine, rows, round(megabytes, 1), round(generate_seconds, 1), cold["first_seconds"],
                      warm["first_seconds"], warm["index_from_cache"], max(cold["peak_mb"], warm["peak_mb"]),
                      [QueryRow(**r) for r in cold["rows"]], [QueryRow(**r) for r in warm["rows"]])


def run_scale(sizes: Iterable[int] = DEFAULT_SIZES, engines: Iterable[str] = ("sqlite", "postgres"),
              work: Path | None = None, seed: int = 0, timeout: float = 30.0,
              echo: Callable[[str], None] = lambda line: None) -> list[SizeResult]:
    """Generate (once) and measure each size on each engine (see the module doc).

    Args:
        sizes: rows of ``orders``.
        engines: ``sqlite`` and/or ``postgres`` (a throw-away server; skipped without its binaries).
        work: the folder of the SQLite files and the caches (default: ``<cache>/bench/scale``).
        seed: the data's seed.
        timeout: the pipeline's ``timeout``.
        echo: receives a line per size.
    """
    from sqlmend.paths import cache_dir

    work = Path(work) if work is not None else cache_dir("bench", "scale")
    out: list[SizeResult] = []
    for engine in engines:
        if engine == "sqlite":
            for n in sizes:
                began = time.perf_counter()
                path = generate_sqlite(sqlite_path(work, n, seed), n, seed)
                made = time.perf_counter() - began
                out.append(run_size("sqlite", str(path), n, path.stat().st_size / 2**20, made,
                                    work / "caches" / f"sqlite_{n}_s{seed}", timeout))
                echo(line(out[-1]))
        elif engine == "postgres":
            out += _postgres(sizes, work, seed, timeout, echo)
        else:
            raise ValueError(f"unknown engine {engine!r}; known: sqlite, postgres")
    return out


def _postgres(sizes: Iterable[int], work: Path, seed: int, timeout: float,
              echo: Callable[[str], None]) -> list[SizeResult]:
    import psycopg

    from sqlmend.testing.pgserver import READER, PgServer, find_bin

    if find_bin() is None:
        echo("postgres: not measured (no PostgreSQL server binaries)")
        return []
    out = []
    with PgServer.start() as server:
        for n in sizes:
            name = f"shop_{n}_s{seed}"
            began = time.perf_counter()
            server.admin(f"CREATE DATABASE {name}")
            with psycopg.connect(server.url(name, user="postgres"), autocommit=True) as conn:
                generate_postgres(conn.execute, n, seed)
                conn.execute(f"GRANT USAGE ON SCHEMA public TO {READER}")
                conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER}")
                size = conn.execute(f"SELECT pg_database_size('{name}')").fetchone()[0]
            made = time.perf_counter() - began
            _settle(server.url(name))
            out.append(run_size("postgres", server.url(name), n, size / 2**20, made,
                                work / "caches" / f"postgres_{n}_s{seed}", timeout))
            echo(line(out[-1]))
            server.admin(f"DROP DATABASE {name}")
    return out


def _settle(url: str, tries: int = 20) -> None:
    """Wait until the server's write counters of a freshly loaded database stop moving (they are the
    value index's cache key there, ``PostgresDatabase.cache_key``)."""
    from sqlmend.db import connect

    last = None
    for _ in range(tries):
        with connect(url) as db:
            key = db.cache_key()
        if key == last:
            return
        last = key
        time.sleep(1.0)


def line(r: SizeResult) -> str:
    """One size in a line (the echo of a run)."""
    worst = max(r.warm, key=lambda q: q.seconds - 1.5 * q.alone)
    return (f"{r.engine:8s} {r.rows:>10,} rows {r.megabytes:8.1f} MB  first {r.first_seconds:6.2f} s  next process "
            f"{r.next_first_seconds:5.2f} s (index {'reused' if r.index_reused else 'REBUILT'})  worst "
            f"{worst.query} {worst.seconds:.2f} s vs {worst.alone:.2f} s alone  peak {r.peak_mb:.0f} MB  "
            f"{'within' if r.within else 'PAST'} 1.5x + 0.5 s")


def markdown(results: list[SizeResult]) -> str:
    """The per-size table, then every query of the next process."""
    out = ["| engine | orders | MB | first correction s (index build) | next process's first s | index reused "
           "| corrections s (queries after the first) | their queries alone s | ratio | executed / reused per item "
           "| peak MB | within 1.5x + 0.5 s |", "|---" * 12 + "|"]
    for r in results:
        secs, alone = sum(q.seconds for q in r.warm), sum(q.alone for q in r.warm)
        ex = sum(q.executed for q in r.warm) / max(1, len(r.warm))
        re_ = sum(q.reused for q in r.warm) / max(1, len(r.warm))
        out.append(f"| {r.engine} | {r.rows:,} | {r.megabytes:.0f} | {r.first_seconds:.2f} | {r.next_first_seconds:.2f} "
                   f"| {'yes' if r.index_reused else 'no'} | {secs:.2f} | {alone:.2f} | {secs / alone if alone else 0:.2f} "
                   f"| {ex:.1f} / {re_:.1f} | {r.peak_mb:.0f} | {'yes' if r.within else 'NO'} |")
    out += ["", "| engine | orders | query | correction s | alone s | ratio | executed | reused | right SQL | error |",
            "|---" * 10 + "|"]
    for r in results:
        for q in r.warm:
            out.append(f"| {r.engine} | {r.rows:,} | {q.query} | {q.seconds:.2f} | {q.alone:.2f} | {q.ratio:.2f} "
                       f"| {q.executed} | {q.reused} | {'yes' if q.ok else 'no'} | {(q.error or '')[:80]} |")
    return "\n".join(out)


def charts(results: list[SizeResult]) -> dict[str, dict[str, Any]]:
    """Per engine, by size (log10 of the rows): the corrections' seconds against their queries alone and
    the first correction's (``seconds``), and each query's ratio (``ratio``), as inline SVG."""
    import math

    from sqlmend.review import svg

    out = {}
    for engine in sorted({r.engine for r in results}):
        rs = sorted((r for r in results if r.engine == engine), key=lambda r: r.rows)
        xs = [round(math.log10(r.rows), 2) for r in rs]
        out[engine] = {
            "seconds": svg.lines(xs, {"corrections": [sum(q.seconds for q in r.warm) for r in rs],
                                      "their queries alone": [sum(q.alone for q in r.warm) for r in rs],
                                      "first correction (index build)": [r.first_seconds for r in rs]},
                                 f"{engine}: seconds", "rows of orders (log10)"),
            "ratio": svg.lines(xs, {q.name: [next((w.ratio for w in r.warm if w.query == q.name), None) for r in rs]
                                    for q in QUERIES}, f"{engine}: correction / its queries alone",
                               "rows of orders (log10)"),
        }
    return out


def write_html(path: Path, results: list[SizeResult]) -> Path:
    """A self-contained HTML page with :func:`charts` and the tables."""
    from sqlmend.review.report import write_page

    return write_page(path, "scale.html", charts=charts(results), table=markdown(results).splitlines())


def write_svgs(folder: Path, results: list[SizeResult]) -> list[Path]:
    """:func:`charts` as SVG files (``scale-<engine>-seconds.svg``, ``scale-<engine>-ratio.svg``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for engine, figs in charts(results).items():
        for name, chart in figs.items():
            path = folder / f"scale-{engine}-{name}.svg"
            path.write_text(str(chart), encoding="utf-8")
            paths.append(path)
    return paths

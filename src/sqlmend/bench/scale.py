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
    ScaleQuery("customer_pending_wrong", "How many pending orders did Customer 17 place?",
               "SELECT count(*) FROM orders AS o JOIN customer AS c ON o.customer_id = c.id "
               "WHERE c.name = 'Customer 17' AND o.status = 'Pending'",
               "SELECT COUNT(*) FROM orders AS o JOIN customer AS c ON o.customer_id = c.id "
               "WHERE c.name = 'Customer 17' AND o.status = 'pending'"),
    ScaleQuery("customer_pending_right", "How many pending orders did Customer 17 place?",
               "SELECT count(*) FROM orders AS o JOIN customer AS c ON o.customer_id = c.id "
               "WHERE c.name = 'Customer 17' AND o.status = 'pending'",
               "SELECT count(*) FROM orders AS o JOIN customer AS c ON o.customer_id = c.id "
               "WHERE c.name = 'Customer 17' AND o.status = 'pending'"),
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

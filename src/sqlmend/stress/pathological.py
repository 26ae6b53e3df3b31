"""``sqlmend bench pathological``: queries that never end or allocate without bound, on each engine.

Each query of :data:`QUERIES` is corrected through the Python API (:class:`sqlmend.api.Corrector`,
the default stages) on world_1 as SQLite, as PostgreSQL (a throw-away server,
:class:`~sqlmend.testing.pgserver.PgServer`, the file copied in) and as DuckDB (a copy of the file).
Per query: the engine, wall seconds, the item's reason (its error, or the stages that ran), the
process's resident memory after it and its peak (``VmHWM``), and whether the next, normal request
is served with the right answer. The bound under test: an item's queries together stop within
one budget of ``ITEM_BUDGET`` x ``timeout`` (docs/pipeline.md, "One budget per item").
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from sqlmend.db.base import quote_ident


def _joins(n: int) -> str:
    return "SELECT count(*) FROM city AS a0 " + " ".join(
        f"JOIN city AS a{i} ON a{i}.id = a{i - 1}.id" for i in range(1, n))


def _unions(n: int) -> str:
    return " UNION ".join(f"SELECT {i} AS n FROM country WHERE code = 'NLD'" for i in range(n))


def in_list(n: int, strings: bool = True) -> str:
    """A wide query: ``n`` literals in one IN list (strings no city is named, or ids), on world_1."""
    if strings:
        return f"SELECT Name FROM city WHERE Name IN ({', '.join(f'{chr(39)}n{i}{chr(39)}' for i in range(n))})"
    return f"SELECT Name FROM city WHERE ID IN ({', '.join(str(i) for i in range(n))})"


#: The wide queries of every engine: IN lists of 1,000 to 100,000 literals, strings and numbers.
WIDE = {f"in_{n // 1000}k_{'strings' if strings else 'numbers'}": in_list(n, strings)
        for n in (1_000, 10_000, 100_000) for strings in (True, False)}

_RECURSIVE = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
_CARTESIAN = "SELECT count(*) FROM city AS a, city AS b, city AS c, city AS d"
_BIG_LIMIT = "SELECT * FROM city AS a, city AS b, country AS c LIMIT 100000000"

_BOTH = {
    "recursive_cte": _RECURSIVE,
    "cartesian_4": _CARTESIAN,
    "string_500mb": "SELECT repeat('x', 500000000)",
    "string_rows": "SELECT repeat(name, 100000) FROM city",
    "big_limit_join": _BIG_LIMIT,
    "joins_200": _joins(200),
    "unions_300": _unions(300),
    **WIDE,
}

#: The pathological queries by engine (world_1): name -> SQL in the engine's dialect.
QUERIES: dict[str, dict[str, str]] = {
    "sqlite": {
        "recursive_cte": _RECURSIVE,
        "cartesian_4": _CARTESIAN,
        "zeroblob_500mb": "SELECT zeroblob(500000000)",
        "string_doubling": "WITH RECURSIVE s(x) AS (SELECT 'x' UNION ALL SELECT x || x FROM s LIMIT 40) "
                           "SELECT max(length(x)) FROM s",
        "randomblob_rows": "SELECT randomblob(1000000) FROM city",
        "big_limit_join": _BIG_LIMIT,
        "joins_200": _joins(200),
        "unions_300": _unions(300),
        **WIDE,
    },
    # PostgreSQL and DuckDB share their SQL: no zeroblob, printf or randomblob, a repeat() instead
    "postgres": _BOTH,
    # DuckDB allocates these outside its memory_limit: its worker process's cap stops them
    "duckdb": {**_BOTH, "list_100m": "SELECT len(range(100000000))",
               "string_doubling": "WITH RECURSIVE s(x, n) AS (SELECT 'x', 0 UNION ALL SELECT x || x, n + 1 FROM s "
                                  "WHERE n < 40) SELECT max(length(x)) FROM s"},
}

#: The normal request after each pathological one, and its answer on world_1.
NORMAL = ("How many cities are in the Netherlands?", "SELECT count(*) FROM city WHERE countrycode = 'NLD'", 28)


@dataclass
class PathoRow:
    engine: str
    query: str
    seconds: float
    reason: str
    rss_mb: float
    peak_mb: float
    next_ok: bool
    worker_peak_mb: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def markdown(rows: list[PathoRow]) -> str:
    """The table of a run."""
    out = ["| engine | query | s | reason | RSS MB after | peak MB | worker peak MB | next request |",
           "|---" * 8 + "|"]
    for r in rows:
        out.append(f"| {r.engine} | {r.query} | {r.seconds:.1f} | {r.reason[:110]} | {r.rss_mb:.0f} "
                   f"| {r.peak_mb:.0f} | {r.worker_peak_mb:.0f} | {'served' if r.next_ok else 'FAILED'} |")
    return "\n".join(out)


def memory_mb() -> tuple[float, float]:
    """This process's resident memory and its peak, in MB (``/proc/self/status``)."""
    found = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    return found.get("VmRSS", 0.0), found.get("VmHWM", 0.0)


def worker_peak_mb() -> float:
    """The largest peak resident memory (``VmHWM``) of this process's engine workers (DuckDB's, running or
    stopped), in MB."""
    from sqlmend.db.duckdb import resident_peak, stopped_workers_peak

    peak = stopped_workers_peak()
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in children.read_text().split():
            try:
                if b"sqlmend.db" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    peak = max(peak, resident_peak(int(pid)))
            except OSError:
                continue
    return peak / 2**20


def reason(correction: Any) -> str:
    """An item's outcome in a few words: its error, else the stages' statuses."""
    if correction.error:
        return correction.error
    return "; ".join(f"{s.stage} {s.status}" + (f" ({s.note[:60]})" if s.status == "skipped" else "")
                     for s in correction.stages)


def run_engine(engine: str, target: str, timeout: float | None = None, only: list[str] | None = None,
               echo: Callable[[str], None] = lambda line: None) -> list[PathoRow]:
    """Correct each pathological query of ``engine`` on ``target``, each followed by the normal one."""
    import sqlmend
    from sqlmend.db import connect

    fixer = sqlmend.Corrector(target, db_id="world_1", timeout=timeout)
    check = connect(target)
    rows = []
    try:
        for name, sql in QUERIES[engine].items():
            if only and name not in only:
                continue
            start = time.perf_counter()
            result = fixer.correct("How many?", sql)
            seconds = time.perf_counter() - start
            rss, peak = memory_mb()
            worker = worker_peak_mb()
            normal = fixer.correct(NORMAL[0], NORMAL[1])
            ok = not normal.error and check.execute(normal.sql).rows == [(NORMAL[2],)]
            row = PathoRow(engine, name, round(seconds, 2), reason(result), round(rss, 1), round(peak, 1), bool(ok),
                           round(worker, 1))
            echo(f"{engine:8s} {name:16s} {row.seconds:6.1f} s  RSS {row.rss_mb:.0f} MB  peak {row.peak_mb:.0f} MB  "
                 f"worker peak {row.worker_peak_mb:.0f} MB  "
                 f"next {'served' if row.next_ok else 'FAILED'}  {row.reason[:120]}")
            rows.append(row)
    finally:
        fixer.close()
        check.close()
    return rows


def widest_in_list(max_body_bytes: int, step: int = 500) -> tuple[int, dict[str, str]]:
    """The widest IN list (:func:`in_list`, a multiple of ``step`` literals) whose request body fits
    ``max_body_bytes``, and that body."""
    import json as jsonlib

    n, body = 0, {}
    while True:
        candidate = {"db_id": "world_1", "question": "Which cities?", "sql": in_list(n + step)}
        if len(jsonlib.dumps(candidate)) > max_body_bytes:
            return n, body
        n, body = n + step, candidate


def wide_requests(url: str, body: dict, wide: int = 4) -> dict[str, tuple[int, float, float, dict]]:
    """``wide`` concurrent requests of ``body`` to ``url`` (a running service), a normal request sent while
    they run and another once they are answered: ``{name: (status, seconds, finished at, answer)}``, the
    names ``wide0``..., ``during``, ``after``."""
    import threading

    import httpx

    normal = {"db_id": "world_1", "question": NORMAL[0], "sql": NORMAL[1]}
    answers: dict[str, tuple[int, float, float, dict]] = {}
    with httpx.Client(base_url=url, timeout=300) as client:
        client.post("/correct", json=normal)  # the database opened once, as on a running service

        def post(name: str, payload: dict) -> None:
            began = time.perf_counter()
            r = client.post("/correct", json=payload)
            answers[name] = (r.status_code, time.perf_counter() - began, time.monotonic(), r.json())

        threads = [threading.Thread(target=post, args=(f"wide{i}", body)) for i in range(wide)]
        for t in threads:
            t.start()
        time.sleep(0.1)
        post("during", normal)
        for t in threads:
            t.join()
        post("after", normal)
    return answers


def normal_ok(answer: tuple[int, float, float, dict]) -> bool:
    """Whether a normal request of :func:`wide_requests` was answered right."""
    status, _, _, body = answer
    return status == 200 and body.get("sql") == NORMAL[1] and not body.get("error")


def run_service(db_root: str, echo: Callable[[str], None] = lambda line: None, wide: int = 4) -> PathoRow:
    """``wide`` concurrent requests of the widest IN list the service accepts (its body limit, default
    settings) through ``sqlmend serve``'s app on loopback, a normal request sent while they run and
    another after they are answered (:func:`wide_requests`): the row's seconds are the slower normal
    answer (the target: 2 s), its reason says each, ``next_ok`` that both were right."""
    from sqlmend.pipeline import PipelineConfig
    from sqlmend.service import ServiceSettings, create_app
    from sqlmend.service.runner import BackgroundServer

    settings = ServiceSettings(log_requests=False)
    n, body = widest_in_list(settings.max_body_bytes)
    app = create_app(PipelineConfig(), db_root=db_root, settings=settings)
    with BackgroundServer(app) as server:
        answers = wide_requests(server.url, body, wide)
    rss, peak = memory_mb()
    widest = [answers[f"wide{i}"] for i in range(wide)]
    reason = (f"{wide} requests of {n:,} literals: {', '.join(f'{a[0]} in {a[1]:.1f} s' for a in widest)}; a normal "
              f"request during them answered in {answers['during'][1]:.2f} s, after them in {answers['after'][1]:.2f} s")
    row = PathoRow("sqlite", f"service: {wide} x widest IN list", round(max(answers["during"][1], answers["after"][1]), 2),
                   reason, round(rss, 1), round(peak, 1), normal_ok(answers["during"]) and normal_ok(answers["after"]))
    echo(f"service  {row.query}  {row.reason}")
    return row


def copy_tables(sqlite_path: Path, execute: Callable[[str], Any], insert: Callable[[str, list[tuple]], Any]) -> None:
    """Copy a SQLite file's tables into another engine: a column all integers is BIGINT, all numbers
    DOUBLE PRECISION, anything else TEXT (Spider's declared types are loose); names lower-cased."""
    src = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    src.text_factory = lambda b: b.decode("utf-8", errors="replace")
    try:
        names = [r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                           "AND name NOT LIKE 'sqlite%'")]
        for name in names:
            cur = src.execute(f"SELECT * FROM {quote_ident(name)}")
            cols = [d[0].lower() for d in cur.description]
            rows = [tuple(v.replace("\x00", "") if isinstance(v, str) else v for v in r) for r in cur.fetchall()]
            types = []
            for k in range(len(cols)):
                kinds = {type(r[k]) for r in rows if r[k] is not None}
                types.append("BIGINT" if kinds <= {int} else "DOUBLE PRECISION" if kinds <= {int, float} else "TEXT")
            rows = [tuple(str(v) if t == "TEXT" and v is not None else v for v, t in zip(r, types)) for r in rows]
            execute(f"CREATE TABLE {quote_ident(name.lower())} ("
                    + ", ".join(f"{quote_ident(c)} {t}" for c, t in zip(cols, types)) + ")")
            if rows:
                insert(f"INSERT INTO {quote_ident(name.lower())} VALUES ({', '.join(['%s'] * len(cols))})", rows)
    finally:
        src.close()


def run_pathological(engines: list[str], work: Path, timeout: float | None = None, only: list[str] | None = None,
                     data_root: str | None = None, echo: Callable[[str], None] = lambda line: None) -> list[PathoRow]:
    """Run :func:`run_engine` on world_1 for each of ``engines`` (sqlite, postgres, duckdb; ``service``:
    :func:`run_service`).

    Args:
        engines: the engines.
        work: a folder for the DuckDB copy.
        timeout: the Corrector's ``timeout`` (default: the pipeline's, 30 s).
        only: query names to run (default: all).
        data_root: the folder holding ``spider/``.
        echo: receives a line per query.
    """
    from sqlmend.testing.pgserver import READER, PgServer, find_bin
    from sqlmend.data.datasets import load_dataset

    source = Path(load_dataset("spider-dev", data_root=data_root).db_path("world_1"))
    rows: list[PathoRow] = []
    for engine in engines:
        if engine == "service":
            rows.append(run_service(str(source.parent.parent), echo))
        elif engine == "sqlite":
            rows += run_engine("sqlite", str(source), timeout, only, echo)
        elif engine == "duckdb":
            import duckdb

            work.mkdir(parents=True, exist_ok=True)
            target = work / "world_1.duckdb"
            if not target.exists():
                conn = duckdb.connect(str(target))
                try:
                    copy_tables(source, conn.execute,
                                lambda sql, rows: conn.executemany(sql.replace("%s", "?"), rows))
                finally:
                    conn.close()
            rows += run_engine("duckdb", str(target), timeout, only, echo)
        elif engine == "postgres":
            import psycopg

            if find_bin() is None:
                echo("postgres: not measured (no PostgreSQL server binaries)")
                continue
            with PgServer.start() as server:
                server.admin("CREATE DATABASE world_1")
                with psycopg.connect(server.url("world_1", user="postgres"), autocommit=True) as conn:
                    copy_tables(source, conn.execute, lambda sql, rows: conn.cursor().executemany(sql, rows))
                    conn.execute(f"GRANT USAGE ON SCHEMA public TO {READER}")
                    conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER}")
                rows += run_engine("postgres", server.url("world_1"), timeout, only, echo)
        else:
            raise ValueError(f"unknown engine {engine!r}; known: sqlite, postgres, duckdb, service")
    return rows

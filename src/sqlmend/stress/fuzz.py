"""``sqlmend bench fuzz``: what no one thought of, measured: mutated SQL, odd questions and malformed
files through the whole correction path.

Each example is made from one seed (``random.Random(f"{seed}:{i}")``), so a run is reproducible
and one example can be replayed alone (:func:`make_example`). Three kinds:

* **query** (most): a Spider-dev gold or prediction on one of a few Spider databases, or a query on
  the example database (:func:`build_example_db`), mutated by a few of :data:`SQL_MUTATIONS`
  (tokens dropped, swapped, duplicated; quotes and parentheses unbalanced; keywords of other
  dialects; comments, unicode, lone surrogates, NUL and control characters; very long and deeply
  nested queries; several statements; writes), with a question and evidence mutated the same way.
  It is corrected (or checked) through the Python API's path (the stages of a
  :class:`~sqlmend.api.Corrector` on a connection that counts its work), one in
  ``http_every`` through the HTTP service (a real server on loopback);
* **file** (one in ``file_every``): a prediction or task file made malformed
  (:data:`FILE_MUTATIONS`: bad JSON, wrong lengths, wrong types, invalid UTF-8, BOM, NUL) read by
  the batch readers (:func:`sqlmend.data.load_predictions`, :func:`sqlmend.data.read_tasks`).

The properties, each a failure kind when broken:

* ``unhandled``: an exception escaped, or an item's error or a stage's failure is not a typed
  sqlmend error (:mod:`sqlmend.errors`; ``"empty SQL"`` is the one untyped item error), or the
  service answered 500; a file reader raised anything but a ``DatasetError`` naming the file, or
  returned a task whose fields are not text;
* ``changed database``: a database file's bytes (size, mtime; SHA-256 at the end) or its folder
  changed;
* ``past limit``: the item's counted work (SQLite VM instructions, thousands) went past
  :data:`ITEM_QUERIES` queries at the run's per-query limit, or a wall-clock safety net fired
  (``DeadlineExceeded``, a 504);
* ``bad output``: the output is neither the input nor one query that parses and runs read-only.

Wall seconds are recorded too (the slowest examples are listed), never judged.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import random
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmend import errors
from sqlmend.db.base import WORK_PER_SECOND
from sqlmend.db.sqlite import SqliteDatabase
from sqlmend.errors import DatasetError, SqlmendError
from sqlmend.types import Task

#: Spider-dev databases the queries run on (small and varied: keys, text, numbers, dates).
DATABASES = ("concert_singer", "pets_1", "car_1", "flight_2", "employee_hire_evaluation", "dog_kennels",
             "student_transcripts_tracking", "world_1")
#: The example database made by :func:`build_example_db` (committed as tests/stress/fuzz/data/fuzz.sqlite).
EXAMPLE_DB = "fuzz"
#: An item may do at most this many queries' work at the run's per-query limit.
ITEM_QUERIES = 10
#: The kinds of failure, in the order they are printed.
KINDS = ("unhandled", "changed database", "past limit", "bad output")
#: The one item error that is not ``Kind: message`` (an empty or blank SQL).
EMPTY_SQL = "empty SQL"
#: The names of sqlmend's typed errors.
TYPED = frozenset(n for n, c in vars(errors).items() if isinstance(c, type) and issubclass(c, SqlmendError))

# --- the example database -----------------------------------------------------

_EXAMPLE_SCHEMA = """
CREATE TABLE city (city_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT, population INTEGER);
CREATE TABLE person (person_id INTEGER PRIMARY KEY, name TEXT, age INTEGER, city_id INTEGER,
                     "group" TEXT, note TEXT, FOREIGN KEY (city_id) REFERENCES city(city_id));
CREATE TABLE "order items" (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES person(person_id),
                            item TEXT, price REAL, ordered_on TEXT);
"""
_CITIES = [(1, "Paris", "France", 2100000), (2, "São Paulo", "Brazil", 12300000), (3, "Zürich", "Switzerland", 420000),
           (4, "O'Fallon", "United States", 30000), (5, "東京", "Japan", 13900000), (6, "Kraków", None, 780000)]
_PEOPLE = [(1, "Ana", 34, 1, "a", "likes 'quotes'"), (2, "Bo", 19, 2, "b", None), (3, "Chloé", 52, 3, "a", "ß and ẞ"),
           (4, "Dan", None, 4, None, 'say "hi"'), (5, "Émile", 27, 5, "c", "emoji 🙂"), (6, "Fay", 41, None, "b", ""),
           (7, "ana", 34, 1, "a", "lower-case twin")]
_ORDERS = [(1, 1, "book", 12.5, "2024-01-03"), (2, 1, "pen", 1.2, "2024-02-11"), (3, 3, "lamp", 40.0, "2023-12-30"),
           (4, 5, "tea", 7.0, "2024-03-01"), (5, 2, "book", 11.0, None), (6, 7, "chair", 85.5, "2024-01-03")]
#: Queries on the example database (its golds: some of them right, none wrong on purpose).
EXAMPLE_QUERIES = (
    "SELECT name FROM person WHERE age > 30",
    "SELECT count(*) FROM city WHERE country = 'France'",
    "SELECT p.name, c.name FROM person AS p JOIN city AS c ON p.city_id = c.city_id",
    "SELECT country, sum(population) FROM city GROUP BY country ORDER BY sum(population) DESC LIMIT 3",
    "SELECT name FROM person WHERE \"group\" = 'a' AND note LIKE '%quote%'",
    "SELECT item, avg(price) FROM \"order items\" GROUP BY item HAVING count(*) > 1",
    "SELECT name FROM city WHERE city_id NOT IN (SELECT city_id FROM person WHERE city_id IS NOT NULL)",
    "SELECT T1.name FROM person AS T1 JOIN \"order items\" AS T2 ON T1.person_id = T2.person_id "
    "WHERE T2.ordered_on BETWEEN '2024-01-01' AND '2024-12-31'",
    "SELECT DISTINCT name FROM person WHERE name = 'ana' COLLATE NOCASE",
    "WITH big AS (SELECT * FROM city WHERE population > 1000000) SELECT name FROM big ORDER BY name",
    "SELECT name FROM city WHERE name = 'São Paulo' OR name = 'Zürich'",
    "SELECT max(age) - min(age) FROM person",
    "SELECT name FROM person UNION SELECT name FROM city",
    "SELECT CASE WHEN age >= 30 THEN 'old' ELSE 'young' END, count(*) FROM person GROUP BY 1",
)
_EXAMPLE_QUESTIONS = ("Who is older than 30?", "How many cities are in France?", "Which person lives where?",
                      "Which three countries have the most people?", "Who of group a likes quotes?")


def build_example_db(path: str | Path) -> Path:
    """Write the example database (three tables, keys, a quoted table name, a reserved-word column,
    unicode, quotes and NULLs in values) to ``path``, replacing any file there. The same bytes each
    time for one SQLite version."""
    path = Path(path)
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    try:
        con.executescript(_EXAMPLE_SCHEMA)
        con.executemany("INSERT INTO city VALUES (?, ?, ?, ?)", _CITIES)
        con.executemany("INSERT INTO person VALUES (?, ?, ?, ?, ?, ?)", _PEOPLE)
        con.executemany('INSERT INTO "order items" VALUES (?, ?, ?, ?, ?)', _ORDERS)
        con.commit()
    finally:
        con.close()
    return path


# --- mutations -----------------------------------------------------------------

_DIALECT_WORDS = ("TOP 5", "ILIKE", "::int", "`name`", "[name]", "QUALIFY", "FETCH FIRST 1 ROWS ONLY", "NVL(",
                  "ISNULL(", "DATE_SUB(NOW(), INTERVAL 1 DAY)", "STRAIGHT_JOIN", "LIMIT 1, 2", "OFFSET 2 ROWS",
                  "SELECT TOP 1", "CONNECT BY PRIOR", "PIVOT", "LATERAL", "@@version", "$1", "?", ":name",
                  "ARRAY[1,2]", "x -> 'a'", "REGEXP '^a'", "GLOB '*'", "IIF(1,2,3)", "DECODE(", "ROWNUM",
                  "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT n FROM r")
_WRITES = ("; DROP TABLE {t}", "; DELETE FROM {t}", "; UPDATE {t} SET rowid = 0", "; INSERT INTO {t} DEFAULT VALUES",
           "; ATTACH DATABASE 'x.db' AS x", "; PRAGMA writable_schema = ON", "; VACUUM", "; CREATE TABLE z (a)",
           "; VACUUM INTO 'copy.db'", "; PRAGMA journal_mode = WAL", "; SELECT 1", "; ; ;", "; BEGIN; COMMIT")
_WHOLE_WRITES = ("DELETE FROM {t}", "UPDATE {t} SET rowid = rowid", "INSERT INTO {t} SELECT * FROM {t}",
                 "DROP TABLE {t}", "REPLACE INTO {t} SELECT * FROM {t}", "PRAGMA table_info({t})",
                 "SELECT load_extension('x')", "SELECT readfile('/etc/passwd')", "SELECT writefile('x', 'y')",
                 "ATTACH ':memory:' AS m", "EXPLAIN SELECT 1", "ANALYZE", "REINDEX", "DETACH m")
#: Lone surrogates: what a client's ``"\\ud800"`` or an undecodable command-line byte gives.
_SURROGATES = ("\ud800", "\udfff", "\udcff")
_ODD_TEXT = ("\x00", "\x01", "\x07", "\x1b[31m", "\r", "\t", "\x0b", "\x0c", "\u200b", "\u202e", "\ufeff", "é", "ß", "İ", "🙂", "東京", "\u0301", "\U0010ffff", "\\", "%", "_", "'", '"', "`", "$$", "\n")


def _tokens(sql: str) -> list[str]:
    """The text split into words and single punctuation (a rough token list; spaces are lost)."""
    out, word = [], ""
    for ch in sql:
        if ch.isalnum() or ch in "_.":
            word += ch
            continue
        if word:
            out.append(word)
            word = ""
        if not ch.isspace():
            out.append(ch)
    return out + ([word] if word else [])


def _retoken(rng: random.Random, sql: str, edit: Callable[[list[str], int], None]) -> str:
    toks = _tokens(sql)
    if not toks:
        return sql
    edit(toks, rng.randrange(len(toks)))
    return " ".join(toks)


def _drop(rng: random.Random, sql: str, table: str) -> str:
    return _retoken(rng, sql, lambda t, i: t.pop(i))


def _swap(rng: random.Random, sql: str, table: str) -> str:
    def swap(t: list[str], i: int) -> None:
        j = min(i + 1, len(t) - 1)
        t[i], t[j] = t[j], t[i]
    return _retoken(rng, sql, swap)


def _duplicate(rng: random.Random, sql: str, table: str) -> str:
    return _retoken(rng, sql, lambda t, i: t.insert(i, t[i]))


def _insert_at(rng: random.Random, sql: str, text: str) -> str:
    at = rng.randrange(len(sql) + 1)
    return sql[:at] + text + sql[at:]


def _unbalance(rng: random.Random, sql: str, table: str) -> str:
    marks = [i for i, ch in enumerate(sql) if ch in "()'\"`["]
    if marks and rng.random() < 0.5:
        i = rng.choice(marks)
        return sql[:i] + sql[i + 1:]
    return _insert_at(rng, sql, rng.choice("()'\"`[]"))


def _dialect(rng: random.Random, sql: str, table: str) -> str:
    return _insert_at(rng, sql, f" {rng.choice(_DIALECT_WORDS)} ")


def _comment(rng: random.Random, sql: str, table: str) -> str:
    return _insert_at(rng, sql, rng.choice((" -- a comment\n", " /* c */ ", " /* unterminated", " --", " #x\n",
                                            " /* nested /* c */ */ ", "\n-- DROP TABLE x;\n")))


def _odd_chars(rng: random.Random, n: int) -> str:
    """``n`` odd characters; a lone surrogate among them now and then."""
    return "".join(rng.choice(_SURROGATES if rng.random() < 0.02 else _ODD_TEXT) for _ in range(n))


def _odd(rng: random.Random, sql: str, table: str) -> str:
    return _insert_at(rng, sql, _odd_chars(rng, rng.randint(1, 3)))


def _long(rng: random.Random, sql: str, table: str) -> str:
    """Very long: a condition repeated up to ~1 MB (rarely), or a long literal or IN list."""
    size = rng.choice((2_000, 20_000, 200_000, 1_000_000)) if rng.random() < 0.05 else rng.choice((500, 5_000))
    pick = rng.randrange(3)
    if pick == 0:
        return f"{sql} {'AND' if ' where ' in sql.lower() else 'WHERE'} " + " OR ".join(
            ["1 = 1"] * (size // 9))
    if pick == 1:
        return f"SELECT '{'x' * size}' FROM {table}"
    return f"SELECT * FROM {table} WHERE rowid IN ({', '.join(str(i) for i in range(size // 7))})"


def _nested(rng: random.Random, sql: str, table: str) -> str:
    """Deeply nested: parentheses, subqueries or CASEs, up to thousands deep."""
    depth = rng.choice((30, 100, 300, 1_000, 3_000, 10_000)) if rng.random() < 0.3 else rng.choice((5, 20, 60))
    pick = rng.randrange(4)
    if pick == 0:
        return f"SELECT {'(' * depth}1{')' * depth} FROM {table}"
    if pick == 1:
        return "SELECT * FROM " + "(SELECT * FROM " * depth + table + ")" * depth
    if pick == 2:
        return "SELECT " + "CASE WHEN 1 THEN " * depth + "1" + " END" * depth + f" FROM {table}"
    return f"{sql} {'AND' if ' where ' in sql.lower() else 'WHERE'} " + "NOT " * depth + "1"


def _statements(rng: random.Random, sql: str, table: str) -> str:
    return sql.rstrip("; ") + rng.choice(_WRITES).format(t=table)


def _write(rng: random.Random, sql: str, table: str) -> str:
    return rng.choice(_WHOLE_WRITES).format(t=table)


def _case(rng: random.Random, sql: str, table: str) -> str:
    return "".join(ch.swapcase() if rng.random() < 0.3 else ch for ch in sql)


def _blank(rng: random.Random, sql: str, table: str) -> str:
    return rng.choice(("", " ", "\n\t", ";", "--", "/* */", "\x00", "NULL", "SELECT", "SELECT *", "FROM"))


def _truncate(rng: random.Random, sql: str, table: str) -> str:
    return sql[:rng.randrange(len(sql) + 1)]


#: The SQL mutations, by name: ``(rng, sql, a table of its database) -> sql``.
SQL_MUTATIONS: dict[str, Callable[[random.Random, str, str], str]] = {
    "drop": _drop, "swap": _swap, "duplicate": _duplicate, "unbalance": _unbalance, "dialect": _dialect,
    "comment": _comment, "odd": _odd, "long": _long, "nested": _nested, "statements": _statements,
    "write": _write, "case": _case, "blank": _blank, "truncate": _truncate,
}
#: How often each mutation is drawn (relative weights: the cheap token edits most).
_WEIGHTS = {"drop": 6, "swap": 6, "duplicate": 4, "unbalance": 4, "dialect": 4, "comment": 3, "odd": 4,
            "long": 1, "nested": 2, "statements": 3, "write": 2, "case": 2, "blank": 1, "truncate": 2}


def mutate(rng: random.Random, sql: str, table: str, names: list[str] | None = None) -> tuple[str, list[str]]:
    """Apply mutations to ``sql``: those ``names`` gives, else one to three drawn by weight.

    Returns:
        The mutated text and the names applied, in order.
    """
    if names is None:
        names = rng.choices(list(_WEIGHTS), weights=list(_WEIGHTS.values()), k=rng.choice((1, 1, 2, 3)))
    for name in names:
        sql = SQL_MUTATIONS[name](rng, sql, table)
    return sql, names


def mutate_text(rng: random.Random, text: str) -> str:
    """An odd question or evidence: empty, huge, SQL in it, control characters, unicode."""
    pick = rng.randrange(8)
    if pick == 0:
        return text
    if pick == 1:
        return ""
    if pick == 2:
        return text * rng.choice((50, 2_000))
    if pick == 3:
        return text + "'; DROP TABLE city; --"
    if pick == 4:
        return _odd_chars(rng, rng.randint(1, 40))
    if pick == 5:
        return _insert_at(rng, text, rng.choice(("\x00", "\x00\x00", "\x1b[2J", rng.choice(_SURROGATES))))
    if pick == 6:
        return "{{ $name }} ${question} %s {0} <|endoftext|> ```sql\nSELECT 1\n```"
    return text.upper()


# --- examples ------------------------------------------------------------------


@dataclass
class Example:
    """One generated input: a query (``kind="query"``) or a malformed file (``kind="file"``)."""

    index: int
    kind: str
    door: str = "api"  # api | check | http (queries), or the reader's format (files)
    db_id: str = ""
    question: str = ""
    sql: str = ""
    evidence: str = ""
    recipe: list[str] = field(default_factory=list)
    content: bytes = b""
    name: str = ""

    def describe(self) -> str:
        head = f"#{self.index} {self.kind}/{self.door}"
        if self.kind == "file":
            return f"{head} {self.name} {'+'.join(self.recipe)}"
        sql = self.sql if len(self.sql) <= 120 else self.sql[:117] + "..."
        return f"{head} {self.db_id} {'+'.join(self.recipe)}: {sql!r}"


@dataclass
class Seeds:
    """What examples are made from: queries and questions per database, tables per database."""

    queries: dict[str, list[tuple[str, str]]]
    tables: dict[str, list[str]]


def load_seeds(spider_dir: Path | None, databases: tuple[str, ...] = DATABASES) -> Seeds:
    """The Spider-dev golds and the shared predictions on ``databases``, and the example queries
    (those alone without ``spider_dir``)."""
    dev = json.loads((spider_dir / "dev.json").read_text(encoding="utf-8")) if spider_dir else []
    queries: dict[str, list[tuple[str, str]]] = {db: [] for db in databases}
    preds_dir = spider_dir.parent / "predictions" / "spider-dev" if spider_dir else None
    files = sorted(preds_dir.glob("*.sql")) if preds_dir and preds_dir.is_dir() else []
    lines = [f.read_text(encoding="utf-8").splitlines() for f in files]
    for i, item in enumerate(dev):
        if item["db_id"] in queries:
            queries[item["db_id"]].append((item["question"], item["query"]))
            for pred in lines:
                if i < len(pred):
                    queries[item["db_id"]].append((item["question"], pred[i]))
    queries[EXAMPLE_DB] = [(_EXAMPLE_QUESTIONS[i % len(_EXAMPLE_QUESTIONS)], q)
                           for i, q in enumerate(EXAMPLE_QUERIES)]
    return Seeds(queries={k: v for k, v in queries.items() if v}, tables={})


def make_example(seeds: Seeds, seed: int, index: int, http_every: int = 10, file_every: int = 20) -> Example:
    """The example ``index`` of the run with ``seed`` (the same each time, whatever ran before)."""
    rng = random.Random(f"{seed}:{index}")
    if file_every and rng.randrange(file_every) == 0:
        fmt = rng.choice(FILE_FORMATS)
        content, recipe = malformed_file(rng, fmt)
        return Example(index, "file", door=fmt, recipe=recipe, content=content, name=f"{fmt}-{index}")
    db_id = rng.choice(sorted(seeds.queries))
    question, sql = rng.choice(seeds.queries[db_id])
    table = rng.choice(seeds.tables.get(db_id) or ["t"])
    mutated, recipe = mutate(rng, sql, table) if rng.random() < 0.9 else (sql, [])
    door = "http" if http_every and rng.randrange(http_every) == 0 else rng.choice(("api", "api", "api", "check"))
    evidence = mutate_text(rng, "") if rng.random() < 0.3 else ""
    return Example(index, "query", door=door, db_id=db_id, question=mutate_text(rng, question), sql=mutated,
                   evidence=evidence, recipe=recipe)


# --- malformed files ------------------------------------------------------------

#: The batch readers' formats a file example is written in.
FILE_FORMATS = ("spider-pred", "jsonl-pred", "bird-pred", "jsonl-tasks", "spider-tasks")
_FILE_TASKS = [Task(question_id=str(i), db_id=EXAMPLE_DB, question=q, sql="") for i, q in enumerate(_EXAMPLE_QUESTIONS)]
_ODD_VALUES: tuple[Any, ...] = (None, 1, 2.5, True, [], ["x"], {}, {"a": 1}, "", "\x00", "\ud800", "1" * 300)


def _file_records(fmt: str) -> Any:
    sqls = [EXAMPLE_QUERIES[i] for i in range(len(_FILE_TASKS))]
    if fmt == "spider-pred":
        return sqls
    if fmt == "jsonl-pred":
        return [{"question_id": t.question_id, "sql": s} for t, s in zip(_FILE_TASKS, sqls)]
    if fmt == "bird-pred":
        return {str(i): f"{s}\t----- bird -----\t{EXAMPLE_DB}" for i, s in enumerate(sqls)}
    if fmt == "jsonl-tasks":
        return [{"question_id": t.question_id, "db_id": t.db_id, "question": t.question, "sql": s}
                for t, s in zip(_FILE_TASKS, sqls)]
    return [{"db_id": t.db_id, "question": t.question, "query": s} for t, s in zip(_FILE_TASKS, sqls)]


def _spoil_record(rng: random.Random, records: Any) -> Any:
    """One value of one record replaced by a value of another type (or removed), or records cut/added."""
    if isinstance(records, dict):
        keys = list(records)
        key = rng.choice(keys)
        pick = rng.randrange(3)
        if pick == 0:
            records[key] = rng.choice(_ODD_VALUES)
        elif pick == 1:
            records[rng.choice(("-1", "x", "99", "1.0", " 1"))] = records.pop(key)
        else:
            del records[key]
        return records
    i = rng.randrange(len(records))
    pick = rng.randrange(4)
    if pick == 0 and isinstance(records[i], dict):
        key = rng.choice(sorted(records[i]))
        if rng.random() < 0.3:
            del records[i][key]
        else:
            records[i][key] = rng.choice(_ODD_VALUES)
    elif pick == 1:
        records.insert(i, rng.choice(_ODD_VALUES))
    elif pick == 2:
        del records[i]
    else:
        records.insert(i, records[i])
    return records


def _write_records(fmt: str, records: Any) -> bytes:
    if fmt == "spider-pred":
        return "".join(f"{r}\n" for r in records).encode("utf-8", "surrogatepass")
    if fmt in ("jsonl-pred", "jsonl-tasks"):
        return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")
    return json.dumps(records, indent=1).encode("utf-8")


def _spoil_bytes(rng: random.Random, data: bytes, name: str) -> bytes:
    at = rng.randrange(len(data) + 1)
    if name == "bom":
        return b"\xef\xbb\xbf" + data
    if name == "invalid-utf8":
        return data[:at] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80")) + data[at:]
    if name == "latin-1":
        return data[:at] + "café".encode("latin-1") + data[at:]
    if name == "utf-16":
        return data.decode("utf-8", "replace").encode("utf-16")
    if name == "nul":
        return data[:at] + b"\x00" + data[at:]
    if name == "crlf":
        return data.replace(b"\n", b"\r\n")
    if name == "cut":
        return data[:at]
    if name == "junk-line":
        line = data.find(b"\n", at)
        return data[:line + 1] + rng.choice((b"{not json\n", b"[1, 2]\n", b"null\n", b"\"x\"\n", b"}\n")) + \
            data[line + 1:] if line >= 0 else data + b"\n{\n"
    return b""  # empty


#: Byte-level spoils of a file (the record-level one is ``record``).
FILE_MUTATIONS = ("record", "bom", "invalid-utf8", "latin-1", "utf-16", "nul", "crlf", "cut", "junk-line", "empty")


def malformed_file(rng: random.Random, fmt: str) -> tuple[bytes, list[str]]:
    """A file of ``fmt`` spoilt by one or two of :data:`FILE_MUTATIONS`; the spoils applied."""
    names = rng.sample(FILE_MUTATIONS, rng.choice((1, 1, 2)))
    records = _file_records(fmt)
    if "record" in names:
        for _ in range(rng.randint(1, 2)):
            records = _spoil_record(rng, records)
    data = _write_records(fmt, records)
    for name in names:
        if name != "record":
            data = _spoil_bytes(rng, data, name)
    return data, names


def read_file(path: Path, fmt: str) -> list[Task] | dict[str, str]:
    """Read a file example with the batch reader of its format (raises as the reader does)."""
    from sqlmend.data import load_predictions, read_tasks
    from sqlmend.data.datasets import Dataset

    if fmt.endswith("-pred"):
        return load_predictions(path, Dataset("fuzz", list(_FILE_TASKS)),
                                fmt={"spider-pred": "spider", "jsonl-pred": "jsonl", "bird-pred": "bird"}[fmt])
    return read_tasks(path, fmt={"jsonl-tasks": "jsonl", "spider-tasks": "spider"}[fmt])[0]


# --- the run -------------------------------------------------------------------


class CountedSqlite(SqliteDatabase):
    """A read-only SQLite connection that also adds up the work of every query it ran
    (:meth:`total_work`, thousands of VM instructions; introspection and probes included)."""

    def __init__(self, path: str | Path) -> None:
        self._done = 0
        super().__init__(path)

    def _begin(self) -> None:
        self._done += self._ticks
        super()._begin()

    def start_item(self) -> None:
        """Count from zero: an item starts."""
        self._done = self._ticks = 0

    def total_work(self) -> int:
        return self._done + self._ticks


@dataclass
class Failure:
    """One broken property: its kind, the example and what happened."""

    kind: str
    example: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "example": self.example, "detail": self.detail}


@dataclass
class FuzzReport:
    """What a run found: examples by kind and door, failures, limits and seconds."""

    examples: int = 0
    seed: int = 0
    failures: list[Failure] = field(default_factory=list)
    changed_databases: set[str] = field(default_factory=set)
    doors: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    max_work: int = 0
    work_limit: int = 0
    slowest: list[tuple[float, str]] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, kind: str) -> int:
        if kind == "changed database":
            return len(self.changed_databases)
        return sum(f.kind == kind for f in self.failures)

    def line(self) -> str:
        """The run's last line."""
        return (f"examples {self.examples}, unhandled {self.count('unhandled')}, changed databases "
                f"{self.count('changed database')}, past limit {self.count('past limit')}, "
                f"seconds {self.seconds:.0f}")

    def ok(self) -> bool:
        return not self.failures and not self.changed_databases

    def to_dict(self) -> dict[str, Any]:
        return {"examples": self.examples, "seed": self.seed, "failures": [f.to_dict() for f in self.failures],
                "changed_databases": sorted(self.changed_databases), "doors": dict(self.doors),
                "outcomes": dict(self.outcomes), "max_work": self.max_work, "work_limit": self.work_limit,
                "slowest": self.slowest, "seconds": round(self.seconds, 1), "line": self.line()}


def _typed(error: str | None) -> bool:
    return error is None or error == EMPTY_SQL or error.split(":", 1)[0] in TYPED


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Fuzzer:
    """The parts one run shares: private copies of the databases, the stages, a counting
    connection per database, and (when some examples go through it) the HTTP service.

    Args:
        work: a folder made afresh: ``<work>/db/<db_id>/<db_id>.sqlite`` and the file examples.
        spider_dir: the Spider folder (``dev.json``, ``database/``); None: the example database only.
        databases: the Spider databases to use.
        timeout: seconds (of work, on SQLite) per SQL execution, in every stage.
        stages: the stages (default: the default ones: static, memory, search, refine, guard).
    """

    def __init__(self, work: Path, spider_dir: Path | None, databases: tuple[str, ...] = DATABASES,
                 timeout: float = 2.0, stages: list[str] | None = None):
        from sqlmend.api import check_config
        from sqlmend.pipeline import Pipeline, PipelineConfig

        self.work = Path(work)
        shutil.rmtree(self.work, ignore_errors=True)
        self.root = self.work / "db"
        (self.work / "files").mkdir(parents=True)
        found = tuple(d for d in databases if spider_dir and (spider_dir / "database" / d / f"{d}.sqlite").is_file())
        for db_id in found:
            (self.root / db_id).mkdir(parents=True)
            shutil.copyfile(spider_dir / "database" / db_id / f"{db_id}.sqlite", self.root / db_id / f"{db_id}.sqlite")
        (self.root / EXAMPLE_DB).mkdir(parents=True)
        build_example_db(self.root / EXAMPLE_DB / f"{EXAMPLE_DB}.sqlite")
        self.seeds = load_seeds(spider_dir, found)
        self.paths = {db_id: self.root / db_id / f"{db_id}.sqlite" for db_id in (*found, EXAMPLE_DB)}
        self.hashes = {db_id: _sha(p) for db_id, p in self.paths.items()}
        self.listing = {db_id: sorted(p.parent.iterdir()) for db_id, p in self.paths.items()}
        self.config = PipelineConfig(stages=stages, timeout=timeout, workers=1)
        self.pipe = Pipeline(self.config, resolve=lambda stage: None, db_root=str(self.root))
        self.checker = Pipeline(check_config(self.config), resolve=self.pipe.resolve, db_root=str(self.root))
        self.dbs = {db_id: CountedSqlite(p) for db_id, p in self.paths.items()}
        for db_id, db in self.dbs.items():
            self.seeds.tables[db_id] = [t.name for t in db.schema().tables]
        self.work_limit = int(ITEM_QUERIES * timeout * WORK_PER_SECOND)
        self.server: Any = None

    # --- the doors ---------------------------------------------------------

    def _api(self, ex: Example) -> tuple[Any, int]:
        db = self.dbs[ex.db_id]
        db.start_item()
        task = Task(question_id=str(ex.index), db_id=ex.db_id, question=ex.question, sql=ex.sql,
                    evidence=ex.evidence, db=str(self.paths[ex.db_id]))
        pipe = self.checker if ex.door == "check" else self.pipe
        return pipe.correct(task, db=db), db.total_work()

    def _http(self, ex: Example) -> tuple[int, Any]:
        import httpx

        if self.server is None:
            from sqlmend.service import ServiceSettings, create_app
            from sqlmend.service.runner import BackgroundServer

            settings = ServiceSettings(deadline=120.0, max_body_bytes=4 * 1024 * 1024, log_requests=False)
            app = create_app(self.config, resolve=lambda stage: None, db_root=str(self.root), settings=settings)
            self.server = BackgroundServer(app).__enter__()
        body = {"db_id": ex.db_id, "question": ex.question, "sql": ex.sql, "evidence": ex.evidence,
                "question_id": str(ex.index)}
        # the body as a client's JSON library writes it: a lone surrogate escaped ("\\ud800"), never raw
        r = httpx.post(self.server.url + ("/check" if ex.door == "check" else "/correct"),
                       content=json.dumps(body).encode(), headers={"content-type": "application/json"},
                       timeout=300)
        try:
            answer = r.json()
        except ValueError:
            answer = r.text
        return r.status_code, answer

    # --- one example -------------------------------------------------------

    def run(self, ex: Example, report: FuzzReport) -> None:
        """Run one example and add what it broke to ``report``."""
        report.doors[ex.door if ex.kind == "query" else "file"] += 1
        start = time.perf_counter()
        if ex.kind == "file":
            self._file(ex, report)
        else:
            before = {db_id: _stamp(p) for db_id, p in self.paths.items()}
            try:
                self._query(ex, report)
            except Exception as exc:  # noqa: BLE001 - the property under test: nothing escapes
                report.failures.append(Failure("unhandled", ex.describe(), f"{type(exc).__name__}: {exc}"[:500]))
            for db_id, p in self.paths.items():
                if _stamp(p) != before[db_id] or sorted(p.parent.iterdir()) != self.listing[db_id]:
                    report.changed_databases.add(db_id)
                    report.failures.append(Failure("changed database", ex.describe(), db_id))
        seconds = time.perf_counter() - start
        report.examples += 1
        report.slowest = sorted([*report.slowest, (round(seconds, 2), ex.describe()[:160])], reverse=True)[:5]

    def _query(self, ex: Example, report: FuzzReport) -> None:
        def fail(kind: str, detail: str) -> None:
            report.failures.append(Failure(kind, ex.describe(), detail[:500]))

        if ex.door == "http":
            status, answer = self._http(ex)
            report.outcomes[f"http {status}"] += 1
            if status == 504:
                fail("past limit", "504: the request ran past its deadline")
            elif status >= 500 and status != 503 or not isinstance(answer, dict):
                fail("unhandled", f"HTTP {status}: {str(answer)[:300]}")
            elif status == 200:
                self._judge(ex, answer.get("sql"), answer.get("error"), answer.get("stages") or [], None, fail,
                            report)
            return
        correction, work = self._api(ex)
        body = correction.to_dict()
        self._judge(ex, body["sql"], body["error"], body["stages"], work, fail, report)

    def _judge(self, ex: Example, sql: str | None, error: str | None, stages: list[dict[str, Any]],
               work: int | None, fail: Callable[[str, str], None], report: FuzzReport) -> None:
        report.outcomes["error" if error else "changed" if sql != ex.sql else "unchanged"] += 1
        if not _typed(error):
            fail("unhandled", f"item error {error}")
        for s in stages:
            if s["status"] == "failed" and not _typed(s["note"]):
                fail("unhandled", f"stage {s['stage']} failed: {s['note']}")
        if error and error.startswith(("DeadlineExceeded", "QueryTimeout:")):
            fail("past limit", error)
        if work is not None:
            report.max_work = max(report.max_work, work)
            if work > self.work_limit:
                fail("past limit", f"{work:,} thousand VM instructions (limit {self.work_limit:,})")
        if sql is not None and sql != ex.sql and ex.door != "check":
            problem = self._runs_read_only(ex.db_id, sql)
            if problem:
                fail("bad output", f"{problem}: {sql[:200]!r}")

    def _runs_read_only(self, db_id: str, sql: str) -> str | None:
        """None when ``sql`` parses as one query and runs on a fresh read-only connection."""
        from sqlmend.sql import parse

        try:
            parse(sql, "sqlite")
            with SqliteDatabase(self.paths[db_id]) as db:
                db.execute(sql, timeout=self.config.timeout, max_rows=10)
        except SqlmendError as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def _file(self, ex: Example, report: FuzzReport) -> None:
        path = self.work / "files" / (ex.name + (".jsonl" if "jsonl" in ex.door else ".json"
                                                 if ex.door in ("bird-pred", "spider-tasks") else ".sql"))
        path.write_bytes(ex.content)
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # the readers' warnings on lines left out
                got = read_file(path, ex.door)
        except DatasetError as exc:
            report.outcomes["file refused"] += 1
            if str(path) not in str(exc) and path.name not in str(exc):
                report.failures.append(Failure("unhandled", ex.describe(), f"the error names no file: {exc}"))
            return
        except Exception as exc:  # noqa: BLE001 - the property under test
            report.failures.append(Failure("unhandled", ex.describe(), f"{type(exc).__name__}: {exc}"[:500]))
            return
        report.outcomes["file read"] += 1
        values = [v for t in got for v in (t.question_id, t.db_id, t.question, t.sql, t.evidence)] \
            if isinstance(got, list) else [*got, *got.values()]
        bad = [v for v in values if not isinstance(v, str)]
        if bad:
            report.failures.append(Failure("unhandled", ex.describe(), f"a record field is not text: {bad[0]!r}"))

    # --- the end -----------------------------------------------------------

    def finish(self, report: FuzzReport) -> None:
        """Compare every database's bytes with those at the start; close the connections and server."""
        for db in self.dbs.values():
            db.close()
        if self.server is not None:
            self.server.__exit__(None, None, None)
            self.server = None
        for db_id, p in self.paths.items():
            if _sha(p) != self.hashes[db_id]:
                report.changed_databases.add(db_id)


def run_fuzz(examples: int, seed: int, work: Path, spider_dir: Path | None, *, timeout: float = 2.0,
             http_every: int = 10, file_every: int = 20, stages: list[str] | None = None,
             progress: Callable[[], None] | None = None) -> FuzzReport:
    """Run ``examples`` examples of seed ``seed`` (see the module doc).

    Args:
        examples: how many.
        seed: the run's seed (example ``i`` is made from ``f"{seed}:{i}"``).
        work: a folder made afresh (private copies of the databases, the file examples).
        spider_dir: the Spider folder, or None for the example database only.
        timeout: seconds of work per SQL execution.
        http_every: one query example in this many goes through the HTTP service (0: none).
        file_every: one example in this many is a malformed file (0: none).
        stages: the stages (default: the default ones).
        progress: called after each example.

    Returns:
        The :class:`FuzzReport`.
    """
    start = time.perf_counter()
    fuzzer = Fuzzer(work, spider_dir, timeout=timeout, stages=stages)
    report = FuzzReport(seed=seed, work_limit=fuzzer.work_limit)
    try:
        for i in range(examples):
            fuzzer.run(make_example(fuzzer.seeds, seed, i, http_every, file_every), report)
            if progress:
                progress()
    finally:
        fuzzer.finish(report)
        report.seconds = time.perf_counter() - start
    return report


def markdown(report: FuzzReport, shown: int = 20) -> str:
    """Failures by kind (a few of each with their example), the doors, then :meth:`FuzzReport.line`."""
    lines = ["| failure | count |", "| --- | ---: |"]
    lines += [f"| {kind} | {report.count(kind)} |" for kind in KINDS]
    for kind in KINDS:
        for f in [f for f in report.failures if f.kind == kind][:shown]:
            lines.append(f"- {kind}: {f.example}\n    {f.detail}")
    lines.append("")
    lines.append("doors: " + ", ".join(f"{k} {v}" for k, v in sorted(report.doors.items())) + "; outcomes: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())))
    lines.append(f"largest item work: {report.max_work:,} thousand VM instructions (limit {report.work_limit:,}); "
                 "slowest: " + "; ".join(f"{s:.2f}s {d}" for s, d in report.slowest[:3]))
    lines.append(report.line())
    return "\n".join(lines)

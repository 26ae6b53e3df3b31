"""What the framework tests share: wrong queries real text-to-SQL systems wrote for Spider dev (line i of a
shared prediction file answers ``dev.json[i]``), the rows their gold query returns, and one open Corrector
per database."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from sqlmend.api import Corrector


@dataclass(frozen=True)
class Case:
    """A wrong prediction: what the application asks, the SQL its model wrote, what the gold query returns."""

    name: str
    db_id: str
    question: str
    sql: str
    gold: list[tuple]  # the gold query's rows, sorted

    def rows_are_gold(self, rows) -> bool:
        return sorted(tuple(r) for r in rows) == self.gold


#: (what is wrong, prediction file, line): a value in another case (the query returns nothing), a name not
#: in the schema (the engine refuses the query), a join on columns that share no value (nothing returned).
PREDICTIONS = [
    ("value in another case", "gpt-4_zero-shot.sql", 180),  # 'Jetblue Airways': the column holds 'JetBlue Airways'
    ("name not in the schema", "dail-sql_gpt-4.sql", 401),  # T1.Course: course_arrange has no Course
    ("failing join", "gpt-4_zero-shot.sql", 105),  # car_makers.Country = countries.CountryName
]
CASE_NAMES = [name for name, _, _ in PREDICTIONS]


def _gold(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return sorted(con.execute(sql).fetchall())


@pytest.fixture(scope="session")
def cases(data_dir, spider_db) -> dict[str, Case]:
    """The wrong predictions of :data:`PREDICTIONS`, by name."""
    dev = json.loads((data_dir / "spider" / "dev.json").read_text(encoding="utf-8"))
    out = {}
    for name, file, line in PREDICTIONS:
        sql = (data_dir / "predictions" / "spider-dev" / file).read_text(encoding="utf-8").splitlines()[line]
        item = dev[line]
        out[name] = Case(name, item["db_id"], item["question"], sql, _gold(spider_db(item["db_id"]), item["query"]))
    return out


@pytest.fixture(scope="session")
def correctors(cases, spider_db):
    """One Corrector per database of the cases (sqlmend's default stages), shared by the tests."""
    held = {c.db_id: Corrector(spider_db(c.db_id)) for c in cases.values()}
    yield held
    for fixer in held.values():
        fixer.close()


@dataclass(frozen=True)
class Copy:
    """A copy of a Spider database, and its SHA-256 when made."""

    path: Path
    digest: str

    def unchanged(self) -> bool:
        return _sha256(self.path) == self.digest


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def copied(tmp_path, spider_db):
    """``copied("flight_2")``: a :class:`Copy` of a Spider database (a write test checks it is unchanged)."""
    def copy(db_id: str) -> Copy:
        path = tmp_path / f"{db_id}.sqlite"
        shutil.copyfile(spider_db(db_id), path)
        return Copy(path, _sha256(path))

    return copy

"""The memory resolves columns scope by scope (sqlmend.sql.Resolver), on real Spider queries with subqueries.

Before the one resolver, memory kept an alias map of the whole query: a
subquery reusing the outer alias ``T2`` for another table overwrote it, and an
unqualified column was left unresolved whenever the query read two tables.
"""

from __future__ import annotations

from sqlmend.db import connect
from sqlmend.memory.activation import Activation, observe
from sqlmend.memory.adapt import adapt_mechanical
from sqlmend.memory.keys import sql_keys
from sqlmend.memory.retrieval import Candidate
from sqlmend.memory.stage import MemoryStage
from sqlmend.memory.store import MemoryStore
from sqlmend.stage import StageContext
from sqlmend.types import Task

# Spider train #1794 (small_bank_1), gold: the subquery reuses T2 for savings while the outer T2 is checking.
BANK = ("SELECT T2.balance FROM accounts AS T1 JOIN checking AS T2 ON T1.custid  =  T2.custid WHERE T1.name IN "
        "(SELECT T1.name FROM accounts AS T1 JOIN savings AS T2 ON T1.custid  =  T2.custid "
        "WHERE T2.balance  >  (SELECT avg(balance) FROM savings))")
# Spider dev #114 (car_1) as DAIL-SQL/GPT-4 predicted it: unqualified columns, 'France' stored as 'france'.
CARS = ("SELECT count(DISTINCT Maker) FROM car_makers WHERE Country IN "
        "(SELECT CountryId FROM countries WHERE CountryName = 'France')")


def test_a_reused_alias_resolves_to_the_table_of_its_own_subquery():
    keys = sql_keys(BANK)
    assert "col:select:checking.balance" in keys  # the outer T2 (a whole-query alias map said savings)
    assert "col:where:savings.balance" in keys  # the inner T2
    assert {"table:accounts", "table:checking", "table:savings"} <= keys
    assert "join:accounts.custid=checking.custid" in keys and "join:accounts.custid=savings.custid" in keys


def test_an_unqualified_column_of_a_subquery_resolves_to_the_subquery_table(spider_db):
    with connect(spider_db("car_1")) as db:
        [obs] = observe(db, CARS)
    assert obs == {"column": "countries.countryname", "op": "EQ", "literal": "France", "rows": 0,
                   "variants": ["france"]}


def test_adaptation_rewrites_only_the_columns_of_the_recorded_table(make_item):
    item = make_item("small_bank_1", "column_substitution",
                     {"wrong": "savings.balance", "right": "savings.custid", "clause": "where"}, ["k"], [])
    act = Activation(Candidate(item, "structural", 1.0), True, "test", dict(item.check.params))
    out = adapt_mechanical(BANK, [act])
    assert out.how == "mechanical", out.note
    assert out.candidate.startswith("SELECT T2.balance FROM accounts AS T1 JOIN checking AS T2")  # outer kept
    assert "WHERE T2.custid > (SELECT AVG(custid) FROM savings)" in out.candidate


def test_value_binding_repairs_the_subquery_comparison(tmp_path, spider_db, make_item):
    """The item dev #114's history gives; before, the unresolved ``CountryName`` was never observed."""
    params = {"column": "countries.countryname", "wrong": "France", "right": "france", "clause": "where"}
    with MemoryStore(tmp_path, "car_1") as store:
        store.add(make_item("car_1", "value_binding", params, ["cmp:countries.countryname", "table:countries"],
                            ["countries.countryname"]))
    with connect(spider_db("car_1")) as db:
        task = Task("114", "car_1", "What is the number of makers of care in France?", CARS)
        trace = MemoryStage.from_config({"store": str(tmp_path)}).run(StageContext(task=task, db=db, sql=CARS))
    assert trace.verdict.accepted, trace.note
    assert trace.candidate == CARS.replace("'France'", "'france'").replace("count(", "COUNT(")

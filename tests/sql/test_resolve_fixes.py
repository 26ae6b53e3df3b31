"""sql.Resolver (the one scope-aware column resolver) and sql.fixes (the one fix engine) on real Spider queries."""

from __future__ import annotations

import pytest
from test_normalize import sqlite_schema

from sqlmend import sql
from sqlmend.errors import FixError

# Spider train #1794 (small_bank_1): the subquery reuses T1/T2; its T2 is savings, the outer T2 checking.
BANK = ("SELECT T2.balance FROM accounts AS T1 JOIN checking AS T2 ON T1.custid  =  T2.custid WHERE T1.name IN "
        "(SELECT T1.name FROM accounts AS T1 JOIN savings AS T2 ON T1.custid  =  T2.custid "
        "WHERE T2.balance  >  (SELECT avg(balance) FROM savings))")


def _cols(tree, name):
    return [c for c in tree.find_all(sql.ast.Column) if c.sql() == name]


def test_reused_aliases_resolve_in_their_own_scope(spider_db):
    tree = sql.parse(BANK)
    r = sql.Resolver(tree, sqlite_schema(spider_db("small_bank_1")))
    outer, inner = _cols(tree, "T2.balance")
    assert (r.column_name(outer), r.column_name(inner)) == ("checking.balance", "savings.balance")
    [bare] = _cols(tree, "balance")
    assert r.resolve(bare).status == "ok" and r.resolve(bare).table == "savings"
    assert r.qualifier("savings", at=inner) == "T2" and r.qualifier("checking", at=bare) == "T2"
    assert r.qualifier("singer", at=inner) is None


def test_an_alias_written_twice_in_one_from_does_not_stop_the_rules(spider_conn):
    # a generated perturbation (Spider train, soccer_2) reused T3; sqlglot's scope raised OptimizeError
    from sqlmend import rules

    text = ("SELECT DISTINCT state FROM college AS T1 JOIN tryout AS T2 ON T1.cName = T2.cName "
            "JOIN Player AS T3 ON T2.pID = T3.pID JOIN Player AS T3 ON T2.pID = T3.pID WHERE T3.pName = 'x'")
    r = sql.Resolver(sql.parse(text))
    assert {alias for info in r.infos for alias in info.sources} >= {"t1", "t2"}
    assert isinstance(rules.check(spider_conn("soccer_2"), text, "Which states have players?"), list)


def test_statuses_of_unknown_ambiguous_and_alias_columns(spider_db):
    schema = sqlite_schema(spider_db("concert_singer"))
    text = ("SELECT name AS n, T9.age, singer_id FROM singer AS T1 JOIN singer_in_concert AS T2 "
            "ON T1.singer_id = T2.singer_id WHERE song_nam = 'x' ORDER BY n")
    tree = sql.parse(text)
    r = sql.Resolver(tree, schema)
    status = {c.sql(): r.resolve(c).status for c in tree.find_all(sql.ast.Column)}
    assert status["name"] == "ok" and status["T9.age"] == "unknown_qualifier"
    assert status["song_nam"] == "unknown" and status["singer_id"] == "ambiguous"
    assert status["n"] == "alias"
    [amb] = [c for c in tree.find_all(sql.ast.Column) if c.sql() == "singer_id"]
    assert sorted(r.resolve(amb).candidates) == ["t1", "t2"]


def test_without_a_schema_a_bare_column_belongs_to_the_only_table_of_its_select():
    tree = sql.parse("SELECT count(DISTINCT Maker) FROM car_makers WHERE Country IN "
                     "(SELECT CountryId FROM countries WHERE CountryName = 'France')")
    r = sql.Resolver(tree)
    assert [r.column_name(c) for c in tree.find_all(sql.ast.Column)] == [
        "car_makers.maker", "car_makers.country", "countries.countryid", "countries.countryname"]


def test_fix_engine_applies_every_operation_on_one_tree():
    text = "SELECT T1.name FROM singer AS T1 WHERE T1.country = 'france'"
    tree = sql.parse(text)
    [lit] = list(tree.find_all(sql.ast.Literal))
    [col] = _cols(tree, "T1.name")
    fixes = [{"op": "replace_literal", "path": sql.fixes.node_path(lit), "expect": "'france'", "value": "France"},
             {"op": "replace_column", "path": sql.fixes.node_path(col), "column": "song_name", "table": "T1"},
             {"op": "set_distinct", "path": ""}]
    assert sql.fixes.apply(text, fixes) == "SELECT DISTINCT T1.song_name FROM singer AS T1 WHERE T1.country = 'France'"
    with pytest.raises(FixError, match="not"):
        sql.fixes.apply(text, [dict(fixes[0], expect="'x'")])  # stale: the node is not what the planner saw
    with pytest.raises(FixError, match="needs a SELECT"):
        sql.fixes.apply(text, [{"op": "set_distinct", "path": sql.fixes.node_path(lit)}])


def test_key_lookup_replaces_a_comparison_with_a_lookup_of_its_key():
    text = "SELECT name FROM singer WHERE country_id = 'France' AND age <> 3"
    tree = sql.parse(text)
    eq = tree.find(sql.ast.EQ)
    fix = {"op": "key_lookup", "path": sql.fixes.node_path(eq), "expect": "country_id = 'France'",
           "table": "country", "key": "id", "column": "name", "value": "france"}
    assert sql.fixes.apply(text, [fix]) == (
        "SELECT name FROM singer WHERE country_id IN (SELECT id FROM country WHERE name = 'france') AND age <> 3")
    with pytest.raises(FixError, match="needs = or <>"):
        sql.fixes.apply(text, [dict(fix, path=sql.fixes.node_path(tree.find(sql.ast.And)), expect=None)])
    both = "SELECT name FROM singer WHERE 'a' = 'b'"
    with pytest.raises(FixError, match="needs a column"):
        sql.fixes.apply(both, [dict(fix, path="where.this", expect=None)])


def test_bridge_join_joins_the_table_between_two_the_keys_link_only_through_it():
    text = "SELECT a.x FROM a LEFT JOIN c AS k ON a.id = k.id AND k.z > 1 WHERE a.y = 2"
    eq = sql.parse(text).find(sql.ast.Join).find(sql.ast.EQ)
    fix = {"op": "bridge_join", "path": sql.fixes.node_path(eq), "expect": "a.id = k.id", "table": "b",
           "near": ["a", "id", "a_id"], "far": ["c_id", "k", "id"]}
    # the new join comes before the one whose condition changed, and is of the same kind
    assert sql.fixes.apply(text, [fix]) == ("SELECT a.x FROM a LEFT JOIN b ON a.id = b.a_id "
                                            "LEFT JOIN c AS k ON b.c_id = k.id AND k.z > 1 WHERE a.y = 2")
    where = "SELECT a.x FROM a, c WHERE a.id = c.id"
    eq = sql.parse(where).find(sql.ast.EQ)
    with pytest.raises(FixError, match="JOIN ... ON"):
        sql.fixes.apply(where, [dict(fix, path=sql.fixes.node_path(eq), expect=None)])

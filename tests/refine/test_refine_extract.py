"""Ext: subtree, schema subgraph and linked values on a real database."""

from __future__ import annotations

from sqlmend import sql
from sqlmend.refine.extract import compared_literals, extract, link_values, neighbours, nodes

Q = ("SELECT T2.Name FROM concert AS T1 JOIN stadium AS T2 ON T1.Stadium_ID = T2.Stadium_ID "
     "WHERE T1.Year = '2014' AND T2.Capacity > 5000 ORDER BY T2.Name LIMIT 2")


def test_node_paths_cover_every_clause():
    paths = {n.path: n for n in nodes(sql.parse(Q))}
    assert paths["joins[0].on"].sql == "T1.Stadium_ID = T2.Stadium_ID"
    assert paths["where[0]"].sql == "T1.Year = '2014'"
    assert paths["where[1]"].clause == "where"
    assert paths["limit"].sql == "LIMIT 2"
    nested = nodes(sql.parse("SELECT Name FROM singer WHERE Singer_ID IN "
                             "(SELECT Singer_ID FROM singer_in_concert)"))
    assert [n.path for n in nested if n.clause == "subquery"] == ["sub1"]
    assert any(n.path == "sub1.from" for n in nested)


def test_extract_subtree_and_schema_subgraph(concert_db):
    schema = concert_db.schema()
    ext = extract("table_mismatch", sql.parse(Q), schema, node_paths=["joins[0].on"],
                  schema_refs=["T1.Stadium_ID"], clauses=("from", "joins"), db=concert_db)
    assert [n.path for n in ext.subtree] == ["joins[0].on"]
    assert {"concert", "stadium"} <= set(ext.tables)
    assert "concert.Stadium_ID -> stadium.Stadium_ID" in ext.schema
    # no localized node: the template's clauses are taken
    ext2 = extract("modifier_error", sql.parse(Q), schema, node_paths=["nope"], schema_refs=[],
                   clauses=("order", "limit"))
    assert [n.path for n in ext2.subtree] == ["order[0]", "limit"]


def test_neighbours_follow_foreign_keys(concert_db):
    assert set(neighbours(concert_db.schema(), ["concert"])) == {"stadium", "singer_in_concert"}


def test_linked_values_show_what_is_stored(concert_db):
    tree = sql.parse("SELECT Name FROM singer WHERE Country = 'united states'")
    lits = compared_literals(tree, concert_db.schema())
    assert lits == [{"table": "singer", "column": "Country", "op": "EQ", "value": "united states"}]
    linked = link_values(concert_db, lits)
    assert linked[0]["exact"] is False and "United States" in linked[0]["stored"]
    ext = extract("value_error", tree, concert_db.schema(), node_paths=[], schema_refs=[],
                  clauses=("where",), db=concert_db)
    assert ext.linked_values and ext.subtree[0].sql == "Country = 'united states'"


def test_unparsable_sql_still_gives_schema(concert_db):
    ext = extract("attribute_mismatch", None, concert_db.schema(), node_paths=[], schema_refs=[])
    assert ext.subtree == [] and "singer(" in ext.schema

"""Question-schema structure, linking, serialization and the detector input on real Spider data."""

from __future__ import annotations

import pytest

from sqlmend import structure
from sqlmend.db import connect
from sqlmend.structure.linking import lemma, name_links, ngrams, value_candidates


@pytest.fixture(scope="module")
def concert(spider_db):
    with connect(spider_db("concert_singer")) as db:
        yield db


def test_lemma_and_ngrams():
    assert [lemma(w) for w in ("countries", "singers", "classes", "stadium")] == ["country", "singer", "class",
                                                                                   "stadium"]
    grams = ngrams(["how", "many", "concert", "singers"])
    assert "concert singers" in grams and "how many" not in grams


def test_value_candidates():
    got = value_candidates('Show singers from "United States" born after 1990 in France?')
    assert "United States" in got and "1990" in got and "France" in got


def test_name_links_exact_lemma_fuzzy(concert):
    links = {(x.phrase, x.target): x.kind for x in name_links("How many singers and concerts per stadiums capcity?",
                                                           concert.schema())}
    assert links[("singers", "singer")] == "lemma"
    assert links[("concerts", "concert")] == "lemma"
    assert any(kind == "fuzzy" and target.lower() == "stadium.capacity" for (p, target), kind in links.items())


def test_qss_nodes_edges_and_value_links(concert):
    g = structure.build("Which singers are from France?", concert.schema(),
                        samples=structure.sample_values(concert), value_index=concert.value_index())
    assert g.node("singer").kind == "table" and g.node("singer.Singer_ID").primary_key
    assert any(e.kind == "fk" and e.src == "singer_in_concert.Singer_ID" for e in g.edges)
    value = [x for x in g.links if x.kind == "value"]
    assert any(x.target == "singer.Country" and x.value == "France" for x in value)
    assert g.linked_tables()[0] == "singer"


def test_serialize_puts_focus_first_and_keeps_budget(concert):
    g = structure.build("Which singers are from France?", concert.schema(), value_index=concert.value_index())
    text = structure.serialize_qss(g, focus=["stadium"], max_chars=2000)
    assert text.startswith("stadium(") and "fk: " in text and "'France'->singer.Country" in text
    short = structure.serialize_qss(g, focus=["stadium"], max_chars=150)
    assert len(short.splitlines()[0]) <= 150 and "concert(" not in short


def test_linked_sub_graph_keeps_the_linked_and_used_parts(concert):
    q = "How old are the singers from France?"
    sql = "SELECT max(age) FROM singer WHERE country = 'France'"
    whole = structure.describe(concert, q, sql, samples=structure.sample_values(concert),
                               value_index=concert.value_index(), linked_only=False).qss
    linked = structure.describe(concert, q, sql, samples=structure.sample_values(concert),
                                value_index=concert.value_index()).qss
    assert len(linked) < len(whole) / 2
    first = linked.splitlines()[0]
    # the SQL's and the question's columns and the key stay; the others are counted
    assert first.startswith("singer(Singer_ID*") and "Country" in first and "Age" in first
    assert "Song_Name" not in first and first.endswith("+3)")
    assert "stadium(" not in linked and "stadium(" in whole
    assert "'France'->singer.Country" in linked
    assert structure.sql_columns(sql) == ["age", "country"]


def test_ast_and_exec_text(concert):
    assert structure.ast_text("SELECT name FROM singer WHERE age > 3") == \
        "(select (col name) (from (table singer)) (where (gt (col age) 3)))"
    assert structure.ast_text("SELECT FROM WHERE (") == "(unparsable)"
    res = concert.execute("SELECT name, age FROM singer ORDER BY age LIMIT 2")
    text = structure.exec_text(res)
    assert text.startswith("ok: 2 rows x 2 cols (Name, Age)")
    assert structure.exec_text(None, "no such column: x") == "error: no such column: x"


def test_canonical_sql_reads_spider_double_quotes(concert):
    schema = concert.schema()
    assert structure.canonical_sql('select name from singer where country  =  "France"', schema) == \
        "SELECT name FROM singer WHERE country = 'France'"
    assert structure.canonical_sql('SELECT "Name" FROM singer', schema) == 'SELECT "Name" FROM singer'


def test_describe_and_detector_input(concert):
    d = structure.describe(concert, "How many singers are from France?",
                           'SELECT count(*) FROM singer WHERE country = "France"',
                           samples=structure.sample_values(concert), value_index=concert.value_index())
    assert d.sql == "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    assert d.qss.startswith("singer(") and d.exec.startswith("ok: 1 rows")
    bad = structure.describe(concert, "q", "SELECT nope FROM singer")
    assert bad.exec.startswith("error:") and "nope" in bad.exec
    x = structure.detector_input("Find errors.", "How many?", d.qss * 10, d.sql, d.ast, d.exec, max_chars=700)
    assert len(x) < 900 and x.endswith("Errors:")
    assert [line.split(":")[0] for line in x.splitlines()[1:]][:2] == ["Question", "Schema"]
    assert d.sql in x and d.exec in x

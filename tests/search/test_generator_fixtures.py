"""Every repair generator's fixture cases, run on the real Spider databases."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fixture_cases import yaml_cases

from sqlmend import search, sql, taxonomy
from sqlmend.search import generators

FIXTURES = Path(search.__file__).with_name("fixtures")


@pytest.mark.parametrize(("name", "case"), yaml_cases(FIXTURES, "generator"))
def test_fixture(name, case, spider_conn):
    db = spider_conn(case["db"])
    gen = generators.get(name)
    inp = generators.SearchInput(case["question"], db.schema(), db.value_index())
    tree = sql.parse(case["sql"])
    before = tree.sql()
    made = list(gen(tree, inp))
    assert tree.sql() == before, "a generator must not edit the tree it is given"
    rendered = [sql.render(t) for t, _ in made]
    if case.get("none"):
        assert rendered == [], rendered
        return
    assert case["yields"] in rendered, rendered
    for (t, label), text in zip(made, rendered):
        assert label and text != case["sql"]
        sql.check_read_only_tree(t)


def test_every_generator_has_fixtures_and_known_types():
    covered = {yaml.safe_load(p.read_text())["generator"] for p in FIXTURES.glob("*.yaml")}
    names = {g.name for g in generators.all_generators()}
    assert names == covered
    for g in generators.all_generators():
        assert g.error_types and all(taxonomy.get(t) for t in g.error_types)

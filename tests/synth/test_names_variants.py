"""Golds with names written the way users write them (sqlmend.synth.names), on real Spider databases."""

from __future__ import annotations

import random

import pytest

from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.synth import names as variants


@pytest.mark.parametrize(("kind", "name", "owner", "wrong"), [
    ("plural", "Birth_Year", "singer", "Birth_Years"),
    ("plural", "Singers", None, "Singer"),
    ("camelCase", "student_id", "Student", "studentId"),
    ("underscores", "PetType", "Pets", "pet_type"),
    ("prefix", "Singer_ID", "singer", "ID"),
    ("prefix", "Name", "singer", "singer_Name"),
    ("prefix", "Ref_Template_Types", None, "Template_Types"),
    ("id", "owner_id", "Dogs", "owner"),
    ("keyword", "Orders", None, "order"),
])
def test_each_kind_writes_a_name_wrong(kind, name, owner, wrong):
    assert variants.wrong_name(kind, name, owner, random.Random(0)) == wrong


def test_an_edit_drops_one_inner_letter():
    wrong = variants.wrong_name("edit", "Country", "singer", random.Random(0))
    assert len(wrong) == 6 and wrong[0] == "C" and wrong != "Country"
    assert variants.wrong_name("edit", "Name", "singer", random.Random(0)) is None  # too short


def test_variants_rename_every_occurrence_and_the_engine_refuses_them(spider_db):
    gold = "SELECT T1.Name, count(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID " \
           "GROUP BY T1.Singer_ID"
    with connect(str(spider_db("concert_singer"))) as db:
        (v,) = variants.variants(gold, db.schema(), "prefix", 1, random.Random(3))
        (name, wrong), = v.names
        assert wrong.lower() not in {c.name.lower() for t in db.schema().tables for c in t.columns}
        two = variants.variants(gold, db.schema(), "plural", 2, random.Random(1))[0]
        assert len(two.names) == 2
        for text in (v.sql, two.sql):
            with pytest.raises(SqlmendError):
                db.execute(text, timeout=5)
        if name.endswith("Singer_ID"):
            assert v.sql.count(wrong) == 2  # both of singer's occurrences renamed

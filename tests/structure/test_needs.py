"""The schema a question needs (structure/needs.py): ranked relations and columns, their joins and values, within
a budget, on real Spider databases, one at a time and as the schemas of one catalogue; and the prompts of the
model stages, which show a schema too big to send whole as the relations the question needs."""

from __future__ import annotations

import json
import zlib
from dataclasses import replace

import numpy as np
import pytest

from sqlmend.db import connect
from sqlmend.refine.extract import prompt_schema, schema_text
from sqlmend.structure import needs
from sqlmend.types import ForeignKey, Schema

#: Spider databases that share table names (people, singer) and a song table in singer alone.
SCHEMAS = ("concert_singer", "singer", "poker_player", "company_employee", "musical")


@pytest.fixture(scope="module")
def read(spider_db):
    """``read(db_id)``: the schema and the value index of a Spider database (read once)."""
    seen: dict[str, tuple[Schema, object]] = {}

    def get(db_id: str) -> tuple[Schema, object]:
        if db_id not in seen:
            with connect(spider_db(db_id)) as db:
                seen[db_id] = (db.schema(), db.value_index())
        return seen[db_id]

    return get


class Catalogue:
    """Several Spider databases as the schemas of one catalogue (keys ``schema.table``), and a value search
    over all of them, as a warehouse's listing and value index give them."""

    def __init__(self, read, db_ids=SCHEMAS):
        self.tables, self.indexes = [], {}
        for db_id in db_ids:
            schema, values = read(db_id)
            self.indexes[db_id] = values
            for t in schema.tables:
                keys = [ForeignKey(f"{db_id}.{fk.table}", fk.columns, f"{db_id}.{fk.ref_table}", fk.ref_columns)
                        for fk in t.foreign_keys]
                self.tables.append(replace(t, name=f"{db_id}.{t.name}", schema=db_id, qualified=True,
                                           foreign_keys=keys))

    def search(self, value, mode="ci", limit=10, score_cutoff=80.0):
        return [replace(h, table=f"{db_id}.{h.table}") for db_id, index in self.indexes.items()
                for h in index.search(value, mode=mode, limit=limit, score_cutoff=score_cutoff)][:limit]


def test_the_question_ranks_the_tables_and_finds_the_stored_value(read):
    schema, values = read("concert_singer")
    found = needs.schema_for(needs.SchemaIndex(schema.tables), "Which singers are from France?", values=values)
    assert found.tables[0] == "singer" and set(found.tables) == {"singer", "concert", "stadium", "singer_in_concert"}
    assert found.values == {"singer.Country": ["France"]} and "Country text ['France']" in found.text
    assert {"left": "singer_in_concert.Singer_ID", "right": "singer.Singer_ID", "how": "foreign key"} in \
        [j.to_dict() for j in found.joins]
    assert "Singer_ID text PK -> singer.Singer_ID" in found.text
    assert json.loads(json.dumps(found.to_dict())) == found.to_dict()


@pytest.mark.parametrize("budget", [256, 300, 512, 1024, 4096])
def test_the_text_keeps_within_the_budget_best_first(read, budget):
    schema, values = read("world_1")
    index = needs.SchemaIndex(schema.tables)
    found = needs.schema_for(index, "What languages are spoken in Aruba?", budget=budget, values=values)
    assert len(found.text) <= budget
    assert found.tables and found.tables[0] in ("countrylanguage", "country")
    assert all(c.rsplit(".", 1)[0] in found.tables for c in found.columns)
    if budget >= 512:
        assert {"countrylanguage", "country"} <= set(found.tables)


def test_a_wide_table_keeps_its_keys_and_the_columns_with_evidence(read):
    schema, _ = read("world_1")  # country: 15 columns
    found = needs.schema_for(needs.SchemaIndex(schema.tables), "What is the life expectancy in each continent?",
                             budget=256)
    assert found.tables == ["country"]
    assert {"country.Code", "country.Continent", "country.LifeExpectancy"} <= set(found.columns)
    assert "more)" in found.text and len(found.text) <= 256


def test_a_failing_draft_points_to_the_names_it_meant(read):
    """``nme``, ``stadiums``, ``concerts`` are not names of concert_singer: they match Name, stadium, concert."""
    schema, values = read("concert_singer")
    index = needs.SchemaIndex(schema.tables)
    question = "Names of the stadiums and themes of the concerts held there"
    draft = "SELECT nme, theme FROM stadiums JOIN concerts ON id = stadium"
    found = needs.schema_for(index, question, draft, budget=512, values=values)
    assert set(found.tables[:2]) == {"stadium", "concert"}
    assert needs.read_draft(draft).tables == ["stadiums", "concerts"]
    assert needs.read_draft("DROP TABLE singer; SELECT readfile('/etc/passwd')").literals == ["/etc/passwd"]


def test_a_chosen_pair_brings_the_table_that_joins_them(read):
    catalogue = Catalogue(read)
    found = needs.schema_for(needs.SchemaIndex(catalogue.tables), "Names of singers and the concerts they sang in",
                             budget=1024, values=catalogue)
    top = found.tables[:4]
    assert {"concert_singer.singer", "concert_singer.concert", "concert_singer.singer_in_concert"} <= set(top), top


def test_columns_named_as_another_tables_key_join(read):
    schema, _ = read("musical")  # no foreign key declared
    found = needs.schema_for(needs.SchemaIndex(schema.tables), "Actors of each musical")
    assert [j.to_dict() for j in found.joins] == [{"left": "actor.Musical_ID", "right": "musical.Musical_ID",
                                                   "how": "same name"}]
    assert "Musical_ID int ~> musical.Musical_ID" in found.text


def test_in_a_catalogue_of_schemas_the_values_and_the_draft_choose_the_schema(read):
    catalogue = Catalogue(read)
    index = needs.SchemaIndex(catalogue.tables)
    plain = needs.schema_for(index, "How many people are there?", budget=2048, values=catalogue)
    assert {"poker_player.people", "company_employee.people"} <= set(plain.tables[:3])
    russia = needs.schema_for(index, "Who is from Russia?", budget=512, values=catalogue)
    assert russia.tables[0] == "poker_player.people"
    assert russia.values["poker_player.people.Nationality"] == ["Russia"]  # (and a headquarters in Russia)
    song = needs.schema_for(index, "How many are there?", "SELECT count(*) FROM song", budget=512, values=catalogue)
    assert song.tables[0] == "singer.song" and song.tables[1] == "singer.singer"  # its foreign key's table


def test_a_name_split_over_columns_is_found_word_by_word(read):
    schema, values = read("store_1")
    found = needs.schema_for(needs.SchemaIndex(schema.tables), "How many orders does Lucas Mancini have?",
                             budget=1024, values=values)
    assert found.tables[0] == "customers"
    assert found.values == {"customers.first_name": ["Lucas"], "customers.last_name": ["Mancini"]}


def test_the_embedder_adds_matches_by_meaning(read):
    """A stand-in embedder (words to fixed vectors, ``pupil`` near ``student``) in place of MiniLM: a
    question that writes no name of the schema still finds the table it means."""
    schema, _ = read("network_1")  # Highschooler, Friend, Likes

    def embed(texts):
        near = {"pupil": "highschooler", "pupils": "highschooler"}
        out = []
        for text in texts:
            vec = np.zeros(1024, dtype=np.float32)
            for word in text.lower().replace(":", " ").split():
                vec[zlib.crc32(near.get(word, word).encode()) % 1024] += 1.0
            out.append(vec / (np.linalg.norm(vec) or 1.0))
        return np.stack(out)

    plain = needs.SchemaIndex(schema.tables)
    embedded = needs.SchemaIndex(schema.tables, embed=embed)
    question = "How many pupils?"
    assert embedded.embedded and not plain.embedded
    with_meaning = needs.schema_for(embedded, question, question_vector=embed([question])[0])
    assert with_meaning.tables[0] == "Highschooler"
    assert needs.rank(plain, question).table.max() == 0  # no word of the question is a name


def test_the_same_question_gets_the_same_answer(read):
    catalogue = Catalogue(read)
    first = needs.schema_for(needs.SchemaIndex(catalogue.tables), "Which singer has the most songs?",
                             "SELECT name FROM singers", budget=1024, values=catalogue)
    again = needs.schema_for(needs.SchemaIndex(catalogue.tables), "Which singer has the most songs?",
                             "SELECT name FROM singers", budget=1024, values=catalogue)
    assert first.to_dict() == again.to_dict()


def test_a_prompt_gets_the_whole_schema_below_the_threshold_and_the_needed_tables_above(read, monkeypatch):
    schema, values = read("world_1")
    question = "What languages are spoken in Aruba?"
    assert needs.prompt_tables(schema, question) is None  # 1 KB of text: below 16 KB
    assert prompt_schema(schema, question) == schema_text(schema)  # byte for byte what it always was
    monkeypatch.setenv("SQLMEND_SCHEMA_WHOLE_BELOW", "300")
    keys = needs.prompt_tables(schema, question, values=values, render=lambda ks: schema_text(schema, ks))
    assert keys and keys[0] in ("countrylanguage", "country") and len(schema_text(schema, keys)) < 300
    assert len(prompt_schema(schema, question)) < 300 < len(schema_text(schema))
    monkeypatch.setenv("SQLMEND_SCHEMA_WHOLE_BELOW", "12")
    with pytest.raises(Exception, match="below 256"):
        needs.whole_below()

"""The value index on real Spider data: lookups in every mode, the disk cache, and speed."""

from __future__ import annotations

import os
import sqlite3
import time

import pytest

from sqlmend.db import MODES, connect
from sqlmend.db.values import ValueIndex, cache_file, singular
from sqlmend.errors import ConfigError


@pytest.fixture
def vi(spider_db, cache_root):
    with connect(spider_db("concert_singer")) as db:
        yield db.value_index()


def test_does_F_occur_in_singer_gender_and_what_does(vi):
    # concert_singer has singer.Is_male = 'T' / 'F'
    assert vi.contains("singer", "Is_male", "F")
    assert not vi.contains("singer", "Is_male", "f")
    assert vi.find("SINGER", "is_male", "f", mode="ci") == ["F"]
    assert sorted(vi.values("singer", "is_male")) == ["F", "T"]


def test_modes_find_the_stored_variants(spider_db, cache_root):
    with connect(spider_db("flight_2")) as db:
        vi = db.value_index()
        # flight_2 stores cities with a trailing space ("Aberdeen "): trim finds them
        assert vi.find("airports", "City", "aberdeen", mode="ci") == []
        assert vi.find("airports", "City", "Aberdeen", mode="trim") == ["Aberdeen "]
    with connect(spider_db("dog_kennels")) as db:
        vi = db.value_index()
        assert vi.find("Breeds", "breed_name", "bulldogs", mode="plural") == ["Bulldog"]
    with connect(spider_db("pets_1")) as db:
        vi = db.value_index()
        assert vi.find("Student", "Sex", "F", mode="exact") == ["F"]
        assert "dog" in vi.find("Pets", "PetType", "DOG", mode="ci")
    with connect(spider_db("world_1")) as db:
        vi = db.value_index()
        assert "United States" in vi.find("country", "Name", "united st", mode="prefix")
        assert vi.find("country", "Name", "Untied States", mode="approx")[0] == "United States"
        # an abbreviation by initials
        assert "United Arab Emirates" in vi.find("country", "Name", "UAE", mode="prefix")


def test_accent_mode_folds_accents_only_when_asked(spider_db, cache_root):
    with connect(spider_db("world_1")) as db:
        vi = db.value_index()
        assert vi.find("city", "Name", "Sao Paulo", mode="accent") == ["São Paulo"]
        assert vi.find("city", "Name", "zurich ", mode="accent") == ["Zürich"]
        assert vi.find("city", "Name", "Sao Paulo", mode="ci") == []
        # not one of the modes the repair search tries in turn (its candidates stay as they were)
        assert "accent" not in MODES and all(m.mode != "accent" for m in vi.matches("city", "Name", "Zurich"))


def test_matches_tries_modes_in_order_without_repeats(spider_db, cache_root):
    with connect(spider_db("world_1")) as db:
        found = db.value_index().matches("country", "Continent", "europe", limit=5)
    assert found[0].value == "Europe" and found[0].mode == "ci"
    assert len({m.value for m in found}) == len(found)


def test_search_across_all_columns(spider_db, cache_root):
    with connect(spider_db("world_1")) as db:
        vi = db.value_index()
        hits = {(m.table, m.column) for m in vi.search("english", mode="ci")}
        assert ("countrylanguage", "Language") in hits
        approx = vi.search("Frence", mode="approx", limit=5)
        assert any(m.value == "France" and m.mode == "approx" and m.score >= 80 for m in approx)
        assert vi.search("no such value anywhere", mode="ci") == []


def test_unknown_columns_and_modes(vi):
    assert vi.find("singer", "Age", "32") == []  # numbers are not text values
    assert vi.find("nope", "nope", "x") == []
    with pytest.raises(ConfigError):
        vi.find("singer", "Name", "x", mode="soundex")
    assert set(MODES) >= {"exact", "ci", "approx"}


def test_singular():
    assert [singular(w) for w in ["cities", "dogs", "boxes", "class", "bus", "is", "series"]] == [
        "city", "dog", "box", "class", "bus", "is", "sery"]


def test_cache_is_written_reused_and_keyed_by_file_state(sqlite_copy, cache_root):
    path = sqlite_copy("concert_singer")
    with connect(path) as db:
        first = db.value_index()
        assert not first.from_cache and cache_file(db.cache_key()).exists()
    with connect(path) as db:
        again = db.value_index()
        assert again.from_cache and again.columns() == first.columns()
    # the file changes (size and mtime): the old cache entry no longer applies
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO singer (Singer_ID, Name, Country, Is_male) VALUES (7, 'New Person', 'Peru', 'F')")
    conn.commit()
    conn.close()
    os.utime(path, ns=(time.time_ns(), time.time_ns()))
    with connect(path) as db:
        fresh = db.value_index()
        assert not fresh.from_cache
        assert fresh.contains("singer", "Country", "Peru")


def test_damaged_cache_is_rebuilt(sqlite_copy, cache_root):
    path = sqlite_copy("pets_1")
    with connect(path) as db:
        db.value_index()
        cache_file(db.cache_key()).write_text("{not json")
    with connect(path) as db:
        vi = db.value_index()
        assert not vi.from_cache and vi.contains("Pets", "PetType", "dog")


def test_save_and_load_round_trip(vi, tmp_path):
    vi.save(tmp_path / "x.json")
    back = ValueIndex.load(tmp_path / "x.json")
    assert back.columns() == vi.columns() and back.values("singer", "Name") == vi.values("singer", "Name")


def test_threads_saving_the_same_cache_file_do_not_collide(vi, tmp_path):
    """Two pipeline workers building one database's index both save it (seen as a flaky memory stage)."""
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "index.json"
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: vi.save(path, key="k"), range(64)))  # re-raises a worker's error
    assert ValueIndex.load(path).stats()["values"] == vi.stats()["values"]
    assert not list(tmp_path.glob("*.tmp"))

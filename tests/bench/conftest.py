"""Fixtures of the bench tests: the real spider-dev dataset and an isolated gold cache."""

from __future__ import annotations

import pytest

from sqlmend.data import load_dataset

PRED_FILES = {  # the shared prediction files and their published correct counts (data README)
    "din-sql_gpt-4.sql": 791,
    "dail-sql_gpt-4.sql": 788,
    "c3sql_gpt-3.5.sql": 769,
    "codes-1b.sql": 743,
    "gpt-4_zero-shot.sql": 688,
}


@pytest.fixture(scope="session")
def spider_dev():
    return load_dataset("spider-dev")


@pytest.fixture(scope="session")
def pred_dir(data_dir):
    return data_dir / "predictions" / "spider-dev"


@pytest.fixture(scope="session")
def gold_cache(tmp_path_factory):
    """A gold cache folder shared by the tests of one session (not the user's ~/.cache)."""
    return tmp_path_factory.mktemp("gold-cache")

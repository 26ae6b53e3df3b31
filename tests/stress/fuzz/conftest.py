"""Fixtures of the fuzz suite: a private copy of the committed example database, checked unchanged."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

#: The committed example database (``sqlmend.stress.fuzz.build_example_db`` wrote it).
EXAMPLE_DB = Path(__file__).parent / "data" / "fuzz.sqlite"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def fuzz_db(tmp_path_factory):
    """A copy of the example database in its own folder; after the module its bytes and its folder
    must be as they were."""
    folder = tmp_path_factory.mktemp("fuzzdb") / "fuzz"
    folder.mkdir()
    path = folder / "fuzz.sqlite"
    shutil.copyfile(EXAMPLE_DB, path)
    before = sha256(path)
    yield path
    assert sha256(path) == before, "the example database changed"
    assert sorted(p.name for p in folder.iterdir()) == ["fuzz.sqlite"], "files appeared beside the database"

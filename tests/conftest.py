"""Shared fixtures: the real Spider data in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlmend.paths import data_root


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return data_root()


@pytest.fixture(scope="session")
def spider_dir(data_dir: Path) -> Path:
    return data_dir / "spider"


@pytest.fixture(scope="session")
def spider_db(spider_dir: Path):
    """``spider_db("concert_singer")`` -> path of that real Spider SQLite file."""

    def path(db_id: str) -> Path:
        p = spider_dir / "database" / db_id / f"{db_id}.sqlite"
        assert p.exists(), p
        return p

    return path

"""Shared fixtures: the real Spider data in ../shared/data, a throw-away PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest
from pg_server import PgServer, find_bin

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


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL server started for this test session (skipped when no server binaries exist)."""
    if find_bin() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed: run scripts/setup.sh")
    server = PgServer.start()
    yield server
    server.stop()

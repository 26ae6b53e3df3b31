"""Fixtures of the database-layer tests: real PostgreSQL and MariaDB servers, Spider databases copied into
them and into DuckDB, and throw-away copies of SQLite files for the risky tests."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: pg_server

from copy_db import load_duckdb, load_mysql, load_postgres  # noqa: E402
from pg_server import READER  # noqa: E402


@pytest.fixture(scope="session")
def pg_spider(pg_server, spider_db):
    """``pg_spider("concert_singer")`` -> read-only URL of that Spider database loaded into PostgreSQL."""
    loaded: dict[str, str] = {}

    def url(db_id: str) -> str:
        if db_id not in loaded:
            name = db_id.lower()
            pg_server.admin(f'CREATE DATABASE "{name}"')
            pg_server.admin(f'GRANT CONNECT ON DATABASE "{name}" TO {READER}')
            load_postgres(spider_db(db_id), pg_server.url(name, user="postgres"), READER)
            loaded[db_id] = pg_server.url(name)
        return loaded[db_id]

    return url


@pytest.fixture(scope="session")
def mysql_spider(mysql_server, spider_db):
    """``mysql_spider("concert_singer")`` -> read-only URL (a SELECT-only user) of that Spider database
    loaded into MariaDB with SQLite's text comparison; ``collation="utf8mb4_general_ci"`` loads a second
    copy, ``<db>_ci``, with the server default's."""
    from sqlmend.testing.copydb import MYSQL_COLLATION
    from mysql_server import READER as MYSQL_READER

    loaded: dict[tuple[str, str], str] = {}

    def url(db_id: str, collation: str = MYSQL_COLLATION) -> str:
        if (db_id, collation) not in loaded:
            name = db_id.lower() + ("" if collation == MYSQL_COLLATION else "_ci")
            conn = mysql_server.connection()
            try:
                load_mysql(spider_db(db_id), conn, name, MYSQL_READER, collation=collation)
            finally:
                conn.close()
            loaded[(db_id, collation)] = mysql_server.url(name)
        return loaded[(db_id, collation)]

    return url


@pytest.fixture(scope="session")
def duckdb_spider(spider_db, tmp_path_factory):
    """``duckdb_spider("concert_singer")`` -> path of a DuckDB copy of that Spider database."""
    made: dict[str, Path] = {}

    def path(db_id: str) -> Path:
        if db_id not in made:
            target = tmp_path_factory.mktemp("duckdb") / f"{db_id}.duckdb"
            load_duckdb(spider_db(db_id), target)
            made[db_id] = target
        return made[db_id]

    return path


@pytest.fixture
def sqlite_copy(spider_db, tmp_path):
    """``sqlite_copy("concert_singer")`` -> a private copy of a Spider SQLite file in tmp_path."""

    def path(db_id: str) -> Path:
        target = tmp_path / f"{db_id}.sqlite"
        shutil.copyfile(spider_db(db_id), target)
        return target

    return path


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """A private SQLMEND_CACHE for tests that build value indexes."""
    root = tmp_path / "cache"
    monkeypatch.setenv("SQLMEND_CACHE", str(root))
    return root

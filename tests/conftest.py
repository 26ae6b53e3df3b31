"""Shared fixtures: the real Spider data in ../shared/data, throw-away PostgreSQL and MariaDB servers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# One thread per native thread pool (OpenMP, OpenBLAS, MKL: torch, numpy, scikit-learn). The tests run
# in parallel workers (scripts/test.sh), one or more per core: pools of one thread per core in each
# worker only spin against each other (scikit-learn's fits took four times the CPU). Set before any of
# them is imported; subprocesses of the tests inherit it. A value already set is kept.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest
from pg_server import PgServer, find_bin

from sqlmend.paths import data_root


def pytest_collection_modifyitems(config, items):
    """The tests marked slow first, each group in its files' order: parallel workers then spend the end
    of a run on short tests, not waiting for one long test started last."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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
def spider_dev():
    """The real spider-dev dataset (loaded once per session)."""
    from sqlmend.data import load_dataset

    return load_dataset("spider-dev")


@pytest.fixture(scope="session")
def pred_dir(data_dir: Path) -> Path:
    """The folder of the five shared Spider-dev prediction files."""
    return data_dir / "predictions" / "spider-dev"


@pytest.fixture(scope="session")
def gold_cache(tmp_path_factory):
    """A gold cache folder shared by the tests of one session (not the user's ~/.cache)."""
    return tmp_path_factory.mktemp("gold-cache")


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL server started for this test session (skipped when no server binaries exist)."""
    if find_bin() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed: run scripts/setup.sh")
    server = PgServer.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mysql_server():
    """A MariaDB server started for this test session (skipped when no server binaries or no PyMySQL)."""
    pytest.importorskip("pymysql", reason="PyMySQL not installed: pip install -e '.[mysql]'")
    from mysql_server import MySQLServer
    from mysql_server import find_bin as find_mysql

    if find_mysql() is None:
        pytest.skip("MariaDB server binaries (mariadbd, mariadb-install-db) not installed: run scripts/setup.sh")
    server = MySQLServer.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def spider_conn(spider_db):
    """``spider_conn("car_1")`` -> an open read-only connection, shared by the module's tests."""
    from sqlmend.db import connect

    conns = {}

    def get(db_id: str):
        if db_id not in conns:
            conns[db_id] = connect(str(spider_db(db_id)))
        return conns[db_id]

    yield get
    for c in conns.values():
        c.close()


# --- leaving the test process ------------------------------------------------
# A model answer still being generated when its client gave up (the time-out
# tests) runs on in a daemon thread of the loopback model server; when the
# interpreter then tears down, the native thread pools of torch can abort the
# process ("terminate called without an active exception", exit code 134) after
# every test has passed. The session's own exit status is kept and the process
# leaves without that teardown.
_EXIT: dict[str, int] = {}


def pytest_sessionfinish(session, exitstatus):
    _EXIT["status"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if "status" in _EXIT and not os.environ.get("SQLMEND_TEST_NORMAL_EXIT"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT["status"])

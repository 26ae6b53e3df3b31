"""A corpus of statements that try to write or escape is refused on every engine, twice.

Each statement must be refused by ``execute`` (the AST check, before the engine; a call of a
function this engine does not have, ``pg_read_file`` on SQLite, fails there as no such function)
and again by the engine itself when the AST check is bypassed; afterwards the
database (its file checksum, or its catalogue and row counts on PostgreSQL) is
unchanged and no file was written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from copy_db import sha256

from sqlmend.db import connect
from sqlmend.errors import DatabaseError, QueryError, ReadOnlyViolation

#: How each engine says that it has no function of that name.
NO_SUCH_FUNCTION = ("no such function", "no such table", "does not exist")  # a table-valued one: a table

#: ``{tmp}`` is replaced by a folder that must stay empty.
CORPUS = [
    "INSERT INTO singer (Singer_ID, Name) VALUES (99, 'x')",
    "INSERT INTO singer SELECT * FROM singer",
    "REPLACE INTO singer (Singer_ID) VALUES (1)",
    "UPDATE singer SET Name = 'x'",
    "UPDATE singer SET Age = Age + 1 WHERE Singer_ID = 1",
    "DELETE FROM singer",
    "DELETE FROM singer WHERE 1 = 1",
    "DROP TABLE singer",
    "DROP TABLE IF EXISTS concert",
    "CREATE TABLE pwned (a INT)",
    "CREATE TABLE pwned AS SELECT * FROM singer",
    "CREATE VIEW pwned AS SELECT 1",
    "CREATE INDEX pwned ON singer (Name)",
    "ALTER TABLE singer ADD COLUMN pwned INT",
    "ALTER TABLE singer RENAME TO pwned",
    "TRUNCATE singer",
    "ATTACH DATABASE '{tmp}/attached.sqlite' AS other",
    "DETACH DATABASE main",
    "PRAGMA user_version = 42",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA query_only = OFF",
    "PRAGMA writable_schema = ON",
    "VACUUM",
    "VACUUM INTO '{tmp}/copy.sqlite'",
    "ANALYZE",
    "REINDEX",
    "SELECT load_extension('{tmp}/evil.so')",
    "SELECT writefile('{tmp}/pwned.txt', 'x')",
    "SELECT * FROM singer WHERE Name IN (SELECT writefile('{tmp}/pwned.txt', Name) FROM singer)",
    "SELECT 1; DELETE FROM singer",
    "SELECT * FROM singer; DROP TABLE singer",
    "SELECT * FROM singer /* just a comment */; DROP TABLE singer -- and another",
    "SELECT 1 -- innocent\n; DELETE FROM singer",
    "BEGIN; DELETE FROM singer; COMMIT",
    "SAVEPOINT a",
    "WITH gone AS (DELETE FROM singer RETURNING *) SELECT * FROM gone",
    "WITH x AS (SELECT 1) INSERT INTO singer (Singer_ID) SELECT * FROM x",
    "EXPLAIN ANALYZE DELETE FROM singer",
    "SELECT * INTO pwned FROM singer",
    "SELECT * FROM singer FOR UPDATE",
    "COPY singer TO '{tmp}/out.csv'",
    "COPY singer FROM '/etc/hostname'",
    "COPY (SELECT 1) TO PROGRAM 'touch {tmp}/pwned'",
    "SELECT pg_read_file('/etc/hostname')",
    "SELECT * FROM pg_ls_dir('/')",
    "SELECT lo_import('/etc/hostname')",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SET default_transaction_read_only = off",
    "GRANT ALL ON singer TO PUBLIC",
    "SELECT * FROM read_csv('/etc/hostname')",
    "SELECT * FROM '/etc/hostname.csv'",
    "INSTALL httpfs",
    "LOAD httpfs",
]


def _statements(tmp: Path) -> list[str]:
    return [s.replace("{tmp}", str(tmp)) for s in CORPUS]


def _refused_twice(db, statements: list[str]) -> list[str]:
    """Run each statement through execute() and through the engine alone; return what got through."""
    through = []
    for sql in statements:
        with pytest.raises(DatabaseError) as refused:
            db.execute(sql)
        if not isinstance(refused.value, ReadOnlyViolation):  # another engine's function: this one has none
            assert isinstance(refused.value, QueryError), (sql, refused.value)
            assert any(w in str(refused.value) for w in NO_SUCH_FUNCTION), (sql, refused.value)
        try:
            db._run(sql, 5.0, 10)  # the engine on its own, without the AST check
        except DatabaseError:
            continue
        through.append(sql)
    # still usable afterwards
    assert db.execute("SELECT COUNT(*) FROM singer").rows == [(6,)]
    return through


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_file_engines_refuse_every_statement(engine, sqlite_copy, duckdb_spider, tmp_path):
    path = sqlite_copy("concert_singer") if engine == "sqlite" else duckdb_spider("concert_singer")
    before = sha256(path)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    with connect(path) as db:
        assert db.dialect == engine
        assert _refused_twice(db, _statements(sandbox)) == []
    assert sha256(path) == before
    assert list(sandbox.iterdir()) == []


@pytest.mark.postgres
def test_postgres_refuses_every_statement(pg_spider, tmp_path):
    url = pg_spider("concert_singer")
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    sandbox.chmod(0o777)  # the server runs as another user: let it write, so that a refusal is the engine's

    def fingerprint(db):
        tables = db._query("SELECT table_name FROM information_schema.tables "
                           "WHERE table_schema = 'public' ORDER BY 1")
        counts = [db._query(f'SELECT COUNT(*), md5(string_agg(t::text, \',\' ORDER BY t::text)) '
                            f'FROM "{t}" t') for (t,) in tables]
        return tables, counts

    with connect(url) as db:
        before = fingerprint(db)
        through = _refused_twice(db, _statements(sandbox))
        # set_config() is an ordinary function to PostgreSQL; it runs inside our READ ONLY
        # transaction, which is rolled back, so the setting is reverted: check that it was.
        assert through == ["SELECT set_config('default_transaction_read_only', 'off', false)"]
        assert db._query("SELECT current_setting('transaction_read_only')") == [("on",)]
        assert fingerprint(db) == before
    assert list(sandbox.iterdir()) == []

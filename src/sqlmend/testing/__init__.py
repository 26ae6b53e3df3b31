"""Test tooling, not the product: throw-away database servers and database copiers.

Nothing here corrects SQL, and no part of sqlmend's correction path imports it. The tests
(``tests/pg_server.py``, ``tests/mysql_server.py``, ``tests/db/copy_db.py`` re-export it for the
fixtures) and the benchmarks and stress harnesses that need another engine start these:

* :mod:`sqlmend.testing.pgserver`: a PostgreSQL server (``initdb`` + ``pg_ctl``) in a temp folder
  on a free loopback port (``PgServer.start()``; ``find_bin()`` is None where none is installed).
* :mod:`sqlmend.testing.mysqlserver`: the same for MariaDB/MySQL (``MySQLServer.start()``).
* :mod:`sqlmend.testing.copydb`: a Spider SQLite database copied into PostgreSQL, DuckDB or
  MySQL/MariaDB (``load_postgres``, ``load_duckdb``, ``load_mysql``).

``scripts/setup.sh`` installs the server binaries. It sits low in the layers (it uses only
:mod:`sqlmend.db`), so every test, benchmark and stress harness can reach it.
"""

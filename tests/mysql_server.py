"""The throw-away MariaDB server of the tests: :mod:`sqlmend.bench.mysqlserver` (``sqlmend bench engines``
starts one too)."""

from sqlmend.bench.mysqlserver import READER, MySQLServer, find_bin

__all__ = ["READER", "MySQLServer", "find_bin"]

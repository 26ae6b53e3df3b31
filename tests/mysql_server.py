"""The throw-away MariaDB server of the tests: :mod:`sqlmend.testing.mysqlserver` (``sqlmend bench engines``
starts one too)."""

from sqlmend.testing.mysqlserver import READER, MySQLServer, find_bin

__all__ = ["READER", "MySQLServer", "find_bin"]

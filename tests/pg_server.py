"""The throw-away PostgreSQL server of the tests: :mod:`sqlmend.testing.pgserver` (``sqlmend bench faults``
stops and restarts one too)."""

from sqlmend.testing.pgserver import READER, PgServer, find_bin

__all__ = ["READER", "PgServer", "find_bin"]

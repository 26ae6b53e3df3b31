"""The throw-away PostgreSQL server of the tests: :mod:`sqlmend.bench.pgserver` (``sqlmend bench faults``
stops and restarts one too)."""

from sqlmend.bench.pgserver import READER, PgServer, find_bin

__all__ = ["READER", "PgServer", "find_bin"]

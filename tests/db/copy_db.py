"""Spider SQLite databases copied into the other engines (:mod:`sqlmend.testing.copydb`), and a checksum."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlmend.testing.copydb import load_duckdb, load_mysql, load_postgres, read_sqlite

__all__ = ["load_duckdb", "load_mysql", "load_postgres", "read_sqlite", "sha256"]


def sha256(path: Path) -> str:
    """Checksum of a file (databases must come out of the hostile tests unchanged)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()

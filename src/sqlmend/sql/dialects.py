"""Dialect names: ours (and common spellings) to sqlglot's."""

from __future__ import annotations

from sqlmend.errors import ConfigError

_ALIASES = {
    "sqlite": "sqlite",
    "sqlite3": "sqlite",
    "postgres": "postgres",
    "postgresql": "postgres",
    "psql": "postgres",
    "duckdb": "duckdb",
    "mysql": "mysql",
    "bigquery": "bigquery",
    "snowflake": "snowflake",
    "tsql": "tsql",
    "mssql": "tsql",
    "sqlserver": "tsql",
    "mariadb": "mysql",
    "oracle": "oracle",
    "spark": "spark",
    "trino": "trino",
    "redshift": "redshift",
    "clickhouse": "clickhouse",
    "": "",
}


def resolve(dialect: str | None) -> str:
    """Return sqlglot's name for a dialect.

    Args:
        dialect: ``"sqlite"``, ``"postgres"``/``"postgresql"``, ``"duckdb"``, ... (case-insensitive);
            ``None`` or ``""`` means sqlglot's generic dialect.

    Returns:
        The sqlglot dialect name.

    Raises:
        ConfigError: the dialect is not one sqlmend knows.
    """
    key = (dialect or "").strip().lower()
    if key not in _ALIASES:
        raise ConfigError(f"unknown SQL dialect {dialect!r}; known: "
                          + ", ".join(sorted(k for k in _ALIASES if k)))
    return _ALIASES[key]

"""The four tools of ``sqlmend mcp``, as plain functions over open Correctors (no MCP here).

Each takes ``correctors``, the configured databases (``{name: Corrector}``), and returns a
JSON-ready dict: what the MCP tool answers as structured content, and what any other door
(the Python API, the HTTP service, the CLI) gives for the same input::

    from sqlmend import Corrector
    from sqlmend.mcpserver import tools

    dbs = {"concert": Corrector("concert_singer.sqlite")}
    tools.correct_sql(dbs, "concert", "How many singers are from France?",
                      "SELECT count(*) FROM singer WHERE country = 'france'")
    # {"database": "concert", "sql": "SELECT COUNT(*) FROM singer WHERE country = 'France'",
    #  "changed": True, "findings": [{"code": "VL01", ...}], "explanation": "static ran: ...", ...}

``check_sql`` and ``correct_sql`` are :meth:`Corrector.check` and :meth:`Corrector.correct` (``cancel``:
the server's event for a call it stopped waiting for),
their results as :meth:`~sqlmend.api.CorrectionResult.to_dict` holds them (``findings`` are
``Finding.to_dict()``; ``explanation`` is ``explain()``); both take ``alternatives``, other answers
to the question, whose vote the consensus stage reports. A text that is not one read-only query
(a DROP, an UPDATE, two statements) is the finding ``EX03`` and ``refused: true``; it is never
run. A problem of the item (an empty SQL) is the answer's ``error``, as in the API. An unknown
database raises :class:`~sqlmend.errors.ConfigError` naming the configured ones (the server
answers it as a tool error).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from sqlmend.api import CheckResult, CorrectionResult, Corrector
from sqlmend.errors import ConfigError

#: Stored values shown per text column by :func:`describe_schema`.
SAMPLE_VALUES = 5

Correctors = Mapping[str, Corrector]


def corrector_of(correctors: Correctors, database: str) -> Corrector:
    """The Corrector of a configured database.

    Raises:
        ConfigError: ``database`` is not configured; the message names those that are.
    """
    found = correctors.get(database)
    if found is None:
        known = ", ".join(sorted(correctors)) or "none"
        raise ConfigError(f"unknown database {database!r}: the configured databases are {known} "
                          "(list_databases)")
    return found


def list_databases(correctors: Correctors) -> dict[str, Any]:
    """The configured databases: name, dialect and tables of each (no server path)."""
    out = []
    for name, fixer in correctors.items():
        tables = [t.name for t in fixer.schema().tables]
        out.append({"name": name, "dialect": fixer.dialect, "tables": tables})
    return {"databases": out}


def describe_schema(correctors: Correctors, database: str, values: int = SAMPLE_VALUES) -> dict[str, Any]:
    """Relations (tables, views, materialized views), columns, keys, row counts and comments of one
    database, and a few stored values per text column.

    A relation's ``name`` is the one a query writes: its plain name where the search path finds it,
    else ``schema.name``; ``schema`` is the schema that holds it, ``kind`` says table, view or
    materialized view, ``comment`` is the engine's comment (on the relation, on each column).
    ``schemas`` lists the schemas read and ``search_path`` those an unqualified name is looked up in.
    The values are those of the value index the static rules look literals up in (the first
    ``values`` distinct ones); ``distinct_values`` counts what the index holds for the column and
    ``more_values`` is true when the column had more than the index keeps.

    Raises:
        ConfigError: an unknown database.
    """
    fixer = corrector_of(correctors, database)
    schema, index = fixer.schema(), fixer.value_index()
    tables = []
    for t in schema.tables:
        columns = []
        for c in t.columns:
            column: dict[str, Any] = {"name": c.name, "type": c.type, "primary_key": c.name in t.primary_key,
                                      "not_null": c.not_null}
            if c.comment:
                column["comment"] = c.comment
            stored = index.values(t.name, c.name)
            if stored:
                column.update(values=stored[:values], distinct_values=len(stored),
                              more_values=index.is_partial(t.name, c.name))
            columns.append(column)
        table: dict[str, Any] = {"name": t.name, "schema": t.schema, "kind": t.kind}
        if t.comment:
            table["comment"] = t.comment
        table.update({"row_count": t.row_count, "primary_key": list(t.primary_key), "columns": columns,
                      "foreign_keys": [{"columns": fk.columns, "ref_table": fk.ref_table,
                                        "ref_columns": fk.ref_columns} for fk in t.foreign_keys]})
        tables.append(table)
    return {"database": database, "dialect": fixer.dialect, "schemas": schema.schemas,
            "search_path": list(schema.search_path), "tables": tables}


def _common(database: str, result: CheckResult | CorrectionResult) -> dict[str, Any]:
    return {"database": database, "findings": [f.to_dict() for f in result.findings],
            "refused": result.refused, "error": result.error, "explanation": result.explain()}


def check_sql(correctors: Correctors, database: str, question: str, sql: str,
              evidence: str | None = None, alternatives: list[str] | None = None,
              cancel: threading.Event | None = None) -> dict[str, Any]:
    """What is wrong with one query, nothing rewritten (:meth:`Corrector.check`).

    Returns:
        ``database``, ``sql`` (as given), ``wrong``, ``findings`` (code, error type, message,
        severity, evidence, proposed fixes), ``refused``, ``error``, ``explanation``.

    Raises:
        ConfigError: an unknown database.
    """
    result = corrector_of(correctors, database).check(question, sql, evidence, alternatives=alternatives,
                                                      cancel=cancel)
    return {"database": database, "sql": result.sql, "wrong": result.wrong, **_common(database, result)}


def correct_sql(correctors: Correctors, database: str, question: str, sql: str,
                evidence: str | None = None, alternatives: list[str] | None = None,
                cancel: threading.Event | None = None) -> dict[str, Any]:
    """The guarded correction of one query (:meth:`Corrector.correct`).

    Returns:
        ``database``, ``sql`` (the SQL to use: the guarded rewrite, or the input unchanged),
        ``original_sql``, ``changed``, ``findings``, ``refused``, ``error``, ``explanation``
        (what each stage decided and why).

    Raises:
        ConfigError: an unknown database.
    """
    result = corrector_of(correctors, database).correct(question, sql, evidence, alternatives=alternatives,
                                                        cancel=cancel)
    return {"database": database, "sql": result.sql, "original_sql": result.original_sql,
            "changed": result.changed, **_common(database, result)}


# --- text renderings (the tool results' text content) -------------------------


def databases_text(body: dict[str, Any]) -> str:
    """``list_databases``'s answer for a reader: one line per database."""
    lines = [f"{d['name']} ({d['dialect']}): {len(d['tables'])} tables: {', '.join(d['tables'])}"
             for d in body["databases"]]
    return "\n".join(lines) or "no databases configured"


def schema_text(body: dict[str, Any]) -> str:
    """``describe_schema``'s answer for a reader: a table per line, its columns, keys and values."""
    lines = [f"database {body['database']} ({body['dialect']})"]
    if len(body.get("schemas", [])) > 1 or body.get("search_path", []) != body.get("schemas", []):
        lines.append(f"schemas: {', '.join(body['schemas'])}; search path: {', '.join(body['search_path']) or '-'}")
    for t in body["tables"]:
        cols = []
        for c in t["columns"]:
            text = f"{c['name']} {c['type']}".strip() + (" PK" if c["primary_key"] else "")
            if c.get("values"):
                more = ", ..." if c["distinct_values"] > len(c["values"]) or c["more_values"] else ""
                text += " [" + ", ".join(repr(v) for v in c["values"]) + more + "]"
            if c.get("comment"):
                text += f" -- {c['comment']}"
            cols.append(text)
        kind = f" {t['kind']}" if t.get("kind", "table") != "table" else ""
        about = f" -- {t['comment']}" if t.get("comment") else ""
        lines.append(f"{t['name']}{kind} ({t['row_count']} rows){about}: " + "; ".join(cols))
        lines += [f"  {t['name']}.{', '.join(fk['columns'])} -> {fk['ref_table']}.{', '.join(fk['ref_columns'])}"
                  for fk in t["foreign_keys"]]
    return "\n".join(lines)


__all__ = ["SAMPLE_VALUES", "check_sql", "corrector_of", "correct_sql", "databases_text", "describe_schema",
           "list_databases", "schema_text"]

"""The tools of ``sqlmend mcp``, as plain functions over open Correctors (no MCP here).

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

``run_sql`` runs one query for the caller: corrected first (``correct_sql``'s answer) unless ``correct``
is false, then run read-only under the Corrector's time limit, its rows bounded in count and bytes
(:mod:`sqlmend.mcpserver.rows`). A text that is not one read-only query of allowed functions is refused
as at every other door (``refused``, the finding ``EX03``) and never run. :func:`run_query` is the same on
one Corrector, what the framework integrations (:mod:`sqlmend.integrations`) call.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from sqlmend import rules
from sqlmend.api import CheckResult, CorrectionResult, Corrector
from sqlmend.db import connect
from sqlmend.db.base import DEFAULT_MAX_ROWS, WorkBudget
from sqlmend.errors import ConfigError, InputError, ReadOnlyViolation, SqlmendError
from sqlmend.mcpserver.rows import RUN_BYTES, RUN_ROWS, bounded, rows_limit, table_text
from sqlmend.pipeline import error_text

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


def list_databases(correctors: Correctors, tables: bool = False) -> dict[str, Any]:
    """The configured databases, compact: name, dialect, how many relations, and each schema with its count
    (no server path); ``tables``: each database's relation names too (as a query writes them)."""
    out = []
    for name, fixer in correctors.items():
        listing = fixer.relations()
        counts: dict[str, int] = {}
        for t in listing.tables:
            counts[t.schema] = counts.get(t.schema, 0) + 1
        entry: dict[str, Any] = {"name": name, "dialect": fixer.dialect, "relations": len(listing.tables),
                                 "schemas": [{"name": s, "relations": n} for s, n in counts.items() if s]}
        if tables:
            entry["tables"] = [t.name for t in listing.tables]
        out.append(entry)
    return {"databases": out}


#: The size of :func:`describe_schema`'s answer by default (bytes of its JSON): what an agent's context
#: holds beside its work; the rest is a ``cursor`` away.
BUDGET = 32_768
#: Relations :func:`describe_schema` reads at a time while it fills its answer.
READ_AT_ONCE = 32
#: The size of :func:`find_schema`'s text by default, in characters.
SCHEMA_BUDGET = 4096


def _table(t: Any, index: Any, values: int) -> dict[str, Any]:
    """One relation as :func:`describe_schema` answers it."""
    columns = []
    for c in t.columns:
        column: dict[str, Any] = {"name": c.name, "type": c.type, "primary_key": c.name in t.primary_key,
                                  "not_null": c.not_null}
        if c.comment:
            column["comment"] = c.comment
        stored = index.values(t.name, c.name) if values else []
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
    return table


def _chosen(listing: Any, schema: str | list[str] | None, tables: list[str] | None) -> list[str]:
    """The keys of the relations asked for: of ``schema`` (a name or names), of ``tables`` (names as a query
    writes them, or plain names in any schema), all of them by default.

    Raises:
        ConfigError: a schema or table the database does not have (the message names the close ones).
    """
    from sqlmend.sql.resolve import closest

    keep = listing.tables
    if schema:
        wanted = {schema.lower()} if isinstance(schema, str) else {s.lower() for s in schema}
        known = {t.schema.lower() for t in keep if t.schema}
        missing = sorted(wanted - known)
        if missing:
            raise ConfigError(f"no schema {', '.join(missing)} in this database; its schemas: "
                              f"{', '.join(listing.schemas) or 'none'}")
        keep = [t for t in keep if (t.schema or "").lower() in wanted]
    if tables:
        picked: list[Any] = []
        for name in tables:
            found = [t for t in keep if t.name.lower() == name.lower()] or \
                [t for t in keep if t.full_name.lower() == name.lower()] or \
                [t for t in keep if t.relname.lower() == name.lower()]
            if not found:
                near = closest(name, [t.name for t in keep])
                raise ConfigError(f"no relation {name!r}" + (f" in schema {schema}" if schema else "") +
                                  (f"; close: {', '.join(near)}" if near else ""))
            picked += [t for t in found if t not in picked]
        order = {id(t): i for i, t in enumerate(listing.tables)}
        keep = sorted(picked, key=lambda t: order[id(t)])
    return [t.name for t in keep]


def describe_schema(correctors: Correctors, database: str, values: int = SAMPLE_VALUES,
                    schema: str | list[str] | None = None, tables: list[str] | None = None,
                    budget: int = BUDGET, cursor: str | None = None) -> dict[str, Any]:
    """Relations (tables, views, materialized views), columns, keys, row counts and comments of one
    database, and a few stored values per text column, within ``budget`` bytes; ``next_cursor`` pages
    through the rest.

    A relation's ``name`` is the one a query writes: its plain name where the search path finds it,
    else ``schema.name``; ``schema`` is the schema that holds it, ``kind`` says table, view or
    materialized view, ``comment`` is the engine's comment (on the relation, on each column).
    ``schemas`` lists the schemas read and ``search_path`` those an unqualified name is looked up in.
    The values are those of the value index the static rules look literals up in (the first
    ``values`` distinct ones); ``distinct_values`` counts what the index holds for the column and
    ``more_values`` is true when the column had more than the index keeps.

    Only the relations of the answer are read (their columns, counts and values), so an answer costs what
    its relations cost, not the catalogue: a warehouse of thousands of relations answers a page at a time.

    Args:
        values: stored values shown per text column (0: none).
        schema: only the relations of this schema (or these schemas).
        tables: only these relations (names as a query writes them, or plain names in any schema).
        budget: the answer's size at most, in bytes of JSON (at least one relation is answered).
        cursor: ``next_cursor`` of the previous answer: the page after it.

    Returns:
        ``database``, ``dialect``, ``schemas``, ``search_path``, ``relations`` (how many were asked for),
        ``tables`` (this page's), ``next_cursor`` (None on the last page).

    Raises:
        ConfigError: an unknown database, schema or table, or a cursor this question did not give.
    """
    import json

    fixer = corrector_of(correctors, database)
    listing = fixer.relations()
    keys = _chosen(listing, schema, tables)
    start = _offset(cursor, len(keys))
    body: dict[str, Any] = {"database": database, "dialect": fixer.dialect, "schemas": listing.schemas,
                            "search_path": list(listing.search_path), "relations": len(keys), "tables": [],
                            "next_cursor": None}
    size = len(json.dumps(body, default=str))
    at = start
    while at < len(keys) and body["next_cursor"] is None:
        chunk = keys[at:at + READ_AT_ONCE]
        with fixer.reading(chunk) as (read, index):
            for t in read.tables:
                entry = _table(t, index, values)
                grown = len(json.dumps(entry, default=str)) + 2
                if body["tables"] and size + grown > budget:
                    body["next_cursor"] = str(at)
                    break
                body["tables"].append(entry)
                size += grown
                at += 1
    return body


def find_schema(correctors: Correctors, database: str, question: str, sql: str | None = None,
                budget: int = SCHEMA_BUDGET) -> dict[str, Any]:
    """The relations and columns a question needs, ranked, with their join paths and the stored values its
    values match, within ``budget`` characters of text (:meth:`Corrector.schema_for`): what to read of a
    database too big to describe whole, before writing its SQL.

    Args:
        question: the natural-language question.
        sql: a draft query (optional, never run): its names, invented ones included, are evidence.
        budget: characters of ``text`` at most.

    Returns:
        ``database``, ``dialect`` and :class:`~sqlmend.structure.needs.QuestionSchema`'s dict: ``tables``
        (best first, as a query writes them), ``columns``, ``joins``, ``values``, ``text``, ``budget``,
        ``relations`` (of the database), ``scores``, ``embedder``.

    Raises:
        ConfigError: an unknown database, a budget out of range.
    """
    fixer = corrector_of(correctors, database)
    return {"database": database, "dialect": fixer.dialect, **fixer.schema_for(question, sql, budget).to_dict()}


def _offset(cursor: str | None, total: int) -> int:
    """Where a page starts (``cursor``: the previous answer's ``next_cursor``).

    Raises:
        ConfigError: a cursor that is not one.
    """
    if cursor is None or cursor == "":
        return 0
    if not cursor.isdigit() or not 0 < int(cursor) < total:
        raise ConfigError(f"cursor {cursor!r} is not a next_cursor of this question (ask again without it)")
    return int(cursor)


def _common(result: CheckResult | CorrectionResult) -> dict[str, Any]:
    return {"findings": [f.to_dict() for f in result.findings], "refused": result.refused, "error": result.error,
            "explanation": result.explain()}


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
    return {"database": database, "sql": result.sql, "wrong": result.wrong, **_common(result)}


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
    return {"database": database, **correction_answer(result)}


def correction_answer(result: CorrectionResult) -> dict[str, Any]:
    """A correction as every door answers it, less the database's name: ``sql``, ``original_sql``,
    ``changed``, ``findings``, ``refused``, ``error``, ``explanation``."""
    return {"sql": result.sql, "original_sql": result.original_sql, "changed": result.changed, **_common(result)}


#: What an answer of :func:`run_query` holds when nothing ran.
NOT_RUN = {"ran": False, "columns": [], "rows": [], "row_count": 0, "truncated": False, "truncated_by": None,
           "seconds": None, "run_error": None}


def run_query(fixer: Corrector, sql: str, question: str | None = None, *, correct: bool = True,
              max_rows: int | None = RUN_ROWS, max_bytes: int = RUN_BYTES,
              cancel: threading.Event | None = None) -> dict[str, Any]:
    """Correct one query (unless ``correct`` is false), then run it read-only; its rows bounded.

    Args:
        fixer: the database's Corrector (its pipeline, its time limit, its allowed functions).
        sql: the query, untrusted.
        question: what it answers (evidence for the correction; default none).
        correct: correct first (:meth:`Corrector.correct`); false: run the query as given.
        max_rows: rows the answer holds at most, 1 to the database's row cap
            (:data:`~sqlmend.db.base.DEFAULT_MAX_ROWS`; ``run_sql``: 1 to :data:`~sqlmend.mcpserver.rows.MAX_RUN_ROWS`).
        max_bytes: bytes of values the answer holds at most.
        cancel: set by a caller that stops waiting: the correction and the query stop.

    Returns:
        ``correct_sql``'s answer less ``database`` (``sql`` is what ran), and ``ran``, ``columns``, ``rows``,
        ``row_count``, ``truncated``, ``truncated_by``, ``seconds`` (the query's) and ``run_error`` (why
        the query that ran failed). A refused text, or an ``error`` of the correction, is not run.

    Raises:
        ConfigError: ``max_rows`` out of range.
    """
    limit = rows_limit(max_rows, most=DEFAULT_MAX_ROWS)
    question = question or ""
    if correct:
        body = correction_answer(fixer.correct(question, sql, cancel=cancel))
    else:
        body = {"sql": sql, "original_sql": sql, "changed": False, "findings": [], "refused": False,
                "error": _not_text(sql), "explanation": "not corrected (correct=false): the query is run as given"}
    if body["refused"] or body["error"]:
        return {**body, **NOT_RUN}
    return {**body, **_run(fixer, body, question, limit, max_bytes, cancel)}


def _not_text(sql: Any) -> str | None:
    """The error of a query as given that is no query at all (as the pipeline words it), else None."""
    if not isinstance(sql, str):
        return error_text(InputError(f"the sql is not text (got {type(sql).__name__})"))
    return None if sql.strip() else "empty SQL"


def _run(fixer: Corrector, body: dict[str, Any], question: str, max_rows: int, max_bytes: int,
         cancel: threading.Event | None) -> dict[str, Any]:
    """Run ``body["sql"]`` on a connection of its own: the run's part of the answer. A refusal found here
    (a query run as given) adds the finding EX03, as the correction reports it."""
    timeout = fixer.config.timeout
    try:
        with connect(fixer.target) as db:
            db.allow_functions = fixer.pipeline.allow_functions  # the configuration's own pure functions
            db.budget = WorkBudget(timeout, cancel=cancel)  # a cancelled call stops the query too
            try:
                result = db.execute(body["sql"], timeout=timeout, max_rows=max_rows)
            except ReadOnlyViolation:
                refusal = rules.check(db, body["sql"], question, codes=["EX03"])
                return {**NOT_RUN, "refused": True, "findings": body["findings"] + [f.to_dict() for f in refusal]}
    except (SqlmendError, UnicodeError) as exc:  # the engine failed it, its time limit, a database gone
        return {**NOT_RUN, "run_error": error_text(exc)}
    return {"ran": True, **bounded(result, max_rows, max_bytes), "seconds": round(result.elapsed, 4),
            "run_error": None}


def run_sql(correctors: Correctors, database: str, sql: str, question: str | None = None, correct: bool = True,
            max_rows: int | None = RUN_ROWS, cancel: threading.Event | None = None) -> dict[str, Any]:
    """One read-only query of allowed functions, corrected first unless ``correct`` is false
    (:func:`run_query` on the database's Corrector).

    Returns:
        ``database`` and :func:`run_query`'s answer.

    Raises:
        ConfigError: an unknown database, ``max_rows`` out of range.
    """
    fixer = corrector_of(correctors, database)
    return {"database": database, **run_query(fixer, sql, question, correct=correct, max_rows=rows_limit(max_rows),
                                              cancel=cancel)}


# --- text renderings (the tool results' text content) -------------------------


def databases_text(body: dict[str, Any]) -> str:
    """``list_databases``'s answer for a reader: one line per database."""
    lines = []
    for d in body["databases"]:
        schemas = ", ".join(f"{s['name']} ({s['relations']})" for s in d["schemas"]) if len(d["schemas"]) > 1 else ""
        tables = f": {', '.join(d['tables'])}" if d.get("tables") is not None else ""
        lines.append(f"{d['name']} ({d['dialect']}): {d['relations']} relations" +
                     (f" in {len(d['schemas'])} schemas: {schemas}" if schemas else "") + tables)
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
    if body.get("next_cursor"):
        lines.append(f"{len(body['tables'])} of {body['relations']} relations shown; the next page: "
                     f"cursor={body['next_cursor']!r} (or ask for a schema= or tables=)")
    return "\n".join(lines)


def run_text(body: dict[str, Any]) -> str:
    """``run_sql``'s answer for a reader: what ran (the corrected query, and the one given), the findings,
    then the rows, or why nothing ran."""
    lines = [f"corrected: {body['sql']}", f"  (as given: {body['original_sql']})"] if body["changed"] \
        else [f"query: {body['sql']}"]
    lines += [f"  {f['code']} {f['error_type']}: {f['message']}" for f in body["findings"]]
    if body["refused"]:
        lines.append("not run: the text is not one read-only query")
    elif body["error"]:
        lines.append(f"not run: {body['error']}")
    elif body["run_error"]:
        lines.append(f"failed: {body['run_error']}")
    else:
        lines.append(table_text(body))
    return "\n".join(lines)


__all__ = ["BUDGET", "NOT_RUN", "SAMPLE_VALUES", "SCHEMA_BUDGET", "check_sql", "correction_answer", "corrector_of",
           "correct_sql", "databases_text", "describe_schema", "find_schema", "list_databases", "run_query", "run_sql",
           "run_text", "schema_text"]

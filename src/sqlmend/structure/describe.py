"""Everything the detector needs to see about one (question, SQL) on a database."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlmend import sql as sqlmod
from sqlmend.errors import DatabaseError, SqlError
from sqlmend.structure.canonical import canonical_sql
from sqlmend.structure.qss import build, serialize
from sqlmend.structure.serialize import ast_text, exec_text
from sqlmend.structure import needs
from sqlmend.types import ExecResult, Schema


@dataclass
class Description:
    """The structural context of one SQL: QSS text, AST text, execution feedback."""

    sql: str  # the SQL in canonical form (what the detector reads)
    qss: str
    ast: str
    exec: str
    result: ExecResult | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {"sql": self.sql, "qss": self.qss, "ast": self.ast, "exec": self.exec}


def _tree(sql_text: str) -> Any:
    """The parsed SQL, or None when it does not parse."""
    try:
        return sqlmod.parse(sql_text)
    except SqlError:
        return None


def _names(tree: Any, kind: Any) -> list[str]:
    """Distinct names of the nodes of one kind in a parsed SQL (empty for None)."""
    if tree is None:
        return []
    return list(dict.fromkeys(n.name for n in tree.find_all(kind) if n.name))


def sql_tables(sql_text: str) -> list[str]:
    """Names of the tables a SQL reads (empty when it does not parse)."""
    return _names(_tree(sql_text), sqlmod.ast.Table)


def sql_columns(sql_text: str) -> list[str]:
    """Names (without table) of the columns a SQL mentions (empty when it does not parse)."""
    return _names(_tree(sql_text), sqlmod.ast.Column)


def _needed(schema: Schema, question: str, sql_text: str, value_index: Any, dialect: str) -> Schema:
    """``schema``, or for one too big to send whole the relations the question and the SQL need
    (:func:`sqlmend.structure.needs.prompt_tables`), the structure's schema nodes."""
    keys = needs.prompt_tables(schema, question, sql_text, values=value_index, dialect=dialect or "sqlite")
    if keys is None:
        return schema
    keep = {k.lower() for k in keys}
    return Schema(tables=[t for t in schema.tables if t.name.lower() in keep], dialect=schema.dialect,
                  search_path=list(schema.search_path))


def describe(db: Any, question: str, sql_text: str, samples: dict[str, list[Any]] | None = None,
             value_index: Any = None, embed: Any = None, result: ExecResult | None = None,
             error: str | None = None, timeout: float = 10.0, max_rows: int = 50,
             qss_chars: int = 1200, linked_only: bool = True) -> Description:
    """Build the QSS, AST and execution feedback of ``sql_text`` for ``question``.

    Args:
        db: an open database.
        question: the natural-language question.
        sql_text: the SQL under test.
        samples: sample values per "table.column" (:func:`sqlmend.structure.sample_values`).
        value_index: the database's value index, for value links (optional).
        embed: ``texts -> vectors``, for embedding links (optional).
        result: the SQL's result when already known (skips execution).
        error: the SQL's execution error when already known.
        timeout: time limit of the execution, in seconds.
        max_rows: rows fetched.
        qss_chars: the size budget of the QSS text.
        linked_only: write only the linked sub-graph of the schema (ErrorLLM §2.3; see
            :func:`sqlmend.structure.qss.serialize`); False writes the whole schema. A schema too big to
            send whole (:func:`sqlmend.structure.needs.whole_below`) is first narrowed to the relations the
            question and the SQL need.

    Returns:
        A :class:`Description`.
    """
    if result is None and error is None:
        try:
            result = db.execute(sql_text, timeout=timeout, max_rows=max_rows)
        except DatabaseError as e:
            error = getattr(e, "engine_message", None) or str(e)
    schema = db.schema()
    qss = build(question, _needed(schema, question, sql_text, value_index, getattr(db, "dialect", "sqlite")),
                samples=samples, value_index=value_index, embed=embed)
    text = canonical_sql(sql_text, schema, dialect=getattr(db, "dialect", "sqlite") or "sqlite")
    tree = _tree(sql_text)  # parsed once for both focus lists
    qss_text = serialize(qss, focus=_names(tree, sqlmod.ast.Table), max_chars=qss_chars,
                         focus_columns=_names(tree, sqlmod.ast.Column), linked_only=linked_only)
    return Description(text, qss_text, ast_text(text),
                       exec_text(result, error), result, error)

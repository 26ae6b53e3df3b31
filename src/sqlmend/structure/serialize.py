"""Compact text of a SQL's AST and of its execution feedback, and the detector input.

ErrorLLM §3.1 feeds the detector
``x^(Det) = [I ‖ q ‖ G ‖ ŷ ‖ τ_ŷ ‖ Exec(ŷ, D)]``: an instruction, the
question, the question-schema structure, the SQL, its AST and its execution
result. :func:`detector_input` assembles it within a character budget (the
QSS is the part that is cut first).
"""

from __future__ import annotations

from typing import Any

from sqlmend import sql as sqlmod
from sqlmend.errors import SqlParseError
from sqlmend.sql import ast
from sqlmend.types import ExecResult

#: sqlglot args that are not children worth writing.
_SKIP_ARGS = {"comments", "quoted", "is_string"}


def ast_text(tree: Any, max_chars: int = 600) -> str:
    """Write a tree as a compact S-expression, e.g. ``(select (col singer.name) (from singer))``.

    Columns become ``(col t.c)``, literals their SQL text, identifiers their
    name; other nodes ``(kind child ...)``.

    Args:
        tree: a tree from :func:`sqlmend.sql.parse`, or SQL text to parse.
        max_chars: the size budget (the text is cut with ``…``).

    Returns:
        The text, or ``(unparsable)`` when the SQL does not parse.
    """
    if isinstance(tree, str):
        try:
            tree = sqlmod.parse(tree)
        except SqlParseError:
            return "(unparsable)"

    def walk(node: Any) -> str:
        if isinstance(node, ast.Column):
            return f"(col {node.sql()})"
        if isinstance(node, ast.Literal):
            return node.sql()
        if isinstance(node, ast.Star):
            return "*"
        if isinstance(node, (ast.Identifier, ast.Var)):
            return node.name
        if isinstance(node, ast.Table):
            alias = f" as {node.alias}" if node.alias else ""
            return f"(table {node.name}{alias})"
        parts = [node.key]
        for key, value in node.args.items():
            if key in _SKIP_ARGS or value is None or value is False or value == []:
                continue
            values = value if isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, ast.Expression):
                    parts.append(walk(v))
                elif v is True:
                    parts.append(key)
        return "(" + " ".join(parts) + ")"

    text = walk(tree)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def exec_text(result: ExecResult | None = None, error: str | None = None, max_rows: int = 3,
              max_chars: int = 300) -> str:
    """Describe an execution result (or failure) in one or two short lines.

    Args:
        result: what the database returned.
        error: why the query failed, when it did.
        max_rows: rows shown.
        max_chars: the size budget.

    Returns:
        e.g. ``ok: 3 rows x 2 cols (name, age); rows: ('Joe', 52) | ...``,
        ``empty: 0 rows x 1 cols (name)`` or ``error: no such column: x``.
    """
    if error is not None or result is None:
        return ("error: " + (error or "not executed"))[:max_chars]
    n = len(result.rows)
    head = "empty" if n == 0 else "ok"
    more = "+" if result.truncated else ""
    text = f"{head}: {n}{more} rows x {len(result.columns)} cols ({', '.join(result.columns)})"
    if n:
        shown = " | ".join(str(tuple(r))[:60] for r in result.rows[:max_rows])
        text += f"; rows: {shown}"
    return text[:max_chars]


def detector_input(instruction: str, question: str, qss_text: str, sql_text: str, ast_str: str,
                   exec_str: str, evidence: str = "", max_chars: int = 2400) -> str:
    """Assemble ``x^(Det) = [I ‖ q ‖ G ‖ ŷ ‖ τ_ŷ ‖ Exec]`` (ErrorLLM §3.1).

    The sections are labelled lines; when the whole exceeds ``max_chars`` the
    QSS is cut first, then the AST.

    Args:
        instruction: the task instruction (a data file of the detector).
        question: the question (evidence is appended when given).
        qss_text: :func:`sqlmend.structure.serialize_qss` output.
        sql_text: the SQL under test.
        ast_str: :func:`ast_text` output.
        exec_str: :func:`exec_text` output.
        evidence: optional external knowledge (BIRD).
        max_chars: the size budget.

    Returns:
        The detector input text, ending with the answer prompt ``Errors:``.
    """
    q = question + (f" (evidence: {evidence})" if evidence else "")
    fixed = len(instruction) + len(q) + len(sql_text) + len(exec_str) + 64
    room = max(max_chars - fixed, 200)
    ast_room = min(len(ast_str), max(room // 3, 120))
    qss_room = max(room - ast_room, 120)
    if len(qss_text) > qss_room:
        qss_text = qss_text[: qss_room - 1] + "…"
    if len(ast_str) > ast_room:
        ast_str = ast_str[: ast_room - 1] + "…"
    return (f"{instruction.strip()}\n"
            f"Question: {q}\n"
            f"Schema:\n{qss_text}\n"
            f"SQL: {sql_text}\n"
            f"AST: {ast_str}\n"
            f"Result: {exec_str}\n"
            f"Errors:")

"""VL13: text a function returns compared with a number, a comparison that can never hold."""

from __future__ import annotations

from sqlmend.rules.analysis import literal_value
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.rules.literals import changes_result
from sqlmend.sql import ast
from sqlmend.sql.fixes import node_path
from sqlmend.types import Finding

#: Nodes of functions that return text (SQLite gives their result no type affinity, so the text is
#: never converted to the number it is compared with; PostgreSQL refuses ``text = integer``).
TEXT_NODES = (ast.TimeToStr, ast.Substring, ast.Upper, ast.Lower, ast.Trim, ast.DPipe, ast.Concat,
              ast.Replace, ast.Date)
#: Functions sqlglot leaves unnamed that return text.
TEXT_FUNCTIONS = {"STRFTIME", "SUBSTR", "PRINTF", "FORMAT", "TIME", "DATETIME", "LTRIM", "RTRIM", "TO_CHAR",
                  "LEFT", "RIGHT", "CHAR", "HEX"}
_COMPARISONS = (ast.EQ, ast.NEQ, ast.GT, ast.GTE, ast.LT, ast.LTE)


def _returns_text(node) -> bool:
    if isinstance(node, ast.Paren):
        return _returns_text(node.this)
    return isinstance(node, TEXT_NODES) or (isinstance(node, ast.Anonymous)
                                            and node.name.upper() in TEXT_FUNCTIONS)


def _number(node) -> float | int | None:
    value = literal_value(node)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class TextNumber(Rule):
    """Text a function returns is compared with a number: the comparison never holds as meant; the text is read as a number.

    ``strftime('%Y', d) = 2024`` compares the text '2024' with the number 2024: in SQLite a
    function's result has no type affinity, so text never equals a number and always sorts after
    one (the condition keeps no row, or every row); PostgreSQL refuses ``text = integer``. The
    text is cast to a number (INTEGER for whole numbers, REAL otherwise), which keeps '03' = 3
    right too. Reported when the cast changes the query's result. Fix: ``CAST(text AS INTEGER)``.

    Anti-pattern::

        SELECT count(*) FROM Ref_Calendar WHERE strftime('%Y', Calendar_Date) = 1972

    Fixed::

        SELECT COUNT(*) FROM Ref_Calendar WHERE CAST(STRFTIME('%Y', Calendar_Date) AS INTEGER) = 1972
    """

    code = "VL13"
    name = "value.text_number"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        tree = ctx.analysis.tree
        if tree is None:
            return []
        out = []
        pairs = [(n, [n.this, n.expression]) for n in tree.find_all(*_COMPARISONS)]
        pairs += [(n, [n.this, *n.expressions]) for n in tree.find_all(ast.In) if n.expressions]
        pairs += [(n, [n.this, n.args.get("low"), n.args.get("high")]) for n in tree.find_all(ast.Between)]
        for node, (first, *rest) in ((n, sides) for n, sides in pairs if len(sides) >= 2):
            if isinstance(node, (ast.In, ast.Between)):
                text, numbers = (first, rest) if _returns_text(first) else (None, [])
            else:
                text = next((s for s in (first, *rest) if _returns_text(s)), None)
                numbers = [s for s in (first, *rest) if s is not text]
            values = [_number(n) for n in numbers]
            if text is None or not values or any(v is None for v in values):
                continue
            kind = "INTEGER" if all(isinstance(v, int) for v in values) else "REAL"
            written = text.sql(dialect=ctx.dialect)
            out.append(self.finding(
                detail=f"({written} is text, compared with {', '.join(map(str, values))}: read it as {kind})",
                location=node.sql(dialect=ctx.dialect), evidence={"text": written, "numbers": values, "as": kind},
                fixes=[{"op": "cast", "path": node_path(text), "expect": written, "type": kind}]))
        if out and not changes_result(ctx, [f.fixes[0] for f in out]):
            return []
        return out


RULE = TextNumber()

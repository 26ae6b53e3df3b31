"""Spider's hardness levels (easy / medium / hard / extra), computed from the gold SQL.

This is a port of the published rule of Spider's ``evaluation.py``
(Yu et al., EMNLP 2018; ``Evaluator.eval_hardness``): the SQL is parsed into
Spider's clause structure (``process_sql.py``), then ``count_component1``
(WHERE, GROUP BY, ORDER BY, LIMIT, joins, OR, LIKE), ``count_component2``
(nested queries: subqueries in conditions and INTERSECT/UNION/EXCEPT) and
``count_others`` (several aggregates, several SELECT columns, several WHERE
conditions, several GROUP BY columns) decide the level.

The parser is schema-free (Spider's needs ``tables.json`` only to map names to
ids, which the counts never use) and a little more tolerant than the original
(``AS`` aliases in SELECT, implicit table aliases, ``LEFT JOIN``, comma joins).
It keeps the original's quirks that change counts, e.g. ``count_agg`` applied
to the HAVING list counts its AND/OR connectors.

It is a tokenizer plus a recursive-descent reader of one SQL dialect subset,
not a SQL parser for the rest of sqlmend (that is ``sqlmend.sql``).

>>> hardness("SELECT count(*) FROM singer")
'easy'
>>> hardness("SELECT name FROM singer ORDER BY age DESC LIMIT 1")
'medium'
>>> hardness("SELECT name FROM singer WHERE age > 20 ORDER BY age DESC LIMIT 1")
'hard'
>>> hardness("SELECT name FROM a WHERE id NOT IN (SELECT id FROM b) AND x = 1")
'extra'
"""

from __future__ import annotations

import re
from typing import Any

LEVELS = ("easy", "medium", "hard", "extra")

CLAUSE_KEYWORDS = ("select", "from", "where", "group", "order", "limit", "intersect", "union", "except")
JOIN_KEYWORDS = ("join", "on", "as")
WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
UNIT_OPS = ("none", "-", "+", "*", "/")
AGG_OPS = ("none", "max", "min", "count", "sum", "avg")
COND_OPS = ("and", "or")
SQL_OPS = ("intersect", "union", "except")
ORDER_OPS = ("desc", "asc")
_JOIN_PREFIXES = ("inner", "left", "right", "outer", "cross", "natural", "full")
_RESERVED = set(CLAUSE_KEYWORDS) | set(JOIN_KEYWORDS) | set(WHERE_OPS) | set(COND_OPS) | set(ORDER_OPS) | {
    "having", "by", "distinct", *_JOIN_PREFIXES}

_TOKEN = re.compile(
    r'"[^"]*"'                 # string value (Spider turns ' into " first)
    r"|`[^`]*`"                # quoted identifier
    r"|\[[^\]]*\]"             # bracketed identifier
    r"|\d+\.\d*|\.\d+|\d+"     # numbers
    r"|[A-Za-z_][\w$]*(?:\.(?:[A-Za-z_][\w$]*|\*|`[^`]*`))*"  # names, t.col, t.*
    r"|!=|>=|<=|<>|\|\||[=<>(),;*+\-/%!]"
)


class SpiderParseError(ValueError):
    """The SQL is outside what Spider's structure reader understands."""


def tokenize(sql: str) -> list[str]:
    """Split SQL the way Spider's ``process_sql.tokenize`` does.

    Single quotes become double quotes, string values stay one token with
    their case, everything else is lower-cased.

    Args:
        sql: the SQL text.

    Returns:
        The tokens.

    Raises:
        SpiderParseError: unbalanced quotes or an unknown character.
    """
    text = str(sql).replace("'", '"')
    if text.count('"') % 2:
        raise SpiderParseError("unexpected quote")
    toks: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        gap = text[pos:m.start()]
        if gap.strip():
            raise SpiderParseError(f"cannot read {gap.strip()!r}")
        tok = m.group()
        toks.append(tok if tok.startswith('"') else tok.lower())
        pos = m.end()
    if text[pos:].strip():
        raise SpiderParseError(f"cannot read {text[pos:].strip()!r}")
    return ["!=" if t == "<>" else t for t in toks]


class _Reader:
    """Spider's ``process_sql`` clause reader over a token list (schema-free)."""

    def __init__(self, toks: list[str]):
        self.toks = toks
        self.n = len(toks)

    def tok(self, idx: int) -> str:
        if idx >= self.n:
            raise SpiderParseError("unexpected end of SQL")
        return self.toks[idx]

    def at(self, idx: int, *values: str) -> bool:
        return idx < self.n and self.toks[idx] in values

    def expect(self, idx: int, value: str) -> int:
        if self.tok(idx) != value:
            raise SpiderParseError(f"expected {value!r} at token {idx}, found {self.toks[idx]!r}")
        return idx + 1

    # --- units ----------------------------------------------------------
    def col(self, idx: int) -> int:
        tok = self.tok(idx)
        if tok in _RESERVED or tok in ("(", ")", ",", ";"):
            raise SpiderParseError(f"expected a column at token {idx}, found {tok!r}")
        return idx + 1

    def col_unit(self, idx: int) -> tuple[int, tuple]:
        block = self.at(idx, "(")
        if block:
            idx += 1
        distinct = False
        if self.tok(idx) in AGG_OPS:
            agg = AGG_OPS.index(self.toks[idx])
            idx = self.expect(idx + 1, "(")
            if self.at(idx, "distinct"):
                idx, distinct = idx + 1, True
            idx = self.col(idx)
            idx = self.expect(idx, ")")
            if block:  # Spider returns here without consuming the block's ')'
                idx = self.expect(idx, ")")
            return idx, (agg, distinct)
        if self.at(idx, "distinct"):
            idx, distinct = idx + 1, True
        idx = self.col(idx)
        if block:
            idx = self.expect(idx, ")")
        return idx, (0, distinct)

    def val_unit(self, idx: int) -> tuple[int, tuple]:
        block = self.at(idx, "(")
        if block:
            idx += 1
        idx, unit1 = self.col_unit(idx)
        op, unit2 = 0, None
        if self.at(idx, *UNIT_OPS[1:]):
            op = UNIT_OPS.index(self.toks[idx])
            idx, unit2 = self.col_unit(idx + 1)
        if block:
            idx = self.expect(idx, ")")
        return idx, (op, unit1, unit2)

    def value(self, idx: int) -> tuple[int, Any]:
        block = self.at(idx, "(")
        if block:
            idx += 1
        tok = self.tok(idx)
        if tok == "select":
            idx, val = self.sql(idx)
        elif tok.startswith('"'):
            val, idx = tok, idx + 1
        elif re.fullmatch(r"-?(\d+\.?\d*|\.\d+)", tok):
            val, idx = float(tok), idx + 1
        elif tok == "-" and re.fullmatch(r"\d+\.?\d*|\.\d+", self.tok(idx + 1)):
            val, idx = -float(self.toks[idx + 1]), idx + 2
        else:
            end = idx
            while end < self.n and self.toks[end] not in (",", ")", "and") \
                    and self.toks[end] not in CLAUSE_KEYWORDS and self.toks[end] not in JOIN_KEYWORDS:
                end += 1
            _, val = _Reader(self.toks[idx:end]).col_unit(0)
            idx = end
        if block:
            idx = self.expect(idx, ")")
        return idx, val

    def condition(self, idx: int) -> tuple[int, list]:
        conds: list = []
        while idx < self.n:
            idx, unit = self.val_unit(idx)
            negated = False
            if self.at(idx, "not"):
                idx, negated = idx + 1, True
            op = self.tok(idx)
            if op not in WHERE_OPS:
                raise SpiderParseError(f"expected a comparison at token {idx}, found {op!r}")
            idx += 1
            if op == "is" and self.at(idx, "not"):
                idx, negated = idx + 1, True
            val2 = None
            if op == "between":
                idx, val1 = self.value(idx)
                idx = self.expect(idx, "and")
                idx, val2 = self.value(idx)
            else:
                idx, val1 = self.value(idx)
            conds.append((negated, WHERE_OPS.index(op), unit, val1, val2))
            if idx < self.n and (self.toks[idx] in CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")
                                 or self.toks[idx] in JOIN_KEYWORDS or self.toks[idx] == "having"):
                break
            if self.at(idx, *COND_OPS):
                conds.append(self.toks[idx])
                idx += 1
        return idx, conds

    # --- clauses --------------------------------------------------------
    def select(self, idx: int) -> list:
        idx = self.expect(idx, "select")
        if self.at(idx, "distinct"):
            idx += 1
        units = []
        while idx < self.n and self.toks[idx] not in CLAUSE_KEYWORDS:
            agg = 0
            if self.toks[idx] in AGG_OPS:
                agg = AGG_OPS.index(self.toks[idx])
                idx += 1
            idx, unit = self.val_unit(idx)
            units.append((agg, unit))
            if self.at(idx, "as"):
                idx += 2
            if self.at(idx, ","):
                idx += 1
        return units

    def from_(self, start: int) -> tuple[int, int, list]:
        try:
            idx = self.toks.index("from", start) + 1
        except ValueError:
            raise SpiderParseError("no FROM clause") from None
        units = 0
        conds: list = []
        while idx < self.n:
            block = self.at(idx, "(")
            if block:
                idx += 1
            if self.at(idx, "select"):
                idx, _ = self.sql(idx)
                units += 1
            else:
                while self.at(idx, *_JOIN_PREFIXES):
                    idx += 1
                if self.at(idx, "join", ","):
                    idx += 1
                idx = self.col(idx)  # table name
                units += 1
            if self.at(idx, "as"):
                idx += 2
            elif idx < self.n and self.toks[idx] not in _RESERVED and self.toks[idx] not in ("(", ")", ",", ";"):
                idx += 1  # implicit alias
            if self.at(idx, "on"):
                idx, these = self.condition(idx + 1)
                if conds:
                    conds.append("and")
                conds.extend(these)
            if block:
                idx = self.expect(idx, ")")
            if idx < self.n and (self.toks[idx] in CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")):
                break
        return idx, units, conds

    def sql(self, start: int) -> tuple[int, dict]:
        idx = start
        block = self.at(idx, "(")
        if block:
            idx += 1
        from_end, units, join_conds = self.from_(start)
        sql: dict[str, Any] = {"from": {"table_units": units, "conds": join_conds},
                               "select": self.select(idx)}
        idx = from_end
        sql["where"] = []
        if self.at(idx, "where"):
            idx, sql["where"] = self.condition(idx + 1)
        sql["groupBy"] = []
        if self.at(idx, "group"):
            idx = self.expect(idx + 1, "by")
            while idx < self.n and not (self.toks[idx] in CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")):
                idx, unit = self.col_unit(idx)
                sql["groupBy"].append(unit)
                if not self.at(idx, ","):
                    break
                idx += 1
        sql["having"] = []
        if self.at(idx, "having"):
            idx, sql["having"] = self.condition(idx + 1)
        sql["orderBy"] = []
        if self.at(idx, "order"):
            idx = self.expect(idx + 1, "by")
            units_ = []
            while idx < self.n and not (self.toks[idx] in CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")):
                idx, unit = self.val_unit(idx)
                units_.append(unit)
                if self.at(idx, *ORDER_OPS):
                    idx += 1
                if not self.at(idx, ","):
                    break
                idx += 1
            sql["orderBy"] = ["order", units_]
        sql["limit"] = None
        if self.at(idx, "limit"):
            idx += 2
            sql["limit"] = 1
        while self.at(idx, ";"):
            idx += 1
        if block:
            idx = self.expect(idx, ")")
        while self.at(idx, ";"):
            idx += 1
        for op in SQL_OPS:
            sql[op] = None
        if self.at(idx, *SQL_OPS):
            op = self.toks[idx]
            idx, sql[op] = self.sql(idx + 1)
        return idx, sql


def parse(sql: str) -> dict:
    """Read a SQL into Spider's clause structure (only what the hardness rule needs).

    Args:
        sql: the SQL text.

    Returns:
        A dict with ``select``, ``from``, ``where``, ``groupBy``, ``having``,
        ``orderBy``, ``limit``, ``intersect``, ``union``, ``except``.

    Raises:
        SpiderParseError: the SQL is outside Spider's grammar.
    """
    reader = _Reader(tokenize(sql))
    _, tree = reader.sql(0)
    return tree


# --- Spider evaluation.py: the counting rule --------------------------------

def _has_agg(unit: Any) -> bool:
    # Spider: ``unit[0] != AGG_OPS.index('none')``; applied to cond lists too (quirk kept).
    return unit[0] != 0


def _count_agg(units: list) -> int:
    return len([u for u in units if _has_agg(u)])


def _nested(sql: dict) -> list:
    nested = []
    for cond in sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]:
        if isinstance(cond[3], dict):
            nested.append(cond[3])
        if isinstance(cond[4], dict):
            nested.append(cond[4])
    nested.extend(sql[op] for op in ("intersect", "except", "union") if sql[op] is not None)
    return nested


def count_component1(sql: dict) -> int:
    """Spider's ``count_component1``: WHERE, GROUP BY, ORDER BY, LIMIT, joins, OR, LIKE."""
    count = sum(1 for key in ("where", "groupBy", "orderBy") if sql[key])
    count += sql["limit"] is not None
    if sql["from"]["table_units"] > 0:
        count += sql["from"]["table_units"] - 1
    connectors = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    count += len([c for c in connectors if c == "or"])
    conds = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    count += len([c for c in conds if c[1] == WHERE_OPS.index("like")])
    return count


def count_component2(sql: dict) -> int:
    """Spider's ``count_component2``: the number of nested queries."""
    return len(_nested(sql))


def count_others(sql: dict) -> int:
    """Spider's ``count_others``: several aggregates / SELECT columns / WHERE conditions / GROUP BY columns."""
    count = 0
    agg = _count_agg(sql["select"])
    agg += _count_agg(sql["where"][::2])
    agg += _count_agg(sql["groupBy"])
    if sql["orderBy"]:
        units = sql["orderBy"][1]
        agg += _count_agg([u[1] for u in units if u[1]] + [u[2] for u in units if u[2]])
    agg += _count_agg(sql["having"])
    count += agg > 1
    count += len(sql["select"]) > 1
    count += len(sql["where"]) > 1
    count += len(sql["groupBy"]) > 1
    return count


def classify(sql: dict) -> str:
    """Spider's ``eval_hardness`` on a parsed SQL.

    Args:
        sql: the structure returned by :func:`parse`.

    Returns:
        "easy", "medium", "hard" or "extra".
    """
    c1, c2, others = count_component1(sql), count_component2(sql), count_others(sql)
    if c1 <= 1 and others == 0 and c2 == 0:
        return "easy"
    if (others <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and others < 2 and c2 == 0):
        return "medium"
    if (others > 2 and c1 <= 2 and c2 == 0) or (2 < c1 <= 3 and others <= 2 and c2 == 0) \
            or (c1 <= 1 and others == 0 and c2 <= 1):
        return "hard"
    return "extra"


def hardness(sql: str) -> str | None:
    """The Spider hardness level of a (gold) SQL.

    Args:
        sql: the SQL text.

    Returns:
        "easy" / "medium" / "hard" / "extra", or None when the SQL is outside
        Spider's grammar.
    """
    try:
        return classify(parse(sql))
    except (SpiderParseError, IndexError):
        return None

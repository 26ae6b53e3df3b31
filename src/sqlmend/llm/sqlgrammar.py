"""A grammar of one SELECT over a given database, for grammar-constrained SQL decoding.

PICARD (Scholak et al., EMNLP 2021) rejects, token by token, SQL that does not parse or
names an unknown table or column. Here the same guarantee comes from the grammar itself,
and one more: every column is *in scope*. :func:`grammar` writes, per query, a grammar
(rendered in Lark, the dialect llguidance reads) whose alternatives are a few FROM-scopes
(:func:`scopes`): the tables of the SQL being rewritten with its aliases, that set with
one foreign-key neighbour more, and with one table less where the rest stays joined.
Inside an alternative the FROM clause is fixed (the scope's tables joined on
foreign-key pairs) and a column reference is only one of that scope's columns,
qualified by its alias or table name, or bare when no other table of the scope has the
name. Sub-queries choose their own single-table or table-pair scope. Decoding under it
can only produce SQL that parses, names real columns, and reads each column through a
table of its FROM; the rules also keep out what SQLite refuses to run (aggregates in
WHERE, a multi-column sub-query in ``IN``, set operations of unequal width, ...; see
:func:`grammar`). :meth:`Grammar.sample` draws random sentences of it (for tests).

The grammar is canonical, to keep a small model's choices few: upper-case keywords, one
space between tokens, ``, `` between list items, identifiers that need quoting in
backticks (so the SQL can sit in a JSON string unescaped), string literals in single
quotes without ``"`` or ``\\``. Covered: ``SELECT [DISTINCT]``, ``*``, expressions with
``+ - * /``, aggregates (``COUNT SUM AVG MIN MAX``, ``COUNT(*)``, ``DISTINCT``), sub-queries
in ``FROM`` (under ``SELECT COUNT(*)`` / ``SELECT *``), ``IN``, comparisons and select
items, ``WHERE`` with ``AND OR NOT``, comparisons, ``[NOT] IN``, ``[NOT] LIKE``,
``BETWEEN``, ``IS [NOT] NULL``, ``GROUP BY`` with ``HAVING``, ``ORDER BY ... ASC|DESC``,
``LIMIT``, ``UNION [ALL] / INTERSECT / EXCEPT``.

A JSON schema marks a string property as such SQL with :func:`mark` (the key
:data:`SQL_KEY` holds the tables, columns, foreign keys and the rewritten query's FROM,
compact and JSON-able, so the mark travels with the schema through the call log, the
cache and the OpenAI protocol).

>>> from sqlmend.types import Column, Schema, Table
>>> s = Schema([Table("singer", [Column("name"), Column("Age")])])
>>> '" FROM" " singer"' in sql_lark(s)
True
"""

from __future__ import annotations

import json
import re
from typing import Any

from sqlmend.types import Column, ForeignKey, Schema, Table

#: The JSON-schema key marking a string property as "one SELECT over these tables".
SQL_KEY = "x-sqlmend-sql"

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: SQLite keywords that cannot be bare identifiers (names that are get backticks): each
#: keyword SQLite 3.40 refuses as ``k.x`` / ``SELECT k`` is here, and a few more.
_RESERVED = frozenset("""ADD ALL ALTER AND AS ASC AUTOINCREMENT BETWEEN BY CASE CAST CHECK COLLATE
COLUMN COMMIT CONSTRAINT CREATE CROSS CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DEFAULT DEFERRABLE
DELETE DESC DISTINCT DROP ELSE END ESCAPE EXCEPT EXISTS FOREIGN FROM FULL GLOB GROUP HAVING IN INDEX
INNER INSERT INTERSECT INTO IS ISNULL JOIN LEFT LIKE LIMIT NATURAL NOT NOTHING NOTNULL NULL OF
OFFSET ON OR ORDER OUTER PRIMARY RAISE REFERENCES RETURNING RIGHT SELECT SET TABLE THEN TO
TRANSACTION UNION UNIQUE UPDATE USING VALUES WHEN WHERE""".split())


def ident(name: str, dialect: str = "sqlite") -> str:
    """An identifier as the grammar writes it: bare when it can be, else quoted.

    SQLite quotes in backticks; other dialects in double quotes, escaped for the JSON
    string the SQL is decoded in (``\\"``).

    Args:
        name: a table or column name.
        dialect: the database's dialect.

    Returns:
        The SQL spelling.

    >>> ident("name"), ident("Official ratings"), ident("order"), ident("cast")
    ('name', '`Official ratings`', '`order`', '`cast`')
    """
    if _PLAIN.match(name) and name.upper() not in _RESERVED:
        return name
    if dialect == "sqlite":
        return "`" + name.replace("`", "``") + "`"
    return '\\"' + name.replace('"', '\\"\\"') + '\\"'


def _lit(text: str) -> str:
    """A Lark string literal."""
    return json.dumps(text, ensure_ascii=False)


#: Most repetitions of each list (select items, AND-terms, ...). A greedy small model
#: otherwise repeats one condition until the token budget cuts the answer. ``compound``:
#: select items of each side of a UNION/INTERSECT/EXCEPT (the sides must agree).
LIMITS = {"setops": 2, "items": 6, "compound": 3, "group": 3, "order": 3, "or": 3, "and": 4,
          "having": 2, "in": 6, "terms": 3}
#: Most FROM-scopes: foreign-key neighbours added to the query's tables, and table pairs
#: offered to sub-queries (beyond every single table). Bounds grammar size and compile time.
MAX_NEIGHBOURS = 8
MAX_PAIRS = 24

# --- a small grammar form: rendered as Lark for llguidance, and walked by sample() ----------
# A rule is a list of alternatives; an alternative a tuple of symbols:
# ("l", text) a literal, ("r", name) a rule, ("o", (symbols...)) an optional group.
# Regular-expression rules are kept apart, each with a few values sample() draws from.


def _l(text: str) -> tuple:
    return ("l", text)


def _r(name: str) -> tuple:
    return ("r", name)


def _o(*symbols: tuple) -> tuple:
    return ("o", symbols)


def _seq(item: tuple, sep: tuple, most: int) -> tuple:
    """At most ``most`` times ``item``, with ``sep`` between (nested optionals)."""
    tail: tuple = ()
    for _ in range(most - 1):
        tail = (_o(sep, item, *tail),)
    return (item, *tail)


class Grammar:
    """Rules of one SQL grammar: ``rules`` (name -> alternatives), ``regex`` (name -> (pattern, samples))."""

    def __init__(self, start: str):
        self.start = start
        self.rules: dict[str, list[tuple]] = {}
        self.regex: dict[str, tuple[str, list[str]]] = {}

    def add(self, name: str, *alternatives: tuple) -> str:
        self.rules[name] = list(alternatives)
        return name

    def lark(self) -> str:
        """The Lark text (no ``start`` rule)."""
        def sym(x: tuple) -> str:
            if x[0] == "l":
                return _lit(x[1])
            if x[0] == "r":
                return x[1]
            return "(" + " ".join(sym(y) for y in x[1]) + ")?"

        lines = [f"{name}: " + " | ".join(" ".join(sym(x) for x in alt) for alt in alts)
                 for name, alts in self.rules.items()]
        lines += [f"{name}: /{pattern}/" for name, (pattern, _) in self.regex.items()]
        return "\n".join(lines) + "\n"

    def _heights(self) -> dict[str, int]:
        """Fewest nested rule expansions to a finished string, per rule."""
        h = {name: 1 for name in self.regex}
        changed = True

        def of(x: tuple) -> int:
            return 0 if x[0] != "r" else h.get(x[1], 10**6)

        while changed:
            changed = False
            for name, alts in self.rules.items():
                best = min(1 + max([of(x) for x in alt if x[0] != "o"], default=0) for alt in alts)
                if best < h.get(name, 10**6):
                    h[name], changed = best, True
        return h

    def sample(self, rng: Any, depth: int = 14) -> str:
        """One random sentence of the grammar (options and sub-queries thin out below ``depth``).

        Args:
            rng: a ``random.Random``.
            depth: nesting depth after which the shortest alternatives are taken.

        Returns:
            The sentence.
        """
        heights = self._heights()
        out: list[str] = []

        def walk(x: tuple, d: int) -> None:
            if x[0] == "l":
                out.append(x[1])
            elif x[0] == "o":
                if d < depth and rng.random() < 0.35:
                    for y in x[1]:
                        walk(y, d + 1)
            elif x[1] in self.regex:
                out.append(rng.choice(self.regex[x[1]][1]))
            else:
                alts = self.rules[x[1]]
                if d >= depth:
                    low = min(max([heights[y[1]] for y in a if y[0] == "r"], default=0) for a in alts)
                    alts = [a for a in alts
                            if max([heights[y[1]] for y in a if y[0] == "r"], default=0) == low]
                for y in rng.choice(alts):
                    walk(y, d + 1)

        walk(_r(self.start), 0)
        return "".join(out)


# --- FROM-scopes ---------------------------------------------------------------------------


class _Links:
    """Join pairs between tables: foreign keys and the query's own ``a.x = b.y`` joins.

    A pair naming a column its table does not have is left out (Spider declares a few such
    foreign keys, and the SQL being rewritten may join on a wrong column): the FROM clause
    the grammar fixes must run.
    """

    def __init__(self, schema: Schema, query_joins: list[list[str]]):
        self.schema = schema
        self.pairs: dict[frozenset, list[tuple[str, list[tuple[str, str]]]]] = {}
        for fk in schema.foreign_keys:
            self._add(fk.table, fk.ref_table, list(zip(fk.columns, fk.ref_columns)))
        for ta, ca, tb, cb in query_joins:
            self._add(ta, tb, [(ca, cb)])

    def _add(self, a: str, b: str, cols: list[tuple[str, str]]) -> None:
        ta, tb = self.schema.table(a), self.schema.table(b)
        if a != b and cols and ta and tb and all(ta.column(x) and tb.column(y) for x, y in cols):
            self.pairs.setdefault(frozenset((a, b)), []).append((a, cols))

    def on(self, a: str, b: str) -> list[tuple[str, str]] | None:
        """Column pairs ``(column of a, column of b)`` joining ``a`` to ``b``, or None."""
        for owner, cols in self.pairs.get(frozenset((a, b)), []):
            return cols if owner == a else [(y, x) for x, y in cols]
        return None

    def neighbours(self, table: str) -> list[str]:
        return sorted({t for k in self.pairs for t in k if table in k and t != table})

    def connected(self, tables: list[str]) -> bool:
        if not tables:
            return False
        seen, todo = {tables[0]}, [tables[0]]
        while todo:
            t = todo.pop()
            for u in tables:
                if u not in seen and self.on(t, u) is not None:
                    seen.add(u)
                    todo.append(u)
        return len(seen) == len(set(tables))


def _canon(schema: Schema, name: str) -> str | None:
    t = schema.table(name)
    return t.name if t is not None and t.columns else None


Scope = list[tuple[str, "str | None"]]


def _queries(query: Any) -> list[dict]:
    return [q for q in (query if isinstance(query, list) else [query]) if isinstance(q, dict)]


def _links(schema: Schema, query: Any) -> _Links:
    joins = [[_canon(schema, ta), ca, _canon(schema, tb), cb]
             for q in _queries(query) for ta, ca, tb, cb in q.get("joins") or []]
    return _Links(schema, [j for j in joins if j[0] and j[2]])


def scopes(schema: Schema, query: Any = None) -> tuple[list[Scope], list[Scope]]:
    """The FROM-scopes of the grammar: those of the whole query, and those of sub-queries.

    A scope is a list of ``(table, alias or None)``. Top-level scopes: the query's own
    tables with its aliases; that set plus one foreign-key neighbour of it (alias ``Tk``,
    the next free one, when the query aliases every table); that set minus one table when
    the rest stays joined. Sub-query scopes: every single table and every foreign-key pair
    (at most :data:`MAX_PAIRS`), unaliased. Without a query (or when none of its tables is
    the schema's), the top-level scopes are the sub-query scopes.

    Args:
        schema: the database.
        query: ``{"from": [[table, alias], ...], "joins": [[ta, ca, tb, cb], ...]}``
            (:func:`sqlmend.sql.from_tables` of the SQL being rewritten), or a list of
            them (the scopes of each, together).

    Returns:
        ``(top, sub)``.
    """
    return _scopes(schema, query, _links(schema, query))


def _scopes(schema: Schema, query: Any, links: _Links) -> tuple[list[Scope], list[Scope]]:
    singles = [[(t.name, None)] for t in schema.tables if t.columns]
    pairs = sorted({tuple(sorted(k)) for k in links.pairs if len(k) == 2})[:MAX_PAIRS]
    sub = singles + [[(a, None), (b, None)] for a, b in pairs]
    top: list[Scope] = []
    for q in _queries(query):
        frm = [(_canon(schema, t), a) for t, a in q.get("from") or []]
        top += _around([(t, a) for t, a in frm if t], links)
    if not top:
        return sub, sub
    seen, out = set(), []
    for sc in top:
        key = tuple(sorted((t, (a or "").lower()) for t, a in sc))
        if key not in seen:
            seen.add(key)
            out.append(sc)
    return out, sub


def _around(frm: Scope, links: _Links) -> list[Scope]:
    """A query's own scope, with one foreign-key neighbour more, with one table less."""
    if not frm:
        return []
    top = [frm]
    aliased = all(a for _, a in frm)
    used = {a.lower() for _, a in frm if a}
    names = {t for t, _ in frm}
    added = 0
    for n in sorted({u for t in names for u in links.neighbours(t)} - names):
        if added == MAX_NEIGHBOURS:
            break
        alias = None
        if aliased:
            k = 1
            while f"t{k}" in used:
                k += 1
            alias = f"T{k}"
        top.append(frm + [(n, alias)])
        added += 1
    if len(frm) > 1:
        for i in range(len(frm)):
            rest = frm[:i] + frm[i + 1:]
            if links.connected([t for t, _ in rest]):
                top.append(rest)
    return top


def _from_text(scope: list[tuple[str, str | None]], links: _Links, d: str) -> str:
    """``t1 [AS a1] JOIN t2 [AS a2] ON a1.x = a2.y ...``: each table joined on a pair to an earlier one."""
    order, rest = [scope[0]], list(scope[1:])
    while rest:  # next: the first table with a join pair to one already placed
        nxt = next((e for e in rest if any(links.on(p[0], e[0]) for p in order)), rest[0])
        rest.remove(nxt)
        order.append(nxt)
    parts = []
    for i, (t, a) in enumerate(order):
        src = ident(t, d) + (f" AS {ident(a, d)}" if a else "")
        if i == 0:
            parts.append(src)
            continue
        on = ""
        for pt, pa in order[:i]:
            cols = links.on(pt, t)
            if cols:
                q1, q2 = ident(pa or pt, d), ident(a or t, d)
                on = " ON " + " AND ".join(f"{q1}.{ident(x, d)} = {q2}.{ident(y, d)}" for x, y in cols)
                break
        parts.append(" JOIN " + src + on)
    return "".join(parts)


def _columns(schema: Schema, scope: list[tuple[str, str | None]], d: str) -> list[str]:
    """The column references of a scope: qualified by alias (or table name), and bare when unambiguous."""
    count: dict[str, int] = {}
    for t, _ in scope:
        for c in schema.table(t).columns:
            count[c.name.lower()] = count.get(c.name.lower(), 0) + 1
    out = []
    for t, a in scope:
        q = ident(a or t, d)
        for c in schema.table(t).columns:
            out.append(f"{q}.{ident(c.name, d)}")
            if count[c.name.lower()] == 1:
                out.append(ident(c.name, d))
    return sorted(set(out))


#: ``COUNT(*)`` in pieces: as one literal, ``COUNT(`` would be read on into it (see the FROM clause)
_COUNT_STAR = (_l("COUNT"), _l("("), _l("*"), _l(")"))


def _shared(g: Grammar, r: str) -> None:
    n = LIMITS
    g.add(f"{r}_lit", (_r(f"{r}_number"),), (_r(f"{r}_string"),), (_l("NULL"),))
    g.add(f"{r}_setop", *[(_l(x),) for x in (" UNION ", " UNION ALL ", " INTERSECT ", " EXCEPT ")])
    g.add(f"{r}_cmp", *[(_l(f" {x} "),) for x in ("=", "!=", "<", "<=", ">", ">=")])
    g.add(f"{r}_fn", *[(_l(x),) for x in ("COUNT", "SUM", "AVG", "MIN", "MAX")])
    g.add(f"{r}_mul", (_l(" * "),), (_l(" / "),))
    g.add(f"{r}_add", (_l(" + "),), (_l(" - "),))
    g.add(f"{r}_dir", (_l(" ASC"),), (_l(" DESC"),))
    g.add(f"{r}_andor", (_l(" AND "),), (_l(" OR "),))
    g.add(f"{r}_limit", (_l(" LIMIT "), _r(f"{r}_int")))
    g.add(f"{r}_inlist", (_r(f"{r}_sub"),), _seq(_r(f"{r}_lit"), _l(", "), n["in"]))
    g.regex[f"{r}_number"] = (r"-?[0-9]{1,12}(\.[0-9]{1,6})?", ["0", "1", "3", "-2", "2.5", "1990"])
    g.regex[f"{r}_int"] = (r"[1-9][0-9]{0,5}", ["1", "3", "10"])
    g.regex[f"{r}_string"] = (r"'([^'\"\\\x00-\x1f]|''){0,80}'",
                              ["'France'", "''", "'it''s'", "'%a%'", "'1999'"])
    g.regex[f"{r}_label"] = (r"[a-z][a-z0-9_]{0,15}", ["cnt", "x", "total_1"])


def _scope_rules(g: Grammar, r: str, p: str, columns: list[str], frm: str, sub_scope: bool) -> None:
    """The rules of one scope ``p``: its columns, expressions, conditions and SELECTs."""
    n = LIMITS
    g.add(f"{p}_col", *[(_l(c),) for c in columns])
    g.add(f"{p}_atom", (_r(f"{p}_col"),), (_r(f"{r}_lit"),), (_l("("), _r(f"{r}_sub"), _l(")")))
    g.add(f"{p}_term", _seq(_r(f"{p}_atom"), _r(f"{r}_mul"), n["terms"]))
    g.add(f"{p}_expr", _seq(_r(f"{p}_term"), _r(f"{r}_add"), n["terms"]))
    g.add(f"{p}_agg", (_r(f"{r}_fn"), _l("("), _o(_l("DISTINCT ")), _r(f"{p}_expr"), _l(")")), _COUNT_STAR)
    g.add(f"{p}_aatom", (_r(f"{p}_atom"),), (_r(f"{p}_agg"),))
    g.add(f"{p}_aterm", _seq(_r(f"{p}_aatom"), _r(f"{r}_mul"), n["terms"]))
    g.add(f"{p}_aexpr", _seq(_r(f"{p}_aterm"), _r(f"{r}_add"), n["terms"]))
    e = _r(f"{p}_expr")
    g.add(f"{p}_pred", (e,), (e, _r(f"{r}_cmp"), e),
          (e, _o(_l(" NOT")), _l(" IN ("), _r(f"{r}_inlist"), _l(")")),
          (e, _o(_l(" NOT")), _l(" LIKE "), _r(f"{r}_string")),
          (e, _l(" BETWEEN "), e, _l(" AND "), e),
          (e, _l(" IS "), _o(_l("NOT ")), _l("NULL")),
          (_l("("), _r(f"{p}_cond"), _l(")")))
    g.add(f"{p}_neg", (_o(_l("NOT ")), _r(f"{p}_pred")))
    g.add(f"{p}_conj", _seq(_r(f"{p}_neg"), _l(" AND "), n["and"]))
    g.add(f"{p}_cond", _seq(_r(f"{p}_conj"), _l(" OR "), n["or"]))
    g.add(f"{p}_hpred", (_r(f"{p}_aexpr"), _r(f"{r}_cmp"), _r(f"{p}_aexpr")))
    g.add(f"{p}_group", (_l(" GROUP BY "), *_seq(_r(f"{p}_col"), _l(", "), n["group"]),
                         _o(_l(" HAVING "), *_seq(_r(f"{p}_hpred"), _r(f"{r}_andor"), n["having"]))))
    # the FROM clause word by word: as one literal it would be a prefix of a bigger scope's
    # (llguidance's lexer extends the longest literal, and " WHERE" would then be refused)
    g.add(f"{p}_tail", (*[_l(" " + w) for w in ("FROM " + frm).split(" ")], _o(_l(" WHERE "), _r(f"{p}_cond"))))
    # ORDER BY a column (a number would be a position), an aggregate only after GROUP BY
    # (SQLite: "misuse of aggregate" otherwise)
    g.add(f"{p}_order", (_l(" ORDER BY "), *_seq(_r(f"{p}_ord"), _l(", "), n["order"])))
    g.add(f"{p}_ord", (_r(f"{p}_col"), _o(_r(f"{r}_dir"))))
    g.add(f"{p}_aorder", (_l(" ORDER BY "), *_seq(_r(f"{p}_aord"), _l(", "), n["order"])))
    g.add(f"{p}_aord", (_r(f"{p}_col"), _o(_r(f"{r}_dir"))), (_r(f"{p}_agg"), _o(_r(f"{r}_dir"))))
    g.add(f"{p}_end", (_r(f"{p}_group"), _o(_r(f"{p}_aorder")), _o(_r(f"{r}_limit"))),
          (_o(_r(f"{p}_order")), _o(_r(f"{r}_limit"))))
    g.add(f"{p}_item", (_r(f"{p}_aexpr"), _o(_l(" AS "), _r(f"{r}_label"))))
    head = (_l("SELECT "), _o(_l("DISTINCT ")))
    g.add(f"{p}_items", (_l("*"),), _seq(_r(f"{p}_item"), _l(", "), n["items"]))
    g.add(f"{p}_top", (*head, _r(f"{p}_items"), _r(f"{p}_tail"), _r(f"{p}_end")))
    for k in range(1, n["compound"] + 1):  # a side of a set operation: exactly k items
        items = [_r(f"{p}_item")] + [x for _ in range(k - 1) for x in (_l(", "), _r(f"{p}_item"))]
        g.add(f"{p}_sel{k}", (*head, *items, _r(f"{p}_tail"), _o(_r(f"{p}_group"))))
    if sub_scope:  # a sub-query: one column
        g.add(f"{p}_sub", (*head, _r(f"{p}_aexpr"), _r(f"{p}_tail"), _r(f"{p}_end")))


def grammar(schema: Schema, rule: str = "sql", query: Any = None) -> Grammar:
    """The grammar of one SELECT over ``schema`` whose every column is in its scope.

    Each alternative of the start rule is a FROM-scope (:func:`scopes`): its FROM clause
    is fixed (the scope's tables joined on foreign-key pairs, or on the query's own
    ``a.x = b.y`` joins), and its column references are only that scope's columns,
    qualified by its aliases or table names, or bare when one table of the scope has
    that name. Sub-queries (in ``IN``, comparisons, select items and ``FROM``) choose
    their own single-table or table-pair scope. Further, so that what it admits also
    runs on SQLite: no aggregate in WHERE, GROUP BY or inside another aggregate;
    HAVING only after GROUP BY; a sub-query in an expression or ``IN`` selects one
    column; both sides of a set operation select the same number (1 to 3) of columns,
    and a set operation takes no ORDER BY.

    Args:
        schema: the database's tables, columns and foreign keys.
        rule: the start rule's name; every rule is named ``rule`` or ``rule_*``.
        query: the FROM of the SQL being rewritten (see :func:`scopes`).

    Returns:
        The :class:`Grammar`.
    """
    d = schema.dialect
    links = _links(schema, query)
    top, sub = _scopes(schema, query, links)
    g = Grammar(rule)
    r = rule
    # the query's scopes (none of its own: the sub-query scopes stand in) and the sub-queries'
    qnames = [f"{r}_q{i}" for i in range(len(top))] if top is not sub else []
    snames = [f"{r}_s{i}" for i in range(len(sub))]
    for p, sc in [*zip(qnames, top), *zip(snames, sub)]:
        _scope_rules(g, r, p, _columns(schema, sc, d), _from_text(sc, links, d), p in snames)
    names, tops = qnames + snames, qnames or snames
    n = LIMITS
    g.add(f"{r}_sub", *[(_r(f"{p}_sub"),) for p in snames])
    # a set operation: the first side in a scope of the query (so that what begins as a set
    # operation can still end as a plain SELECT: a small model rarely writes the UNION), the
    # others in any scope; at most LIMITS["setops"] operations
    for k in range(1, n["compound"] + 1):
        g.add(f"{r}_first{k}", *[(_r(f"{p}_sel{k}"),) for p in tops])
        g.add(f"{r}_sel{k}", *[(_r(f"{p}_sel{k}"),) for p in names])
        more: tuple = ()
        for _ in range(n["setops"] - 1):
            more = (_o(_r(f"{r}_setop"), _r(f"{r}_sel{k}"), *more),)
        g.add(f"{r}_compound{k}", (_r(f"{r}_first{k}"), _r(f"{r}_setop"), _r(f"{r}_sel{k}"), *more))
    g.add(f"{r}_compound", *[(_r(f"{r}_compound{k}"),) for k in range(1, n["compound"] + 1)])
    g.add(f"{r}_query", *[(_r(f"{p}_top"),) for p in tops], (_r(f"{r}_compound"), _o(_r(f"{r}_limit"))))
    g.add(r, (_r(f"{r}_query"),),
          (_l("SELECT "), _r(f"{r}_outer"), _l(" FROM"), _l(" ("), _r(f"{r}_query"), _l(")")))
    g.add(f"{r}_outer", _COUNT_STAR, (_l("*"),))
    _shared(g, r)
    # the start rule first (readability of the Lark text only)
    g.rules = {r: g.rules.pop(r), **g.rules}
    return g


def sql_lark(schema: Schema, rule: str = "sql", query: Any = None) -> str:
    """Lark rules of one SELECT over ``schema``; ``rule`` is the start rule's name.

    Every rule is named ``rule`` or ``rule_*``, so the rules can be added to a bigger
    grammar (see :func:`sqlmend.llm.constrained.answer_lark`). Tables without columns
    are left out. See :func:`grammar` for what it admits.

    Args:
        schema: the database's tables, columns and foreign keys.
        rule: the name of the rule that derives the whole SELECT.
        query: the FROM of the SQL being rewritten (``from``, ``joins``; see :func:`scopes`).

    Returns:
        Lark grammar text (no ``start`` rule).
    """
    return grammar(schema, rule, query).lark()


def query_from(original: str | None, dialect: str = "sqlite") -> dict | None:
    """The ``query`` of :func:`scopes` read from a SQL text (None when it does not parse).

    >>> query_from("SELECT T1.a FROM x AS T1 JOIN y AS T2 ON T1.id = T2.x_id")
    {'from': [['x', 'T1'], ['y', 'T2']], 'joins': [['x', 'id', 'y', 'x_id']]}
    """
    from sqlmend import sql
    from sqlmend.errors import SqlmendError

    if not original or not original.strip():
        return None
    try:
        tables, joins = sql.from_tables(sql.parse(original, dialect=dialect))
    except SqlmendError:
        return None
    return {"from": [list(t) for t in tables], "joins": [list(j) for j in joins]} if tables else None


def spec(schema: Schema, original: str | list[str] | None = None) -> dict[str, Any]:
    """The compact, JSON-able form of a schema stored under :data:`SQL_KEY`.

    Args:
        schema: the database schema.
        original: the SQL being rewritten (or several): its FROM makes the grammar's scopes.

    Returns:
        ``{"dialect", "tables": {table: [column, ...]}, "fks": [[t, cs, rt, rcs], ...]}`` and,
        with ``original``, ``"query"``: a list of :func:`query_from` (those that parse).
    """
    out: dict[str, Any] = {
        "dialect": schema.dialect,
        "tables": {t.name: [c.name for c in t.columns] for t in schema.tables},
        "fks": [[fk.table, list(fk.columns), fk.ref_table, list(fk.ref_columns)] for fk in schema.foreign_keys]}
    texts = original if isinstance(original, list) else [original]
    queries = [q for q in (query_from(t, schema.dialect) for t in texts) if q]
    if queries:
        out["query"] = queries
    return out


def from_spec(value: dict[str, Any]) -> Schema:
    """Inverse of :func:`spec` (the schema part; the query is ``value.get("query")``).

    Args:
        value: what :func:`spec` returned.

    Returns:
        A :class:`~sqlmend.types.Schema` (column types unknown).
    """
    fks: dict[str, list[ForeignKey]] = {}
    for t, cols, rt, rcols in value.get("fks") or []:
        fks.setdefault(str(t), []).append(ForeignKey(str(t), list(cols), str(rt), list(rcols)))
    tables = [Table(str(name), [Column(str(c)) for c in cols], foreign_keys=fks.get(str(name), []))
              for name, cols in (value.get("tables") or {}).items()]
    return Schema(tables, dialect=str(value.get("dialect") or "sqlite"))


def mark(json_schema: dict, schema: Schema, field: str = "sql", original: str | list[str] | None = None) -> dict:
    """A copy of ``json_schema`` whose string property ``field`` must be one SELECT over ``schema``.

    Args:
        json_schema: an object schema with a string property ``field``.
        schema: the database schema.
        field: the property holding the SQL.
        original: the SQL being rewritten (or several): the SELECT's FROM-scopes are its
            tables, give or take one (:func:`scopes`).

    Returns:
        The marked schema (the input is not changed).

    Raises:
        ValueError: the schema has no such string property.
    """
    out = json.loads(json.dumps(json_schema))
    prop = (out.get("properties") or {}).get(field)
    if not isinstance(prop, dict) or prop.get("type") != "string":
        raise ValueError(f"the JSON schema has no string property {field!r} to constrain to SQL")
    prop[SQL_KEY] = spec(schema, original)
    return out


def marked(json_schema: Any) -> bool:
    """True when some property of the schema carries :data:`SQL_KEY`."""
    if isinstance(json_schema, dict):
        return SQL_KEY in json_schema or any(marked(v) for v in json_schema.values())
    if isinstance(json_schema, list):
        return any(marked(v) for v in json_schema)
    return False


def unmark(json_schema: Any) -> Any:
    """A copy of the schema without :data:`SQL_KEY` marks (what a plain JSON-schema consumer gets)."""
    if isinstance(json_schema, dict):
        return {k: unmark(v) for k, v in json_schema.items() if k != SQL_KEY}
    if isinstance(json_schema, list):
        return [unmark(v) for v in json_schema]
    return json_schema

"""The Ext function of ErrorLLM §3.3: what RefLLM sees of each located error.

``Ext(τ, G, V_τ^(λ), S^(λ), λ) -> (τ^(λ), G^(λ), ε^(λ))``: from the SQL's AST
``τ``, the schema graph ``G``, the AST nodes ``V`` and schema elements ``S`` that
localization found for error type ``λ``, extract

* the AST subtree ``τ^(λ)``: the located clause-level nodes (path, clause, SQL),
* the schema subgraph ``G^(λ)``: the tables involved with their columns, primary
  and foreign keys, plus the tables one foreign key away for table errors,
* the evidence ``ε^(λ)``: values linked to the literals (what the database
  actually stores), the finding's own evidence and the execution outcome.

:func:`nodes` enumerates a query's clause-level nodes with stable paths
(``select[0]``, ``joins[1].on``, ``where[0]``, ``sub1.where[0]`` ...); those paths
are what LocLLM answers with.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlmend import sql
from sqlmend.structure import needs
from sqlmend.types import ExecResult, Schema, Table, split_ref

ast = sql.ast

#: Clause names used in node paths and in the templates' ``clauses`` lists.
CLAUSES = ("select", "distinct", "from", "joins", "where", "group", "having", "order", "limit",
           "subquery", "setop")

#: Families whose schema subgraph also takes the tables one foreign key away.
_NEIGHBOUR_FAMILIES = {"table", "attribute", "condition"}


@dataclass
class Node:
    """One clause-level node of a query."""

    path: str
    clause: str
    sql: str


@dataclass
class Extract:
    """What refinement sees of one located error: ``(τ^(λ), G^(λ), ε^(λ))``."""

    error_type: str
    subtree: list[Node] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)  # the schema subgraph's tables
    schema: str = ""  # the subgraph, rendered for a prompt
    linked_values: list[dict[str, Any]] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- the AST side -----------------------------------------------------------


def _select_nodes(q: Any, prefix: str, dialect: str) -> list[Node]:
    out: list[Node] = []

    def add(path: str, clause: str, node: Any) -> None:
        out.append(Node(prefix + path, clause, node.sql(dialect=dialect)))

    if q.args.get("distinct"):
        out.append(Node(prefix + "distinct", "distinct", "DISTINCT"))
    for i, e in enumerate(q.expressions):
        add(f"select[{i}]", "select", e)
    frm = q.args.get("from_") or q.args.get("from")
    if frm is not None:
        add("from", "from", frm.this)
    for i, j in enumerate(q.args.get("joins") or []):
        add(f"joins[{i}]", "joins", j.this)
        if j.args.get("on") is not None:
            add(f"joins[{i}].on", "joins", j.args["on"])
    where = q.args.get("where")
    if where is not None:
        for i, c in enumerate(sql.conjuncts(where.this)):
            add(f"where[{i}]", "where", c)
    group = q.args.get("group")
    if group is not None:
        for i, g in enumerate(group.expressions):
            add(f"group[{i}]", "group", g)
    having = q.args.get("having")
    if having is not None:
        add("having", "having", having.this)
    order = q.args.get("order")
    if order is not None:
        for i, o in enumerate(order.expressions):
            add(f"order[{i}]", "order", o)
    limit = q.args.get("limit")
    if limit is not None:
        add("limit", "limit", limit)
    return out


def nodes(tree: Any, dialect: str = "sqlite") -> list[Node]:
    """Enumerate the clause-level nodes of a query, with stable paths.

    Set operations give ``left.``/``right.`` prefixes and a ``setop`` node;
    nested SELECTs (subqueries) give a ``subquery`` node and ``sub<k>.`` prefixes.

    Args:
        tree: a tree from :func:`sqlmend.sql.parse`.
        dialect: the dialect to write fragments in.

    Returns:
        The nodes, in reading order.

    >>> [n.path for n in nodes(sql.parse("SELECT a FROM t WHERE b = 1 AND c > 2"))]
    ['select[0]', 'from', 'where[0]', 'where[1]']
    """
    out: list[Node] = []
    subs: list[Any] = []

    def visit(q: Any, prefix: str) -> None:
        if isinstance(q, ast.Subquery):
            q = q.this
        if isinstance(q, ast.SetOperation):
            out.append(Node(prefix + "setop", "setop", type(q).__name__.upper()))
            visit(q.this, prefix + "left.")
            visit(q.expression, prefix + "right.")
            return
        if not isinstance(q, ast.Select):
            return
        out.extend(_select_nodes(q, prefix, dialect))
        for inner in q.find_all(ast.Select):
            if inner is not q and inner.parent_select is q and inner not in subs:
                subs.append(inner)
                k = len(subs)
                out.append(Node(f"{prefix}sub{k}", "subquery", inner.sql(dialect=dialect)))
                visit(inner, f"{prefix}sub{k}.")

    visit(tree, "")
    return out


def compared_literals(tree: Any, schema: Schema) -> list[dict[str, Any]]:
    """The string literals compared with a column: ``{table, column, op, value}``.

    Args:
        tree: the parsed query.
        schema: its database's schema (to find the table of unqualified columns).
    """
    resolver = sql.Resolver(tree, schema)
    out = []
    for cmp in tree.find_all(ast.EQ, ast.NEQ, ast.Like, ast.ILike, ast.In, ast.GT, ast.LT,
                             ast.GTE, ast.LTE):
        col = cmp.this if isinstance(cmp.this, ast.Column) else cmp.args.get("expression")
        if not isinstance(col, ast.Column):
            continue
        values = cmp.args.get("expressions") or [cmp.args.get("expression")]
        for v in values:
            if isinstance(v, ast.Literal) and v.is_string:
                table = schema.table(resolver.table_of(col) or "")
                out.append({"table": table.name if table is not None else None, "column": col.name,
                            "op": type(cmp).__name__, "value": v.this})
    return out


# --- the schema side --------------------------------------------------------


def _table_line(t: Table) -> str:
    cols = []
    for c in t.columns:
        mark = " PK" if c.primary_key or c.name in t.primary_key else ""
        about = f" -- {_one_line(c.comment)}" if c.comment else ""
        cols.append(f"{c.name} {c.type or 'TEXT'}{mark}".strip() + about)
    fks = [f"{t.name}.{','.join(fk.columns)} -> {fk.ref_table}.{','.join(fk.ref_columns)}"
           for fk in t.foreign_keys]
    kind = f" [{t.kind}]" if t.kind != "table" else ""
    about = f" -- {_one_line(t.comment)}" if t.comment else ""
    if any(c.comment for c in t.columns):  # a column's comment ends its line
        line = f"{t.name}{kind}({about.strip()}\n  " + ",\n  ".join(cols) + "\n)"
    else:
        line = f"{t.name}{kind}({', '.join(cols)}){about}"
    return line + ("\n  foreign keys: " + "; ".join(fks) if fks else "")


def _one_line(text: str, limit: int = 160) -> str:
    """A comment on one line, cut at ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def schema_text(schema: Schema, tables: list[str] | None = None) -> str:
    """Render (part of) a schema for a prompt: one line per table, then its foreign keys.

    Args:
        schema: the database schema.
        tables: the tables to show (all when None); unknown names are ignored.
    """
    keep = None if tables is None else {x.lower() for x in tables}
    return "\n".join(_table_line(t) for t in schema.tables if keep is None or t.name.lower() in keep)


def prompt_schema(schema: Schema, question: str, sql: str | None = None, db: Any = None,
                  dialect: str = "sqlite") -> str:
    """The schema a model prompt shows: :func:`schema_text` of the whole schema when it is shorter than
    :func:`sqlmend.structure.needs.whole_below` characters (every Spider database), else of the relations
    the question (and ``sql``, the query under correction) needs, best first by
    :func:`sqlmend.structure.needs.prompt_tables`, as many as that many characters hold.

    Args:
        schema: the schema the stage sees.
        question: the question.
        sql: the query the prompt is about (None: a prompt that does not show one).
        db: the open database, whose stored values are evidence (read only for a schema too big).
        dialect: the query's dialect.
    """
    def values() -> Any:
        try:
            return db.value_index() if db is not None else None
        except Exception:  # no value index for this database: the names alone
            return None

    keys = needs.prompt_tables(schema, question, sql, values=values, dialect=dialect,
                               render=lambda keys: schema_text(schema, keys))
    return schema_text(schema, keys)


def neighbours(schema: Schema, tables: list[str]) -> list[str]:
    """Tables one foreign key away from ``tables`` (either direction)."""
    have = {t.lower() for t in tables}
    out: list[str] = []
    for fk in schema.foreign_keys:
        a, b = fk.table.lower(), fk.ref_table.lower()
        if a in have and b not in have:
            out.append(fk.ref_table)
        elif b in have and a not in have:
            out.append(fk.table)
    return list(dict.fromkeys(out))


def link_values(db: Any, literals: list[dict[str, Any]], limit: int = 3) -> list[dict[str, Any]]:
    """For each compared literal, the values the database really stores that resemble it.

    Uses the database's value index (``db.value_index().find``); a literal stored
    exactly is reported with ``exact: True``. Missing index support gives ``[]``.
    """
    try:
        vi = db.value_index()
    except Exception:  # no value index for this database: no linked values
        return []
    out = []
    for lit in literals:
        if not lit.get("table"):
            continue
        try:
            exact = vi.contains(lit["table"], lit["column"], lit["value"])
            found = [] if exact else vi.find(lit["table"], lit["column"], lit["value"],
                                             mode="approx", limit=limit)
        except Exception:  # a column the index does not cover
            continue
        out.append({**lit, "exact": bool(exact), "stored": [str(x) for x in found]})
    return out


def _tables_of(refs: list[str], aliases: dict[str, str], schema: Schema) -> list[str]:
    out = []
    for ref in refs:
        name = ref.strip().strip('"`[]')
        if schema.table(aliases.get(name.lower(), name)) is None:  # "table.column" (or "schema.table.column")
            name = split_ref(ref)[0].strip().strip('"`[]')
        real = aliases.get(name.lower(), name)
        if schema.table(real) is not None:
            out.append(schema.table(real).name)
    return out


def exec_summary(result: ExecResult | None, error: str | None, rows: int = 3) -> dict[str, Any]:
    """A short, prompt-sized account of what the SQL returned (or why it failed)."""
    if error:
        return {"error": error}
    if result is None:
        return {}
    return {"columns": result.columns, "row_count": len(result.rows),
            "truncated": result.truncated, "first_rows": [list(r) for r in result.rows[:rows]]}


def extract(error_type: str, tree: Any | None, schema: Schema, *, node_paths: list[str],
            schema_refs: list[str], clauses: tuple[str, ...] = (), db: Any = None,
            evidence: dict[str, Any] | None = None, dialect: str = "sqlite") -> Extract:
    """Ext: the subtree, schema subgraph and evidence of one located error.

    Args:
        error_type: the taxonomy id ``λ``.
        tree: the parsed SQL (None when it does not parse: only schema and evidence).
        schema: the database schema ``G``.
        node_paths: ``V^(λ)``, paths from :func:`nodes` chosen by localization;
            when none matches, the nodes of ``clauses`` are taken.
        schema_refs: ``S^(λ)``, "table" / "table.column" named by localization.
        clauses: the clauses of this error type (its template's ``clauses``).
        db: the open database, for linked values (optional).
        evidence: what the detecting stage recorded (a finding's evidence).
        dialect: dialect for SQL fragments.

    Returns:
        The :class:`Extract`.
    """
    from sqlmend import taxonomy

    all_nodes = nodes(tree, dialect) if tree is not None else []
    wanted = set(node_paths)
    sub = [n for n in all_nodes if n.path in wanted]
    if not sub:
        sub = [n for n in all_nodes if n.clause in clauses]
    aliases = sql.Resolver(tree).tables() if tree is not None else {}
    tables = _tables_of(schema_refs, aliases, schema)
    tables += [t for t in dict.fromkeys(aliases.values()) if schema.table(t) is not None]
    tables = list(dict.fromkeys(tables))
    if taxonomy.get(error_type).family in _NEIGHBOUR_FAMILIES or not tables:
        tables += neighbours(schema, tables) if tables else [t.name for t in schema.tables]
    linked: list[dict[str, Any]] = []
    if tree is not None and db is not None and taxonomy.get(error_type).family in {"value", "condition"}:
        linked = link_values(db, compared_literals(tree, schema))
    return Extract(error_type=error_type, subtree=sub, tables=tables,
                   schema=schema_text(schema, tables), linked_values=linked,
                   evidence=dict(evidence or {}))

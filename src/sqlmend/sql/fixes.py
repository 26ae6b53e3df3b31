"""The one engine that applies fixes-as-data to a query: rules and memory never edit SQL themselves.

A fix is a dict naming an operation, the :func:`node_path` of the node it
changes, and ``expect``: the node's SQL when the fix was planned (so that a fix
aimed at a stale tree is refused instead of misapplied; ``None`` skips the check).

Operations:

``replace_literal``  ``{"path", "expect", "value"}``: the literal becomes ``value``
    (a string literal for ``str``, a number otherwise).
``qualify_column``  ``{"path", "expect", "table"}``: the column gets the qualifier ``table``.
``replace_column``  ``{"path", "expect", "column", "table"}``: the column is renamed
    (and requalified when ``table`` is given); a name that is a reserved word is written quoted.
``rename_table``  ``{"path", "expect", "name", "schema"?}``: the table in FROM/JOIN at ``path`` reads the
    schema table ``name`` instead; its alias (and a schema qualifier) stay as written, but for
    ``schema``: a table of another schema is read from there (``employees`` -> ``hr.employees``).
``replace_span``  ``{"start", "end", "expect", "value"}``: the characters ``start:end`` of the text,
    which read ``expect``, become ``value``; applied to the text before it is parsed, for what no
    parser reads (a table written as a keyword: ``FROM like`` for ``Likes``). :func:`apply` only.
``set_distinct``  ``{"path", "expect"}``: the SELECT at ``path`` gets DISTINCT.
``key_lookup``  ``{"path", "expect", "table", "key", "column", "value"}``: the comparison
    ``col = literal`` (``<>``: NOT IN) at ``path`` becomes ``col IN (SELECT key FROM table
    WHERE column = value)``: a name compared with the code that stands for it.
``bridge_join``  ``{"path", "expect", "table", "near", "far"}``: the join condition at ``path``
    (in a ``JOIN ... ON``) becomes ``table.far[0] = far[1].far[2]``, and ``JOIN table ON
    near[0].near[1] = table.near[2]`` is inserted before that join: two tables the keys link only
    through ``table`` are joined through it (``near[0]`` and ``far[1]`` as the query names them).
``is_null``  ``{"path", "expect"}``: the comparison ``x = NULL`` (``<>``, ``!=``: ``x IS NOT NULL``) at
    ``path`` becomes ``x IS NULL``; a comparison with NULL is never true.
``cast``  ``{"path", "expect", "type"}``: the expression at ``path`` becomes ``CAST(expr AS type)``.
``transpile``  ``{"path": "", "expect", "read"}``: the whole query, read in the dialect ``read`` and
    written in the target (:func:`sqlmend.sql.foreign.transpiled`); ``expect`` is the query's text.
    It replaces the whole text, so it is applied alone (:func:`apply` only: it needs the text).

>>> apply("SELECT a FROM t WHERE b = 'x'",
...       [{"op": "replace_literal", "path": "where.this.expression", "expect": "'x'", "value": "X"}])
"SELECT a FROM t WHERE b = 'X'"
>>> apply("SELECT a FROM t", [{"op": "set_distinct", "path": ""}])
'SELECT DISTINCT a FROM t'
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlmend.errors import FixError
from sqlmend.sql.foreign import transpiled
from sqlmend.sql.names import needs_quotes
from sqlmend.sql.parse import parse
from sqlmend.sql.render import render
from sqlmend.sql.schema import identifier

OPERATIONS = ("replace_literal", "qualify_column", "replace_column", "rename_table", "replace_span", "set_distinct",
              "key_lookup", "bridge_join", "is_null", "cast", "transpile")

__all__ = ["OPERATIONS", "FixError", "apply", "apply_tree", "find_node", "node_path", "replace_column"]


def node_path(node: Any) -> str:
    """Return the address of a node from the root: ``"where.this.expressions[1]"``.

    Args:
        node: a node of a parsed tree.

    Returns:
        Dot-separated argument keys, with ``[i]`` for list members ("" for the root).
    """
    parts: list[str] = []
    while node.parent is not None:
        key = node.arg_key
        parts.append(f"{key}[{node.index}]" if node.index is not None else key)
        node = node.parent
    return ".".join(reversed(parts))


def find_node(tree: Any, path: str) -> Any:
    """Follow a :func:`node_path` address in a tree; ``None`` when it leads nowhere."""
    node = tree
    for part in filter(None, path.split(".")):
        key, _, idx = part.partition("[")
        node = node.args.get(key) if node is not None else None
        if idx:
            if not isinstance(node, list) or int(idx[:-1]) >= len(node):
                return None
            node = node[int(idx[:-1])]
        if node is None:
            return None
    return node


def replace_column(node: Any, column: str, table: str | None = None, dialect: str = "sqlite") -> dict:
    """The ``replace_column`` fix (as data) that renames the column ``node`` (and requalifies it with
    ``table``; ``None`` keeps its qualifier as written)."""
    return {"op": "replace_column", "path": node_path(node), "expect": node.sql(dialect=dialect),
            "column": column, "table": table or node.table or None}


def _ident(name: str, dialect: str = "sqlite") -> Any:
    """An identifier, quoted when the name is a reserved word or not a plain identifier, or, on PostgreSQL,
    not all lower case (:func:`sqlmend.sql.schema.identifier`: an unquoted name is folded there)."""
    if needs_quotes(name):
        return exp.to_identifier(name, quoted=True)
    return identifier(name, dialect)


def _literal(value: Any) -> Any:
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FixError(f"cannot write a literal of type {type(value).__name__}")
    node = exp.Literal.number(abs(value))
    return exp.Neg(this=node) if value < 0 else node


def _replacement(node: Any, fix: dict, dialect: str = "sqlite") -> Any:
    op = fix.get("op")
    if op == "replace_literal":
        return _literal(fix["value"])
    if op in ("qualify_column", "replace_column"):
        if not isinstance(node, exp.Column):
            raise FixError(f"{op} needs a column, found {type(node).__name__}")
        if fix.get("column"):
            name = _ident(fix["column"], dialect)  # a stored name: quoted where it must be
        elif dialect == "postgres":  # the column as written, its quotes too (its case depends on them)
            name = node.this.copy()
        else:
            name = _ident(node.name)
        table = fix.get("table") or node.table or None
        return exp.column(name, table=_ident(table) if table else None)
    if op == "rename_table":
        if not isinstance(node, exp.Table):
            raise FixError(f"rename_table needs a table, found {type(node).__name__}")
        new = node.copy()
        new.set("this", _ident(fix["name"], dialect))
        if fix.get("schema"):  # a table of another schema: read from there
            new.set("db", _ident(fix["schema"], dialect))
        return new
    if op == "key_lookup":
        return _key_lookup(node, fix, dialect)
    if op == "bridge_join":
        return _bridge_join(node, fix, dialect)
    if op == "is_null":
        return _is_null(node)
    if op == "cast":
        return exp.Cast(this=node.copy(), to=exp.DataType.build(fix["type"]))
    if op == "transpile":
        raise FixError("transpile rewrites the whole text: apply it with fixes.apply, alone")
    if op == "replace_span":
        raise FixError("replace_span changes the text, not a tree: apply it with sql.fixes.apply")
    if op == "set_distinct":
        if not isinstance(node, exp.Select):
            raise FixError(f"set_distinct needs a SELECT, found {type(node).__name__}")
        return "distinct"
    raise FixError(f"unknown fix operation {op!r}; known: {', '.join(OPERATIONS)}")


def _is_null(node: Any) -> Any:
    if not isinstance(node, (exp.EQ, exp.NEQ)):
        raise FixError(f"is_null needs = or <>, found {type(node).__name__}")
    sides = [s for s in (node.this, node.expression) if not isinstance(s, exp.Null)]
    if len(sides) != 1:
        raise FixError("is_null needs NULL on exactly one side")
    test = exp.Is(this=sides[0].copy(), expression=exp.Null())
    return exp.Not(this=test) if isinstance(node, exp.NEQ) else test


def _table(key: str, dialect: str) -> Any:
    """A schema table named by its key (``name`` or ``schema.name``) as a FROM / JOIN table."""
    schema, _, name = key.rpartition(".")
    table = exp.Table(this=identifier(name, dialect))
    if schema:
        table.set("db", identifier(schema, dialect))
    return table if dialect == "postgres" or schema else exp.to_table(key)


def _key_lookup(node: Any, fix: dict, dialect: str = "sqlite") -> Any:
    if not isinstance(node, (exp.EQ, exp.NEQ)):
        raise FixError(f"key_lookup needs = or <>, found {type(node).__name__}")
    column = next((side for side in (node.this, node.expression) if isinstance(side, exp.Column)), None)
    if column is None:
        raise FixError("key_lookup needs a column on one side")
    lookup = (exp.select(exp.column(identifier(fix["key"], dialect))).from_(_table(fix["table"], dialect))
              .where(exp.EQ(this=exp.column(identifier(fix["column"], dialect)), expression=_literal(fix["value"]))))
    found = exp.In(this=column.copy(), query=exp.Subquery(this=lookup))
    return exp.Not(this=found) if isinstance(node, exp.NEQ) else found


def _bridge_join(node: Any, fix: dict, dialect: str = "sqlite") -> tuple[Any, Any]:
    join = node.find_ancestor(exp.Join)
    if not isinstance(node, exp.EQ) or join is None or not isinstance(join.parent, exp.Select):
        raise FixError("bridge_join needs an equality in a JOIN ... ON")
    (left, near_column, bridge_column), (far_column, right, right_column) = fix["near"], fix["far"]
    table = fix["table"]
    name = table.rpartition(".")[2]  # the bridge named by its own name (a schema table's key is schema.name)

    def col(column: str, of: str) -> Any:
        return exp.column(identifier(column, dialect), table=of)

    on = exp.EQ(this=col(near_column, left), expression=col(bridge_column, name))
    bridge = exp.Join(this=_table(table, dialect), on=on,
                      **{k: join.args[k] for k in ("side", "kind") if join.args.get(k)})
    return exp.EQ(this=col(far_column, name), expression=col(right_column, right)), bridge


def apply_tree(tree: Any, fixes: list[dict], dialect: str = "sqlite") -> Any:
    """Apply fixes to a parsed tree, in place (all planned on the tree as it is given).

    Args:
        tree: the parsed query; changed in place.
        fixes: fixes as data (see the module docstring).
        dialect: the dialect ``expect`` is written in.

    Returns:
        The tree (a new root when a fix replaced the root itself).

    Raises:
        FixError: a fix is malformed, aims at a node that is not there (or not
            what the planner saw), or two fixes change the same node differently.
    """
    planned: dict[str, tuple[Any, Any]] = {}
    for fix in fixes:
        path = fix.get("path", "")
        node = find_node(tree, path)
        if node is None:
            raise FixError(f"no node at {path!r}")
        expect = fix.get("expect")
        if expect is not None and node.sql(dialect=dialect) != expect:
            raise FixError(f"node at {path!r} is {node.sql(dialect=dialect)!r}, not {expect!r}")
        new = _replacement(node, fix, dialect)
        if path in planned:
            if planned[path][1] != new:
                raise FixError(f"conflicting fixes at {path!r}")
            continue
        planned[path] = (node, new)
    for node, new in planned.values():
        if isinstance(new, tuple):  # bridge_join: the new condition, and the join inserted before its own
            join = node.find_ancestor(exp.Join)
            joins = join.parent.args["joins"]
            joins.insert(next(i for i, j in enumerate(joins) if j is join), new[1])
            join.parent.set("joins", joins)
            node.replace(new[0])
        elif new == "distinct":
            if not node.args.get("distinct"):
                node.set("distinct", exp.Distinct())
        elif node is tree:
            tree = new
        else:
            node.replace(new)
    return tree


def apply(text: str, fixes: list[dict], dialect: str = "sqlite") -> str:
    """Apply fixes to a query and return the new SQL text.

    Args:
        text: the query.
        fixes: fixes as data (see the module docstring); applied all on one tree.
        dialect: the dialect to parse and write.

    Returns:
        The rewritten SQL (the original text when ``fixes`` is empty).

    Raises:
        FixError: see :func:`apply_tree`.
    """
    if not fixes:
        return text
    whole = [f for f in fixes if f.get("op") == "transpile"]
    if whole:
        if len(fixes) > 1:
            raise FixError("a transpile fix rewrites the whole query: it is applied alone")
        if whole[0].get("expect") is not None and whole[0]["expect"] != text:
            raise FixError("the transpile fix was planned on another text")
        return transpiled(text, whole[0]["read"], dialect)
    spans = [f for f in fixes if f.get("op") == "replace_span"]
    for fix in sorted(spans, key=lambda f: -f["start"]):  # from the end: earlier offsets stay valid
        start, end = fix["start"], fix["end"]
        if text[start:end] != fix.get("expect", text[start:end]):
            raise FixError(f"characters {start}:{end} are {text[start:end]!r}, not {fix['expect']!r}")
        text = text[:start] + fix["value"] + text[end:]
    rest = [f for f in fixes if f.get("op") != "replace_span"]
    tree = apply_tree(parse(text, dialect=dialect), rest, dialect)
    return render(tree, dialect=dialect, original=text)

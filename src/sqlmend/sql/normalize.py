"""Normalize a query: SQLite's name rules, qualified columns, canonical aliases.

Two queries that differ only in aliasing, identifier case or quoting normalize to
equal trees. Steps: resolve names as SQLite does (:mod:`sqlmend.sql.resolve`),
qualify every column with its table (sqlglot's qualifier), then rename table
aliases canonically: a table's alias is its own name (``singer``), its second
occurrence in the query ``singer_2``, a derived table ``sub``, ``sub_2``...

The qualifier also names every projection (``COUNT(*) AS _col_0``, ``singer.name
AS name``) and rewrites an ORDER BY expression equal to a projection into a
reference to that name (``ORDER BY COUNT(*)`` -> ``ORDER BY _col_1``); the
latter is undone here, so that two queries ordering by the same expression stay
equal whatever their projections are. With ``output_aliases=False`` those names are taken off again (only
the aliases written in the query stay) and an ORDER BY item that names an output
alias is replaced by the expression the alias stands for (SQLite and PostgreSQL
read a bare ORDER BY name as the output alias first), so that every clause of
the normalized text can be edited and re-parsed on its own (MIRA isolation).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.qualify import qualify

from sqlmend.errors import QualifyError
from sqlmend.sql.dialects import resolve as resolve_dialect
from sqlmend.sql.parse import DIALECT_KEY, ORIGINAL_KEY, parse
from sqlmend.sql.resolve import check_tables, resolve_columns
from sqlmend.sql.schema import Relations, SchemaLike, as_mapping, qualified_mapping, table_key
from sqlmend.sql.scopes import analyse

#: key of ``tree.meta``: how many double-quoted tokens normalize turned into strings
QUOTED_STRINGS_KEY = "sqlmend_quoted_strings"


def normalize(tree_or_text: exp.Expression | str, schema: SchemaLike | None,
              dialect: str = "sqlite", output_aliases: bool = True) -> exp.Expression:
    """A normalized copy of a query: columns qualified, aliases canonical.

    Args:
        tree_or_text: SQL text or a tree from :func:`sqlmend.sql.parse` (not changed).
        schema: the database schema (:class:`sqlmend.types.Schema` or
            ``{table: {column: type}}``); without one, only aliases are made canonical.
        dialect: the dialect of the query; SQLite's double-quoted-string rule applies
            for ``"sqlite"`` only.
        output_aliases: True keeps the names the qualifier gives every projection;
            False keeps only the aliases of the input and expands ORDER BY references
            to output aliases (see the module doc).

    Returns:
        A new tree. Rendered, it gives the same rows as the input.

    Raises:
        SqlParseError: the text does not parse.
        UnknownColumnError, AmbiguousColumnError, UnknownTableError: a name cannot be
            resolved; ``candidates`` holds the closest names in scope.
    """
    read = resolve_dialect(dialect)
    tree = parse(tree_or_text, read) if isinstance(tree_or_text, str) else tree_or_text.copy()
    original = tree.meta.get(ORIGINAL_KEY)
    mapping = as_mapping(schema)
    converted = 0
    if mapping:
        infos = analyse(tree, mapping)
        check_tables(infos, mapping)
        converted = resolve_columns(infos, original, sqlite=read == "sqlite")
    _mark_order_items(tree)
    if not output_aliases:
        _mark_unaliased(tree)
    nested = qualified_mapping(mapping)
    if nested is not None:
        _name_in_schema(tree, mapping)
    try:
        tree = qualify(tree, schema=nested or mapping or None, dialect=read or None, expand_stars=False,
                       quote_identifiers=False, identify=False, validate_qualify_columns=bool(mapping),
                       allow_partial_qualification=not mapping)
    except OptimizeError as e:
        raise QualifyError(f"cannot qualify the columns: {e}") from e
    finally:
        if nested is not None:
            _names_as_written(tree)
    _canonical_aliases(tree, mapping)
    _expand_order_aliases(tree, every=not output_aliases)
    if not output_aliases:
        _drop_added_aliases(tree)
    _quote_only_when_needed(tree, read)
    tree.meta.pop(ORIGINAL_KEY, None)
    tree.meta[DIALECT_KEY] = read
    tree.meta[QUOTED_STRINGS_KEY] = converted
    return tree


_WRITTEN_KEY = "sqlmend_written_name"  # a table's name as written, while the qualifier reads it in its schema


def _name_in_schema(tree: exp.Expression, mapping: Relations) -> None:
    """Name every schema table of the query ``schema.name`` (lower case), as the qualifier's mapping of a
    database with schema-qualified keys has it; :func:`_names_as_written` puts the written names back."""
    plain = {key: schema_name.split(".", 1)[0] for schema_name, key in mapping.aliases.items()}
    for table in tree.find_all(exp.Table):
        key = table_key(table, mapping).lower()
        if key not in mapping:
            continue
        schema, name = mapping.parts.get(key) or (plain.get(key, ""), key)
        table.meta[_WRITTEN_KEY] = (table.args.get("this"), table.args.get("db"), table.args.get("catalog"))
        table.set("this", exp.to_identifier(name))
        table.set("db", exp.to_identifier(schema))
        table.set("catalog", None)
        if not table.alias:  # the columns that name the table as written keep doing so
            written = table.meta[_WRITTEN_KEY][0]
            table.set("alias", exp.TableAlias(this=exp.to_identifier(written.name)))


def _names_as_written(tree: exp.Expression) -> None:
    for table in tree.find_all(exp.Table):
        written = table.meta.pop(_WRITTEN_KEY, None)
        if written is not None:
            for key, value in zip(("this", "db", "catalog"), written):
                table.set(key, value)


_UNALIASED_KEY = "sqlmend_unaliased"
_ORDER_NAME_KEY = "sqlmend_order_by_name"  # the ORDER BY item was written as a bare name


def _mark_order_items(tree: exp.Expression) -> None:
    for select in tree.find_all(exp.Select):
        order = select.args.get("order")
        for ordered in order.expressions if order is not None else []:
            ordered.meta[_ORDER_NAME_KEY] = isinstance(ordered.this, exp.Column) and not ordered.this.table


def _mark_unaliased(tree: exp.Expression) -> None:
    """Flag the projections written without an alias (the qualifier keeps node meta)."""
    for select in tree.find_all(exp.Select):
        for proj in select.expressions:
            if not isinstance(proj, exp.Alias):
                proj.meta[_UNALIASED_KEY] = True


def _expand_order_aliases(tree: exp.Expression, every: bool) -> None:
    """ORDER BY <output alias> -> ORDER BY <the aliased expression>.

    ``every`` False: only where the qualifier made the reference (the query
    wrote the expression); True: also where the query wrote the alias.
    """
    for select in tree.find_all(exp.Select):
        order = select.args.get("order")
        if order is None:
            continue
        named = {s.alias.lower(): s.this for s in select.expressions if isinstance(s, exp.Alias)}
        for ordered in order.expressions:
            col = ordered.this
            written_as_name = ordered.meta.pop(_ORDER_NAME_KEY, True)
            if not every and written_as_name:
                continue
            if isinstance(col, exp.Column) and not col.table and col.name.lower() in named:
                col.replace(named[col.name.lower()].copy())


def _drop_added_aliases(tree: exp.Expression) -> None:
    """Take off the output aliases the qualifier added (the input's own aliases stay)."""
    for select in list(tree.find_all(exp.Select)):
        for proj in list(select.expressions):
            if isinstance(proj, exp.Alias) and proj.this.meta.pop(_UNALIASED_KEY, False):
                proj.replace(proj.this)


def _canonical_aliases(tree: exp.Expression, mapping: dict[str, dict[str, str]]) -> None:
    infos = analyse(tree, mapping)
    names: dict[int, set[str]] = {}  # the aliases each scope gives its sources
    new_name: dict[tuple[int, str], str] = {}
    for info in infos:
        # unique along every chain of nested scopes; sibling scopes (UNION arms) may reuse names
        taken = set().union(*(names.get(id(sc), set()) for sc in info.chain()))
        mine = names.setdefault(id(info), set())
        for alias, (node, _table, _cols) in info.sources.items():
            base = (node.name if isinstance(node, exp.Table) else "sub").lower() or "sub"
            name, k = base, 1
            while name in taken or name in mine:
                k += 1
                name = f"{base}_{k}"
            mine.add(name)
            new_name[(id(info), alias)] = name
    # decide every column's new qualifier first, then change the tree
    changes: list[tuple[exp.Column, str]] = []
    for info in infos:
        for col in info.columns:
            alias = col.table.lower()
            if not alias:
                continue
            for sc in info.chain():
                if alias in sc.sources:
                    changes.append((col, new_name[(id(sc), alias)]))
                    break
    for col, name in changes:
        col.set("table", exp.to_identifier(name))
    for info in infos:
        for alias, (node, _table, _cols) in info.sources.items():
            name = new_name[(id(info), alias)]
            current = node.args.get("alias")
            if isinstance(current, exp.TableAlias):
                current.set("this", exp.to_identifier(name))
            else:
                node.set("alias", exp.TableAlias(this=exp.to_identifier(name)))


def _quote_only_when_needed(tree: exp.Expression, dialect: str) -> None:
    keywords = Dialect.get_or_raise(dialect or None).tokenizer_class.KEYWORDS
    for ident in tree.find_all(exp.Identifier):
        name = ident.this
        safe = bool(exp.SAFE_IDENTIFIER_RE.match(name)) and name.upper() not in keywords
        ident.set("quoted", not safe)

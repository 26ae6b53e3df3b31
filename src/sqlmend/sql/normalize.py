"""Normalize a query: SQLite's name rules, qualified columns, canonical aliases.

Two queries that differ only in aliasing, identifier case or quoting normalize to
equal trees. Steps: resolve names as SQLite does (:mod:`sqlmend.sql.resolve`),
qualify every column with its table (sqlglot's qualifier), then rename table
aliases canonically: a table's alias is its own name (``singer``), its second
occurrence in the query ``singer_2``, a derived table ``sub``, ``sub_2``...
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
from sqlmend.sql.schema import SchemaLike, as_mapping
from sqlmend.sql.scopes import analyse

#: key of ``tree.meta``: how many double-quoted tokens normalize turned into strings
QUOTED_STRINGS_KEY = "sqlmend_quoted_strings"


def normalize(tree_or_text: exp.Expression | str, schema: SchemaLike | None,
              dialect: str = "sqlite") -> exp.Expression:
    """A normalized copy of a query: columns qualified, aliases canonical.

    Args:
        tree_or_text: SQL text or a tree from :func:`sqlmend.sql.parse` (not changed).
        schema: the database schema (:class:`sqlmend.types.Schema` or
            ``{table: {column: type}}``); without one, only aliases are made canonical.
        dialect: the dialect of the query; SQLite's double-quoted-string rule applies
            for ``"sqlite"`` only.

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
    try:
        tree = qualify(tree, schema=mapping or None, dialect=read or None, expand_stars=False,
                       quote_identifiers=False, identify=False, validate_qualify_columns=bool(mapping),
                       allow_partial_qualification=not mapping)
    except OptimizeError as e:
        raise QualifyError(f"cannot qualify the columns: {e}") from e
    _canonical_aliases(tree, mapping)
    _quote_only_when_needed(tree, read)
    tree.meta.pop(ORIGINAL_KEY, None)
    tree.meta[DIALECT_KEY] = read
    tree.meta[QUOTED_STRINGS_KEY] = converted
    return tree


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

"""stored_name: a name the engine does not find, written as the schema stores it.

* a table of another schema, where the search path does not reach it (``employees`` ->
  ``hr.employees``): one candidate per schema holding a relation of that name, its alias kept;
* on PostgreSQL, which folds an unquoted name to lower case, the names the schema stores in mixed case
  (``Status`` -> ``"Status"``, ``sales.orders`` -> ``sales."Orders"``): one candidate with every such
  name quoted in its stored spelling (a name whose folded spelling is stored, or that several stored
  names match, is left as written).
"""

from __future__ import annotations

from sqlmend.search.generators.base import Generator
from sqlmend.sql import ast, fixes
from sqlmend.sql.resolve import tables_elsewhere
from sqlmend.types import Schema

#: The parts of the tree that name a stored thing: a column's name, a table's name and schema.
_NAMING = {(ast.Column, "this"), (ast.Table, "this"), (ast.Table, "db")}


def _stored_spellings(schema: Schema) -> dict[str, set[str]]:
    """``{lower case: {stored spellings}}`` of every relation, schema and column name."""
    out: dict[str, set[str]] = {}
    for t in schema.tables:
        for name in (t.relname, t.schema, *(c.name for c in t.columns)):
            if name:
                out.setdefault(name.lower(), set()).add(name)
    return out


def folded_names(tree, schema: Schema):
    """A copy of ``tree`` whose unquoted names PostgreSQL would fold away from a mixed-case stored name
    are quoted as stored; None when there is none (or the engine does not fold)."""
    if schema.dialect != "postgres":
        return None
    stored = _stored_spellings(schema)
    copy = tree.copy()
    changed = False
    for ident in copy.find_all(ast.Identifier):
        if ident.quoted or (type(ident.parent), ident.arg_key) not in _NAMING:
            continue
        spellings = stored.get(ident.name.lower(), set())
        if ident.name.lower() in spellings or len(spellings) != 1:
            continue
        ident.set("this", next(iter(spellings)))
        ident.set("quoted", True)
        changed = True
    return copy if changed else None


def generate(tree, inp):
    """Write a name the engine does not find as the schema stores it: a table from the schema that holds it,
    a mixed-case name quoted on PostgreSQL."""
    several = len(inp.schema.schemas) > 1  # one schema: no table can be elsewhere (a Spider file)
    for node, found in tables_elsewhere(tree, inp.schema) if several else ():
        path = fixes.node_path(node)
        for table in found:
            fix = {"op": "replace_table", "path": path, "expect": None, "schema": table.schema,
                   "name": table.relname}
            yield fixes.apply_tree(tree.copy(), [fix], inp.schema.dialect), f"table {node.sql()} -> {table.name}"
    quoted = folded_names(tree, inp.schema)
    if quoted is not None:
        yield quoted, "names quoted as stored (PostgreSQL folds unquoted names to lower case)"


GENERATOR = Generator("stored_name", ("table_mismatch", "attribute_mismatch"), generate, generate.__doc__)

"""stored_name: on PostgreSQL, which folds an unquoted name to lower case, the names the schema stores in
mixed case written as stored (``Status`` -> ``"Status"``, ``sales.orders`` -> ``sales."Orders"``): one
candidate with every such name quoted in its stored spelling (a name whose folded spelling is stored, or
that several stored names match, is left as written).

The SQL layer reads names without case (as SQLite and DuckDB do), so to it ``Status`` is the column
``"Status"``; PostgreSQL reads ``status`` and refuses the query. (A name the schema lacks otherwise, a
table of another schema among them, is :mod:`sqlmend.sql.names`' and the ``name_match`` generator's.)
"""

from __future__ import annotations

from sqlmend.search.generators.base import Generator
from sqlmend.sql import ast
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
    """Quote, on PostgreSQL, the names it would fold away from their mixed-case stored spelling."""
    quoted = folded_names(tree, inp.schema)
    if quoted is not None:
        yield quoted, "names quoted as stored (PostgreSQL folds unquoted names to lower case)"


GENERATOR = Generator("stored_name", ("table_mismatch", "attribute_mismatch"), generate, generate.__doc__)

"""table_schema: read a table the query names from the schema that holds it (``employees`` ->
``hr.employees``), where the search path does not reach it; one candidate per schema holding a
relation of that name."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator
from sqlmend.sql import fixes
from sqlmend.sql.resolve import tables_elsewhere


def generate(tree, inp):
    """Name an unknown table by a relation of the same name in another schema, one candidate per such
    relation (its alias kept)."""
    for node, found in tables_elsewhere(tree, inp.schema):
        path = fixes.node_path(node)
        for table in found:
            copy = tree.copy()
            fix = {"op": "replace_table", "path": path, "expect": None, "schema": table.schema,
                   "name": table.relname}
            edited = fixes.apply_tree(copy, [fix], inp.schema.dialect)
            yield edited, f"table {node.sql()} -> {table.name}"


GENERATOR = Generator("table_schema", ("table_mismatch",), generate, generate.__doc__)

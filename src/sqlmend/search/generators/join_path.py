"""join_path: drop a joined table nothing reads, or re-key a join along the schema's foreign key."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit, qualifier
from sqlmend.sql import ast
from sqlmend.structure.canonical import scope_tables


def _locate(tree):
    return [j for j in tree.find_all(ast.Join) if isinstance(j.this, ast.Table)]


def _reads(sel, key: str, skip) -> bool:
    for name, node in sel.args.items():
        if name in ("joins", "from") or node is None:
            continue
        nodes = node if isinstance(node, list) else [node]
        if any((c.table or "").lower() == key for n in nodes for c in n.find_all(ast.Column)):
            return True
    for other in sel.args.get("joins") or []:
        if other is not skip and (on := other.args.get("on")) is not None:
            if any((c.table or "").lower() == key for c in on.find_all(ast.Column)):
                return True
    return False


def _options_for(inp):
    def options(join):
        sel = join.parent_select
        if sel is None:
            return []
        key = (join.this.alias or join.this.name).lower()
        out = []
        if not _reads(sel, key, join) and len(scope_tables(sel)) > 1:
            out.append((("drop", None), f"drop join {join.this.sql()}"))
        scope = scope_tables(sel)
        mine = join.this.name.lower()
        for fk in inp.schema.foreign_keys:
            for a, ca, b, cb in ((fk.table, fk.columns[0], fk.ref_table, fk.ref_columns[0]),
                                 (fk.ref_table, fk.ref_columns[0], fk.table, fk.columns[0])):
                if b.lower() != mine:
                    continue
                for alias, table in scope.items():
                    if table.lower() == a.lower() and alias != key:
                        on = f"{qualifier(sel, alias, table)}.{ca} = {join.this.alias or join.this.name}.{cb}"
                        current = join.args.get("on")
                        if current is None or current.sql().lower() != on.lower():
                            out.append((("on", on), f"join {join.this.sql()} ON {on}"))
        return out[: inp.max_per_node]

    return options


def _apply(join, option):
    kind, arg = option
    if kind == "drop":
        join.pop()
    else:
        join.set("on", ast.condition(arg))
    return True


def generate(tree, inp):
    """Join along the foreign keys the question's tables need: re-key a join, or drop an unused table."""
    yield from each_edit(tree, _locate, _options_for(inp), _apply)


GENERATOR = Generator("join_path", ("table_redundancy", "table_mismatch"), generate, generate.__doc__)

"""group_by_change: drop GROUP BY or HAVING, group by another column, or add the missing GROUP BY."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.sql import ast
from sqlmend.synth.nodes import real_columns, selects


def _options_for(inp):
    def options(sel):
        out = []
        group = sel.args.get("group")
        plain = [e for e in sel.expressions if not e.find(ast.AggFunc)]
        has_agg = any(e.find(ast.AggFunc) for e in sel.expressions)
        if group is not None:
            out.append((("drop", None), "drop GROUP BY"))
            current = {g.sql() for g in group.expressions}
            for e in plain:
                node = e.this if isinstance(e, ast.Alias) else e
                if node.sql() not in current:
                    out.append((("by", node), f"GROUP BY {node.sql()}"))
            for col, table in real_columns(sel, inp.schema, group.expressions):
                tab = inp.schema.table(table)
                for pk in (tab.primary_key if tab else [])[:1]:
                    if pk.lower() != col.name.lower():
                        out.append((("by", ast.column(pk, table=col.table or None)), f"GROUP BY {table}.{pk}"))
        elif has_agg and plain:
            nodes = [e.this if isinstance(e, ast.Alias) else e for e in plain]
            out.append((("add", nodes), "add GROUP BY " + ", ".join(n.sql() for n in nodes)))
        if sel.args.get("having") is not None:
            out.append((("drop_having", None), "drop HAVING"))
        return out

    return options


def _apply(sel, option):
    kind, arg = option
    if kind == "drop":
        sel.args["group"].pop()
        if sel.args.get("having") is not None:
            sel.args["having"].pop()
    elif kind == "by":
        sel.set("group", ast.Group(expressions=[arg.copy()]))
    elif kind == "add":
        sel.group_by(*[n.copy() for n in arg], copy=False)
    else:
        sel.args["having"].pop()
    return True


def generate(tree, inp):
    """Group as the question asks ("for each ..."): by which column, or not at all."""
    yield from each_edit(tree, selects, _options_for(inp), _apply)


GENERATOR = Generator("group_by_change", ("clause_error",), generate, generate.__doc__)

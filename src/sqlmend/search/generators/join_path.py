"""join_path: join a foreign-key neighbour (or, for a column no table read holds, the two tables of a
path to the table two foreign keys away that holds it), drop a joined table nothing reads, or re-key a
join along the schema's foreign key."""

from __future__ import annotations

from sqlmend.search.generators.base import (Generator, add_join, each_edit, fk_pairs, join_on, qualifier,
                                            read_as)
from sqlmend.sql import ast, table_name
from sqlmend.structure.canonical import scope_tables
from sqlmend.synth.nodes import selects


def _locate(tree):
    joins = [j for j in tree.find_all(ast.Join) if isinstance(j.this, ast.Table)]
    froms = [s for s in selects(tree) if isinstance((s.args.get("from_") or s.args.get("from") or ast.From()).this, ast.Table)]
    return joins + froms


#: Foreign-key neighbours joined per SELECT at most (the question's first).
_NEIGHBOURS = 3


def _neighbours(sel, inp):
    """Options joining a table the SELECT does not read, along a foreign key of a table it reads;
    tables the question names (or whose columns it names) first."""
    scope = scope_tables(sel)
    read = {t.lower() for t in scope.values()}
    ranked = []
    for a, ca, b, cb in fk_pairs(inp.schema):
        if b.lower() in read or a.lower() not in read or inp.schema.table(b) is None:
            continue
        tab = inp.schema.table(b)
        named = max([inp.link_scores.get(b.lower(), 0.0)]
                    + [inp.column_score(tab.name, c.name) for c in tab.columns])
        for left in read_as(sel, a):
            on = join_on(left, ca, tab.name, cb)
            ranked.append((-named, len(ranked), (("add", tab.name, on), f"join {tab.name} ON {on.sql()}")))
    return [option for *_, option in sorted(ranked)]


def _unresolved(sel, schema) -> set[str]:
    """Column names (lower case) of the SELECT that no table it reads holds, or that name a table it
    does not read (the engine refuses both)."""
    scope = scope_tables(sel)
    held = {c.name.lower() for t in scope.values() if (tab := schema.table(t)) is not None for c in tab.columns}
    out = set()
    for col in sel.find_all(ast.Column):
        if col.parent_select is not sel:
            continue
        if (col.table and col.table.lower() not in scope) or (not col.table and col.name.lower() not in held):
            out.add(col.name.lower())
    return out


#: Two-table paths joined per SELECT at most, for a column two foreign keys away.
_BRIDGES = 2


def _bridges(sel, inp):
    """Options joining a neighbour and, through it, a table two foreign keys away that holds a column
    the SELECT reads but no table of it has (the tables the question names first)."""
    missing = _unresolved(sel, inp.schema)
    if not missing:
        return []
    read = {t.lower() for t in scope_tables(sel).values()}
    pairs = list(fk_pairs(inp.schema))
    ranked = []
    for a, ca, m, cm in pairs:
        if a.lower() not in read or m.lower() in read or inp.schema.table(m) is None:
            continue
        for m2, cm2, b, cb in pairs:
            tab = inp.schema.table(b)
            if m2.lower() != m.lower() or b.lower() in read or b.lower() == m.lower() or tab is None:
                continue
            if not missing & {c.name.lower() for c in tab.columns}:
                continue
            named = max([inp.link_scores.get(b.lower(), 0.0)] + [inp.column_score(tab.name, c.name) for c in tab.columns])
            mid = inp.schema.table(m).name
            for left in read_as(sel, a):
                first, second = join_on(left, ca, mid, cm), join_on(mid, cm2, tab.name, cb)
                ranked.append((-named, len(ranked), (("bridge", (mid, first), (tab.name, second)),
                                                     f"join {mid} ON {first.sql()} JOIN {tab.name} ON {second.sql()}")))
    return [option for *_, option in sorted(ranked)][:_BRIDGES]


def _reads(sel, key: str, skip) -> bool:
    for name, node in sel.args.items():
        if name in ("joins", "from", "from_") or node is None:  # sqlglot names FROM "from_" (older: "from")
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
        if isinstance(join, ast.Select):
            return _neighbours(join, inp)[:_NEIGHBOURS] + _bridges(join, inp)
        sel = join.parent_select
        if sel is None:
            return []
        key = (join.this.alias or join.this.name).lower()
        out = []
        if not _reads(sel, key, join) and len(scope_tables(sel)) > 1:
            out.append((("drop", None), f"drop join {join.this.sql()}"))
        scope = scope_tables(sel)
        mine = table_name(join.this).lower()
        for a, ca, b, cb in fk_pairs(inp.schema):
            if b.lower() != mine:
                continue
            for alias, table in scope.items():
                if table.lower() == a.lower() and alias != key:
                    on = join_on(qualifier(sel, alias, table), ca, join.this.alias or join.this.name, cb)
                    current = join.args.get("on")
                    if current is None or current.sql().lower() != on.sql().lower():
                        out.append((("on", on), f"join {join.this.sql()} ON {on.sql()}"))
        return out[: inp.max_per_node]

    return options


def _apply_for(inp):
    def apply(node, option):
        if option[0] == "add":
            add_join(node, option[1], option[2], inp.schema)
            return True
        if option[0] == "bridge":
            for table, on in option[1:]:
                add_join(node, table, on, inp.schema)
            return True
        return _apply(node, option)

    return apply


def _apply(join, option):
    kind, arg = option
    if kind == "drop":
        join.pop()
    else:
        join.set("on", arg.copy())
    return True


def generate(tree, inp):
    """Join along the foreign keys the question's tables need: join a neighbour, re-key a join, or drop an
    unused table."""
    yield from each_edit(tree, _locate, _options_for(inp), _apply_for(inp))


GENERATOR = Generator("join_path", ("table_redundancy", "table_mismatch"), generate, generate.__doc__)

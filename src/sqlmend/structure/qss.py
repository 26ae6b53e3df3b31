"""The question-schema structure (QSS) of ErrorLLM §2.3.

``G = (V_q ∪ V_S, E_S ∪ E_Link)``: question nodes (the question's tokens),
schema nodes (tables; columns with their types and a few sample values),
schema edges (column of a table, primary key, foreign key) and the linking
edges of :mod:`sqlmend.structure.linking`. :func:`serialize` writes a compact
text form for a language model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from sqlmend.structure.linking import (Link, embedding_links, name_links, tokenize,
                                       value_links)
from sqlmend.types import Schema, split_ref


@dataclass
class SchemaNode:
    """A table (``name`` = "t") or a column (``name`` = "t.c") of the schema."""

    name: str
    kind: str  # table | column
    type: str = ""
    primary_key: bool = False
    samples: list[Any] = field(default_factory=list)
    comment: str = ""  # what the database's comment says it means
    relation: str = ""  # a table's kind: table | view | materialized view


@dataclass
class Edge:
    """A schema edge: ``has`` (table -> column), ``pk`` (table -> its key column), ``fk`` (column -> column)."""

    kind: str
    src: str
    dst: str


@dataclass
class QSS:
    """A question-schema structure: question tokens, schema nodes and edges, links."""

    question: str
    tokens: list[str]
    nodes: list[SchemaNode]
    edges: list[Edge]
    links: list[Link]

    def node(self, name: str) -> SchemaNode | None:
        """Return the node of a table ("t") or column ("t.c"), case-insensitively."""
        low = name.lower()
        return next((n for n in self.nodes if n.name.lower() == low), None)

    def table_of(self, target: str) -> str:
        """The table a link's target is or belongs to (a table's name may itself hold a dot: ``hr.employees``)."""
        node = self.node(target)
        return target if node is not None and node.kind == "table" else split_ref(target)[0]

    def linked_tables(self) -> list[str]:
        """Return the tables that a link points to (directly or through one of their columns)."""
        seen: dict[str, None] = {}
        for link in sorted(self.links, key=lambda x: -x.score):
            seen.setdefault(self.table_of(link.target), None)
        return list(seen)


def build(question: str, schema: Schema, samples: dict[str, list[Any]] | None = None,
          value_index: Any = None, embed: Callable | None = None,
          fuzzy_threshold: float = 88.0) -> QSS:
    """Build the QSS of a question over a schema.

    Args:
        question: the natural-language question.
        schema: the database schema (``db.schema()``).
        samples: optional sample values per "table.column" (see :func:`sqlmend.structure.samples.sample_values`).
        value_index: optional value index (``db.value_index()``) for value links.
        embed: optional ``texts -> vectors`` for embedding links.
        fuzzy_threshold: the least rapidfuzz ratio of a fuzzy name link.

    Returns:
        The :class:`QSS`.
    """
    samples = {k.lower(): v for k, v in (samples or {}).items()}
    nodes: list[SchemaNode] = []
    edges: list[Edge] = []
    for t in schema.tables:
        nodes.append(SchemaNode(t.name, "table", comment=t.comment, relation=t.kind))
        pk = {p.lower() for p in t.primary_key} | {c.name.lower() for c in t.columns if c.primary_key}
        for c in t.columns:
            name = f"{t.name}.{c.name}"
            is_pk = c.name.lower() in pk
            nodes.append(SchemaNode(name, "column", c.type, is_pk, samples.get(name.lower(), []), c.comment))
            edges.append(Edge("has", t.name, name))
            if is_pk:
                edges.append(Edge("pk", t.name, name))
        for fk in t.foreign_keys:
            for a, b in zip(fk.columns, fk.ref_columns):
                edges.append(Edge("fk", f"{fk.table or t.name}.{a}", f"{fk.ref_table}.{b}"))
    links = name_links(question, schema, fuzzy_threshold)
    if value_index is not None:
        links += value_links(question, value_index)
    if embed is not None:
        links += embedding_links(question, schema, embed)
    return QSS(question, tokenize(question), nodes, edges, links)


def _about(comment: str, width: int = 40) -> str:
    """A comment as the QSS writes it: ``"~ first words"``, cut at ``width`` characters."""
    text = " ".join(comment.split())
    return "~" + repr(text if len(text) <= width else text[: width - 1] + "…")


def _fmt_value(v: Any, width: int = 24) -> str:
    s = str(v)
    return repr(s[:width]) if isinstance(v, str) else s[:width]


def serialize(qss: QSS, focus: list[str] | None = None, max_chars: int = 1200,
              focus_columns: list[str] | None = None, linked_only: bool = False,
              min_columns: int = 4) -> str:
    """Write a QSS as compact text.

    Tables named in ``focus`` come first, then linked tables, then the rest,
    until ``max_chars`` is reached. One line per table
    ``t(c1* type ['v1','v2'], c2 type, ...)`` (``*`` marks the primary key),
    then ``fk:`` and ``links:`` lines restricted to the tables written.

    With ``linked_only`` only the linked sub-graph is written (ErrorLLM §2.3):
    the tables the SQL uses or the question links to, and in each of them the
    columns the SQL uses, the question links to, and the key columns (filled
    up to ``min_columns``); ``+N`` counts the columns left out. This is what
    the trained detector reads: about half the tokens of the whole schema.

    Args:
        qss: the structure.
        focus: tables to write first (e.g. the ones the SQL uses).
        max_chars: the size budget of the text.
        focus_columns: column names the SQL uses (with ``linked_only``).
        linked_only: write the linked sub-graph only.
        min_columns: the fewest columns written per table (with ``linked_only``).

    Returns:
        The text.
    """
    tables = [n.name for n in qss.nodes if n.kind == "table"]
    order: dict[str, None] = {}
    low = {t.lower(): t for t in tables}
    linked = qss.linked_tables()
    for t in [*(focus or []), *linked, *([] if linked_only and (focus or linked) else tables)]:
        if t.lower() in low:
            order.setdefault(low[t.lower()], None)
    keep = _linked_columns(qss, focus_columns) if linked_only else None
    lines: list[str] = []
    written: set[str] = set()
    budget = max_chars
    for t in order:
        cols = [n for n in qss.nodes if n.kind == "column" and split_ref(n.name)[0] == t]
        left_out = 0
        if keep is not None:
            chosen = [c for c in cols if c.name.lower() in keep or c.primary_key]
            chosen += [c for c in cols if c not in chosen][:max(0, min_columns - len(chosen))]
            left_out = len(cols) - len(chosen)
            cols = [c for c in cols if c in chosen]
        parts = []
        for c in cols:
            s = split_ref(c.name)[1] + ("*" if c.primary_key else "") + (f" {c.type.lower()}" if c.type else "")
            if c.samples:
                s += " [" + ",".join(_fmt_value(v) for v in c.samples[:2]) + "]"
            if c.comment:
                s += f" {_about(c.comment)}"
            parts.append(s)
        if left_out:
            parts.append(f"+{left_out}")
        node = qss.node(t)
        kind = f"[{node.relation}]" if node is not None and node.relation not in ("", "table") else ""
        about = f" {_about(node.comment)}" if node is not None and node.comment else ""
        line = f"{t}{kind}({', '.join(parts)}){about}"
        if len(line) > budget and written:
            break
        lines.append(line[:budget])
        budget -= len(line) + 1
        written.add(t)
    fks = [f"{e.src}->{e.dst}" for e in qss.edges
           if e.kind == "fk" and split_ref(e.src)[0] in written and split_ref(e.dst)[0] in written]
    if fks:
        lines.append("fk: " + "; ".join(fks))
    links = [f"'{x.phrase}'->{x.target}" + (f"={_fmt_value(x.value)}" if x.value is not None else "")
             + f"({x.kind})" for x in sorted(qss.links, key=lambda x: -x.score)
             if qss.table_of(x.target) in written]
    if links:
        lines.append("links: " + "; ".join(links[:12]))
    return "\n".join(lines)


def _linked_columns(qss: QSS, focus_columns: list[str] | None) -> set[str]:
    """Lower-case ``t.c`` names of the columns the question links to, the SQL uses, or a key joins."""
    used = {c.lower() for c in focus_columns or []}
    keep = {x.target.lower() for x in qss.links if "." in x.target}
    keep |= {e.src.lower() for e in qss.edges if e.kind == "fk"} | {e.dst.lower() for e in qss.edges if e.kind == "fk"}
    keep |= {n.name.lower() for n in qss.nodes
             if n.kind == "column" and split_ref(n.name)[1].lower() in used}
    return keep

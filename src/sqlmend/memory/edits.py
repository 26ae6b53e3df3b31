"""Edits between a wrong SQL and its validated repair, grouped by structural dependency (MIRA §3.2.2).

"MIRA parses s- and s_val and derives neutral ADD, REMOVE, and REPLACE
operations from their abstract syntax trees [...]. Equivalent changes and
surface-only alias changes are discarded. The remaining edits are grouped by
structural dependencies. For example, a join that introduces a table is grouped
with edits whose column references require that table. Repeated instances of
the same structural transformation also stay in one group."

The edits themselves come from :func:`sqlmend.sql.diff` (on normalized trees);
this module only groups them. Three dependencies join two edits:

1. **table introduction**: one edit adds or removes a table (FROM / JOIN) and
   the other references a column of that table;
2. **nesting**: one edit's AST path lies inside the other's;
3. **repetition**: both apply the same transformation (same kind, clause and
   fragment shape once identifiers and literals are abstracted);
4. **move**: one removes and the other inserts the same fragment in the same
   clause (an item moved, e.g. a reordered projection);
5. **grouping**: both add (or both remove) in the GROUP BY and HAVING clauses
   of the same query: a HAVING needs its grouping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlmend import sql
from sqlmend.types import Edit, Schema

_WORD = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+(?:\.\d+)?\b|\b[A-Za-z_][A-Za-z0-9_]*\b")
_KEYWORDS = frozenset(
    "select from where join on and or not in like between is null distinct group by having order "
    "limit asc desc count sum avg min max as union intersect except exists case when then else end "
    "inner left right outer cross".split())


@dataclass
class EditGroup:
    """Edits that must be judged together as one candidate repair unit."""

    edits: list[Edit] = field(default_factory=list)

    @property
    def clauses(self) -> list[str]:
        return sorted({e.clause for e in self.edits})

    @property
    def schema_refs(self) -> list[str]:
        return sorted({r for e in self.edits for r in e.schema_refs})

    @property
    def kinds(self) -> list[str]:
        return sorted({e.kind for e in self.edits})


def extract_edits(wrong_sql: str, repair_sql: str, schema: Schema | None = None,
                  dialect: str = "sqlite") -> list[Edit]:
    """Return the AST edits turning the wrong SQL into the repair (via :func:`sqlmend.sql.diff`).

    Args:
        wrong_sql: the historical incorrect SQL (s-).
        repair_sql: the validated repair SQL (s_val).
        schema: the database schema, so that both are compared normalized.
        dialect: the SQL dialect.

    Returns:
        The edits, alias-only and equivalent changes already dropped by the diff.
    """
    return list(sql.diff(wrong_sql, repair_sql, schema=schema, dialect=dialect))


def shape(fragment: str | None) -> str:
    """Abstract a fragment: identifiers become ``I``, literals ``V``, keywords stay.

    >>> shape("T1.name = 'France'")
    'I.I = V'
    >>> shape("COUNT(DISTINCT singer.id)")
    'count(distinct I.I)'
    """
    if not fragment:
        return ""

    def sub(m: re.Match) -> str:
        tok = m.group(0)
        if tok[0] in "'\"" or tok[0].isdigit():
            return "V"
        return tok.lower() if tok.lower() in _KEYWORDS else "I"

    return " ".join(_WORD.sub(sub, fragment).split())


def _introduced_tables(e: Edit) -> set[str]:
    if e.clause not in ("from", "join"):
        return set()
    return {r.lower() for r in e.schema_refs if "." not in r}


def _column_tables(e: Edit) -> set[str]:
    return {r.split(".", 1)[0].lower() for r in e.schema_refs if "." in r}


def _nested(a: str, b: str) -> bool:
    if not a or not b:
        return False
    return a == b or b.startswith(a + ".") or b.startswith(a + "[") or \
        a.startswith(b + ".") or a.startswith(b + "[")


def _squash(text: str | None) -> str:
    return " ".join((text or "").lower().split())


def _arm(path: str) -> str:
    return path.rpartition(".")[0]


def _depends(a: Edit, b: Edit) -> bool:
    if _introduced_tables(a) & _column_tables(b) or _introduced_tables(b) & _column_tables(a):
        return True
    if _nested(a.path, b.path):
        return True
    if {a.kind, b.kind} == {"insert", "remove"} and a.clause == b.clause and \
            _squash(a.before or a.after) == _squash(b.before or b.after) and _arm(a.path) == _arm(b.path):
        return True
    if {a.clause, b.clause} == {"group", "having"} and a.kind == b.kind != "replace" and _arm(a.path) == _arm(b.path):
        return True
    return (a.kind, a.clause, shape(a.before), shape(a.after)) == \
        (b.kind, b.clause, shape(b.before), shape(b.after))


def group_edits(edits: list[Edit], decompose: bool = True) -> list[EditGroup]:
    """Group edits by structural dependency (§3.2.2), keeping the diff's order.

    Args:
        edits: the edits of one wrong/repair pair.
        decompose: False puts every edit in one group - the "w/o repair-unit
            decomposition" ablation of §4.4.

    Returns:
        The groups (connected components of the dependency relation).
    """
    if not edits:
        return []
    if not decompose:
        return [EditGroup(list(edits))]
    parent = list(range(len(edits)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(edits)):
        for j in range(i + 1, len(edits)):
            if _depends(edits[i], edits[j]):
                parent[find(j)] = find(i)
    groups: dict[int, EditGroup] = {}
    for i, e in enumerate(edits):
        groups.setdefault(find(i), EditGroup()).edits.append(e)
    return list(groups.values())

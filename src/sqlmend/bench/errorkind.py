"""Which part of a wrong prediction differs from the gold: a coarse error type, where one can be judged.

Real predictions carry no error labels. The clause-level diff of the prediction
against the gold (:func:`sqlmend.sql.diff`) says where they differ; when every edit
falls in one family of clauses, that family is the prediction's error kind
(``attribute``: SELECT; ``table``: FROM/JOIN; ``condition``: WHERE/HAVING;
``clause``: GROUP BY/ORDER BY/LIMIT/DISTINCT). Edits in several families or
outside these clauses, no edit, or a pair the diff cannot read: not judgeable (None).

>>> KINDS
('attribute', 'table', 'condition', 'clause')
"""

from __future__ import annotations

from typing import Any

from sqlmend import sql as sqlmod
from sqlmend import taxonomy
from sqlmend.errors import SqlmendError

#: The coarse kinds, in report order.
KINDS = ("attribute", "table", "condition", "clause")

#: The taxonomy families of each kind.
_KIND_FAMILIES = {"attribute": ("attribute", "function"), "table": ("table",), "condition": ("value", "condition"),
                  "clause": ("clause", "modifier")}

#: The taxonomy's error types of each kind, in slot order (to weigh synthesized errors by the kinds measured).
KIND_TYPES: dict[str, tuple[str, ...]] = {
    kind: tuple(t.id for t in taxonomy.all_types() if t.family in families)
    for kind, families in _KIND_FAMILIES.items()}

_FAMILY = {"select": "attribute", "from": "table", "join": "table", "where": "condition",
           "having": "condition", "group": "clause", "order": "clause", "limit": "clause",
           "distinct": "clause"}


def type_weights(data: dict[str, Any]) -> dict[str, float]:
    """Error-type weights from ``{kind or type id: weight}`` or a ``bench detect --json`` report (its ``kinds``).

    A kind's weight is shared equally by its types (:data:`KIND_TYPES`).

    Raises:
        ValueError: a key that is neither a kind nor an error type.
    """
    if "kinds" in data:
        data = {k: v["n"] for k, v in data["kinds"].items() if k in KIND_TYPES}
    known = set(taxonomy.ids())
    out: dict[str, float] = {}
    for key, w in data.items():
        types = KIND_TYPES.get(key) or ((key,) if key in known else ())
        if not types:
            raise ValueError(f"{key!r} is neither an error kind {sorted(KIND_TYPES)} nor an error type")
        for t in types:
            out[t] = out.get(t, 0.0) + float(w) / len(types)
    return out


def error_kind(pred: str, gold: str, schema: Any = None, dialect: str = "sqlite") -> str | None:
    """The coarse error kind of a wrong prediction (see the module doc), or None when not judgeable."""
    try:
        edits = sqlmod.diff(pred, gold, schema, dialect)
    except (SqlmendError, ValueError, RecursionError):
        return None
    families = {_FAMILY.get(e.clause) for e in edits}
    return families.pop() if len(families) == 1 and None not in families else None


__all__ = ["KINDS", "KIND_TYPES", "error_kind", "type_weights"]

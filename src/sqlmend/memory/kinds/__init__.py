"""MIRA's repair kinds as a catalogue: one module per kind, listed here.

Each module (see :mod:`sqlmend.memory.kinds.base` for the interface) says how
its kind is classified from an isolated edit group, judged from evidence,
described by a contract, activated on a current task and adapted to it as
fixes of :mod:`sqlmend.sql.fixes`. :mod:`~sqlmend.memory.judge`,
:mod:`~sqlmend.memory.activation` and :mod:`~sqlmend.memory.adapt` dispatch
through :data:`KINDS`; adding a kind is adding a module and a line below.

>>> list(KINDS)
['value_binding', 'distinct', 'predicate_column', 'join_condition', 'column_substitution', 'general']
"""

from __future__ import annotations

from types import ModuleType

from sqlmend.memory.kinds import (column_substitution, distinct, general, join_condition, predicate_column,
                                  value_binding)

#: The kinds in the order classification tries them; ``general`` (the model's) last, it takes any group.
KINDS: dict[str, ModuleType] = {k.NAME: k for k in (value_binding, distinct, predicate_column, join_condition,
                                                    column_substitution, general)}

#: The kinds decided and applied without a model.
MECHANICAL_KINDS = tuple(name for name, k in KINDS.items() if k.MECHANICAL)


def get(name: str) -> ModuleType:
    """The module of a kind; an unknown name (an item of a newer catalogue) is the general kind."""
    return KINDS.get(name, general)


def classify(edits: list, dialect: str = "sqlite") -> tuple[str, dict]:
    """The first kind that recognises an edit group, with its binding parameters.

    Args:
        edits: the group's edits (:class:`sqlmend.types.Edit`).
        dialect: the SQL dialect of the fragments.

    Returns:
        ``(kind, params)``; ``("general", {})`` when no mechanical kind fits.
    """
    for kind in KINDS.values():
        params = kind.classify(edits, dialect)
        if params is not None:
            return kind.NAME, params
    return general.NAME, {}

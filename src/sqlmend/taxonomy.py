"""The error-type catalogue of ErrorLLM (paper §3.1, Table 5), with stable ids.

ErrorLLM extends a language model's vocabulary with ``N = 32`` reserved error
tokens ``[ERR_1] .. [ERR_32]`` plus a no-error token ``[ERR_NONE]``. The current
taxonomy uses 12 of the slots; new types take a free slot, so that existing
slot numbers (stored in memory rows, training data and trained adapters) never
change.

Ids are snake_case strings and are the only form stored anywhere.

>>> get("value_error").slot
7
>>> get("no_error").token
'[ERR_NONE]'
>>> to_nl2sql_bugs("modifier_error")
'others'
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmend.errors import ConfigError

N_SLOTS = 32
NO_ERROR = "no_error"
NO_ERROR_TOKEN = "[ERR_NONE]"
#: Not an error of the upstream system's SQL but a refusal: the text is not one read-only query
#: (a write, PRAGMA, ATTACH, several statements, a forbidden function). No error token, no slot.
REFUSED = "refused"


@dataclass(frozen=True)
class ErrorType:
    """One error type: a stable id, its reserved slot, a description and its family."""

    id: str
    slot: int  # 1..N_SLOTS; 0 for no_error
    family: str  # attribute | table | value | condition | function | clause | modifier | none
    description: str
    nl2sql_bugs: str  # the NL2SQL-Bugs category it maps to

    @property
    def token(self) -> str:
        return NO_ERROR_TOKEN if self.id == NO_ERROR else f"[ERR_{self.slot}]"


_TYPES: tuple[ErrorType, ...] = (
    ErrorType("attribute_mismatch", 1, "attribute",
              "A selected or referenced column is the wrong column for what the question asks.",
              "attribute"),
    ErrorType("attribute_redundancy", 2, "attribute",
              "The SELECT list returns columns that the question does not ask for.",
              "attribute"),
    ErrorType("attribute_missing", 3, "attribute",
              "A column that the question asks for is missing from the SELECT list.",
              "attribute"),
    ErrorType("table_mismatch", 4, "table",
              "A table is used where the question refers to a different table, or a join pairs the wrong columns.",
              "table"),
    ErrorType("table_redundancy", 5, "table",
              "A table that the question does not need is joined, changing the rows returned.",
              "table"),
    ErrorType("table_missing", 6, "table",
              "A table that the question needs (to filter or to return a column) is not joined.",
              "table"),
    ErrorType("value_error", 7, "value",
              "A literal does not match how the value is stored in the database (spelling, case, format, unit).",
              "value"),
    ErrorType("condition_missing", 8, "condition",
              "A filter condition that the question states or implies is missing.",
              "condition"),
    ErrorType("condition_error", 9, "condition",
              "A filter condition uses the wrong column, operator, comparison or logical connective.",
              "condition"),
    ErrorType("function_error", 10, "function",
              "An aggregate or scalar function is wrong, missing, or applied to the wrong argument.",
              "function"),
    ErrorType("clause_error", 11, "clause",
              "A clause (GROUP BY, HAVING, ORDER BY, LIMIT, subquery, set operation) is wrong, missing or redundant.",
              "clause"),
    ErrorType("modifier_error", 12, "modifier",
              "A modifier is wrong or missing: DISTINCT, ASC/DESC, NULL handling, or the LIMIT count.",
              "others"),
)

_NO_ERROR = ErrorType(NO_ERROR, 0, "none", "The SQL answers the question correctly.", "none")

_REFUSED = ErrorType(REFUSED, 0, "refused",
                     "The text is not one read-only query (a write, PRAGMA, ATTACH, several "
                     "statements, a forbidden function): it is refused, not corrected.",
                     "others")

#: The NL2SQL-Bugs categories (Liu et al., KDD 2025) that ErrorLLM's taxonomy maps to.
#: Two of them (operator, subquery) have no ErrorLLM type yet (paper §4.4).
NL2SQL_BUGS_CATEGORIES = (
    "attribute", "table", "value", "operator", "condition",
    "function", "clause", "subquery", "others",
)

_BY_ID = {t.id: t for t in (*_TYPES, _NO_ERROR, _REFUSED)}
_BY_SLOT = {t.slot: t for t in _TYPES}
_BY_TOKEN = {t.token: t for t in (*_TYPES, _NO_ERROR)}

assert len(_BY_SLOT) == len(_TYPES), "two error types share a slot"
assert all(1 <= t.slot <= N_SLOTS for t in _TYPES)


def all_types(include_no_error: bool = False) -> list[ErrorType]:
    """Return the catalogue in slot order.

    Args:
        include_no_error: append the ``no_error`` type at the end.
    """
    out = sorted(_TYPES, key=lambda t: t.slot)
    return [*out, _NO_ERROR] if include_no_error else out


def ids() -> list[str]:
    """Return the ids of the error types (without ``no_error``) in slot order."""
    return [t.id for t in all_types()]


def get(type_id: str) -> ErrorType:
    """Return the error type with this id (also ``no_error`` and ``refused``).

    Raises :class:`ConfigError` if unknown.

    >>> get("refused").family
    'refused'
    """
    try:
        return _BY_ID[type_id]
    except KeyError:
        raise ConfigError(f"unknown error type {type_id!r}; known: {', '.join(_BY_ID)}") from None


def from_token(token: str) -> ErrorType:
    """Return the error type of a reserved token such as ``[ERR_7]``."""
    try:
        return _BY_TOKEN[token]
    except KeyError:
        raise ConfigError(f"token {token!r} is not a used error token") from None


def all_tokens() -> list[str]:
    """Return the N reserved error tokens ``[ERR_1]..[ERR_N]`` plus ``[ERR_NONE]``.

    Slots not used by any type are still reserved, so that a new type can be
    added without renumbering or resizing a trained vocabulary.
    """
    return [f"[ERR_{i}]" for i in range(1, N_SLOTS + 1)] + [NO_ERROR_TOKEN]


def to_nl2sql_bugs(type_id: str) -> str:
    """Map an ErrorLLM error type id to its NL2SQL-Bugs category."""
    return get(type_id).nl2sql_bugs

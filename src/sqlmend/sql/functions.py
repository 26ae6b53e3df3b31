"""Which functions a query may call: per dialect, the engine's functions that read and compute.

The lists are data, one TOML file per dialect in ``function_lists/`` (``sqlite.toml``,
``postgres.toml``, ``duckdb.toml``, ``mysql.toml``), made from the engines' own catalogues by
``scripts/function_lists.py`` (each file says how). ``[read]`` names, by family, the functions a query
may call (aggregates, arithmetic, string, date and time, conditional, casts, JSON readers, window
functions ...); ``[refused]`` names, by family, the engine's functions left off (files, locks,
statistics, replication, notifications, sequences, settings, signals, extensions, sleeping ...).

A call is named as the engine sees it: an ``Anonymous`` node by the name written (a quoted name
keeps its case), a typed node of sqlglot (``exp.Count``, ``exp.StrPosition``) by the name sqlglot
writes for its class in the dialect (``INSTR`` in SQLite, ``LOCATE`` in MySQL), and a call qualified
by a schema by ``schema.name`` unless the schema is the engine's catalogue (``pg_catalog.lower`` is
``lower``). A typed node that sqlglot writes as syntax, not as a call (``CASE``, ``x -> 'k'``), calls
nothing; ``NEXT VALUE FOR`` is the exception (:data:`SIDE_EFFECT_NODES`).

>>> from sqlmend.sql.parse import parse
>>> unlisted(parse("SELECT count(*), my_fn(1), lower(name) FROM t", "postgres"), "postgres")
('my_fn',)
>>> refusal("pg_sleep", "postgres")
'function pg_sleep() is not on the read-only list of postgres'
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sqlglot import exp

from sqlmend.errors import ConfigError, ReadOnlyViolation
from sqlmend.sql.dialects import resolve

#: The folder of the lists (one TOML file per dialect).
LISTS = Path(__file__).with_name("function_lists")
#: Dialects that have a list (sqlglot's names).
DIALECTS = ("sqlite", "postgres", "duckdb", "mysql")
#: Schemas that hold the engine's own functions: a call qualified by one is the bare name.
CATALOG_SCHEMAS = {"postgres": frozenset({"pg_catalog"}), "duckdb": frozenset({"main", "pg_catalog", "system"}),
                   "sqlite": frozenset({"main"}), "mysql": frozenset()}
#: Dialects whose quoted function names keep their case (the others compare names without case).
CASE_SENSITIVE_QUOTED = frozenset({"postgres"})
#: Typed nodes that sqlglot writes as syntax but that change the server's state, by the name they get
#: (a text sqlglot cannot parse is searched for ``NEXT VALUE FOR`` and ``PREVIOUS VALUE FOR`` too).
SIDE_EFFECT_NODES: dict[type, str] = {exp.NextValueFor: "next value for"}
#: Nodes named by the text they carry, as ``Anonymous`` is.
_NAMED_NODES = (exp.Anonymous, exp.AnonymousAggFunc, exp.CombinedAggFunc)

_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_$]*)\s*\(")


@dataclass(frozen=True)
class FunctionList:
    """One dialect's list: the families of functions that read and compute, and of those refused."""

    dialect: str
    engine: str
    read: dict[str, tuple[str, ...]]
    refused: dict[str, tuple[str, ...]]

    @property
    def names(self) -> frozenset[str]:
        """Every name a query may call (lower case)."""
        return frozenset(n for names in self.read.values() for n in names)

    @property
    def refused_names(self) -> frozenset[str]:
        """The engine's functions that the list leaves off (what ``[refused]`` names)."""
        return frozenset(n for names in self.refused.values() for n in names)


def function_list(dialect: str) -> FunctionList:
    """The list of ``dialect`` (``"sqlite"``, ``"postgres"``/``"postgresql"``, ``"duckdb"``, ``"mysql"``).

    Raises:
        ConfigError: no list for that dialect.
    """
    return _load(resolve(dialect))


@lru_cache(maxsize=None)
def _load(dialect: str) -> FunctionList:
    path = LISTS / f"{dialect}.toml"
    if dialect not in DIALECTS or not path.is_file():
        raise ConfigError(f"no read-only function list for dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return FunctionList(dialect, data.get("engine", ""),
                        {k: tuple(v) for k, v in data.get("read", {}).items()},
                        {k: tuple(v) for k, v in data.get("refused", {}).items()})


@lru_cache(maxsize=None)
def allowed(dialect: str) -> frozenset[str]:
    """The names a query may call in ``dialect`` (lower case)."""
    return function_list(dialect).names


def normalize_names(names: Iterable[str]) -> frozenset[str]:
    """User-given names as the check compares them: trimmed, lower case (``Schema.F`` -> ``schema.f``).

    >>> sorted(normalize_names([" My_Fn ", "pub.f"]))
    ['my_fn', 'pub.f']

    Raises:
        ConfigError: a name that is not a (schema-qualified) identifier.
    """
    out = set()
    for raw in names:
        name = str(raw).strip().lower()
        if not re.fullmatch(r"[a-z_][a-z0-9_$]*(\.[a-z_][a-z0-9_$]*)?", name):
            raise ConfigError(f"allowed function {raw!r}: expected a function name, optionally schema.name")
        out.add(name)
    return frozenset(out)


def refusal(name: str, dialect: str) -> str:
    """The words of the refusal of a call to ``name``."""
    return f"function {name}() is not on the read-only list of {resolve(dialect)}"


# --- the calls of a tree ------------------------------------------------------------


def call_name(node: exp.Func, dialect: str) -> str | None:
    """The name under which ``node`` calls a function in ``dialect``, or None when it calls none
    (sqlglot writes it as syntax). Lower case unless it is quoted and the dialect keeps the case."""
    if isinstance(node, _NAMED_NODES):
        ident = node.args.get("this")
        name = ident.this if isinstance(ident, exp.Identifier) else str(ident or "")
        quoted = isinstance(ident, exp.Identifier) and ident.quoted
        name = name if quoted and dialect in CASE_SENSITIVE_QUOTED else name.lower()
    else:
        side_effect = SIDE_EFFECT_NODES.get(type(node))
        if side_effect is not None:
            return side_effect
        name = _typed_name(type(node), dialect)
        if name is None:
            return None
    qualifier = _qualifier(node)
    if qualifier and qualifier.lower() not in CATALOG_SCHEMAS.get(dialect, ()):
        return f"{qualifier.lower()}.{name}"
    return name


def _qualifier(node: exp.Expression) -> str:
    """The schema a call is qualified by (``pg_catalog`` of ``pg_catalog.pg_sleep(1)``), or ''."""
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        return parent.this.sql() if isinstance(parent.this, exp.Expression) else str(parent.this)
    return ""


@lru_cache(maxsize=None)
def _typed_name(cls: type, dialect: str) -> str | None:
    """The name sqlglot writes for a node of class ``cls`` in ``dialect``: read off a node of that class
    whose required arguments are placeholders (one answer per class, whatever the query), or None when
    it is written as syntax (``CASE``, an operator, a bare keyword)."""
    args = {k: ([exp.column("x")] if k == "expressions" else exp.column("x"))
            for k, required in cls.arg_types.items() if required}
    try:
        text = cls(**args).sql(dialect=dialect)
    except Exception:  # a class sqlglot cannot write with placeholders: its canonical name
        return cls.sql_name().lower() if hasattr(cls, "sql_name") else cls.__name__.lower()
    match = _CALL.match(text)
    return match.group(1).lower() if match else None


def calls(tree: exp.Expression, dialect: str) -> Iterator[tuple[str, exp.Func]]:
    """Every function call of ``tree`` (subqueries, FROM and window specs included), as ``(name, node)``."""
    dialect = resolve(dialect)
    for node in tree.walk():
        if isinstance(node, exp.Func):
            name = call_name(node, dialect)
            if name is not None:
                yield name, node


def unlisted(tree: exp.Expression, dialect: str, extra: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The names ``tree`` calls that are not on ``dialect``'s list nor in ``extra``, in order of first call.

    Raises:
        ReadOnlyViolation: a call the list knows to have effects (``[refused]``, ``NEXT VALUE FOR``): no
            engine needs to be asked about it.
    """
    dialect = resolve(dialect)
    out: dict[str, None] = {}
    for name, _ in calls(tree, dialect):
        if verdict(name, dialect, extra) == UNLISTED:
            out.setdefault(name, None)
    return tuple(out)


#: What :func:`verdict` says of a name.
ALLOWED, UNLISTED = "allowed", "unlisted"


def verdict(name: str, dialect: str, extra: frozenset[str] = frozenset()) -> str:
    """:data:`ALLOWED` (on the list or in ``extra``) or :data:`UNLISTED` (ask the engine whether it has
    such a function) for a call to ``name`` (as :func:`call_name` gives it).

    Raises:
        ReadOnlyViolation: a function the list knows to have effects (``[refused]``, ``NEXT VALUE FOR``).
    """
    if name in extra or name in allowed(dialect):
        return ALLOWED
    if name in _known_refused(dialect):
        raise ReadOnlyViolation(refusal(name, dialect))
    return UNLISTED


@lru_cache(maxsize=None)
def _known_refused(dialect: str) -> frozenset[str]:
    return function_list(dialect).refused_names | frozenset(SIDE_EFFECT_NODES.values())


__all__ = ["ALLOWED", "CATALOG_SCHEMAS", "DIALECTS", "FunctionList", "LISTS", "SIDE_EFFECT_NODES", "UNLISTED",
           "allowed", "call_name", "calls", "function_list", "normalize_names", "refusal", "unlisted", "verdict"]

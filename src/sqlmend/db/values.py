"""The value index: the distinct text values of a database, searchable fast.

Rules ask it, for a literal compared with a column, which values the column
really stores: "does 'F' occur in singer.gender, and what does?". It holds the
distinct text values of every column (text values only: numbers are compared
as numbers), built once per database and cached on disk under
``sqlmend.paths.cache_dir("values")``, keyed by the database's cache key (path,
mtime and size of a file).

Match modes, from strict to loose (:data:`MODES`):

``exact``   the value as stored.
``ci``      case-insensitively (Unicode casefold).
``trim``    after trimming whitespace, case-insensitively ('Aberdeen' -> 'Aberdeen ').
``accent``  after folding accents too, case-insensitively ('Sao Paulo' -> 'São Paulo'); asked by name
            only (not one of :data:`MODES`, which the repair search tries in turn).
``plural``  singular/plural forms of each word, case-insensitively ('dogs' -> 'Dog').
``prefix``  an abbreviation: a prefix of the value or the initials of its words
            ('F' -> 'Female', 'USA' -> 'United States of America').
``approx``  approximately (rapidfuzz token_sort_ratio: edit similarity of the sorted words, 0-100).

Every lookup but ``approx`` is a dictionary or bisect lookup; ``approx`` scans
one column (or all values, for :meth:`ValueIndex.search`) with rapidfuzz.

**Big tables** (more than :data:`LAZY_ROWS` rows) are not read when the index is built: reading every
column's distinct values would scan the table once per column. Their columns are read one at a time,
the first time a lookup asks for that column (:meth:`ValueIndex.bind` gives the connection that reads
it), under a work limit of :data:`COLUMN_LIMIT` seconds (SQLite counts it, so the same column gives
the same answer on any machine), and the column's values are kept in a sidecar file beside the index's
(:func:`column_file`), so the next process reads the file instead of the table. A column whose read
passes its limit keeps a *sample* instead and is partial: the rules then ask the engine, under their
own bounded probe, and say so in their trace. :meth:`ValueIndex.search` (a literal looked up in every
column) covers every small table's columns and each big column's sample, read when the index is built
(the first :data:`SAMPLE_ROWS` rows, or the server's statistics: PostgreSQL's ``pg_stats``), never the
columns read later, so its answer does not depend on which columns earlier corrections asked about.
"""

from __future__ import annotations

import bisect
import copy
import hashlib
import json
import os
import re
import threading
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz, process

from sqlmend.db.schema import relation_sql
from sqlmend.errors import ConfigError, QueryError, QueryTimeout
from sqlmend.paths import cache_dir
from sqlmend.sql.names import singular

from sqlmend.db.base import aside

if TYPE_CHECKING:
    from sqlmend.db.base import Database

#: Lookup modes, strict to loose.
MODES = ("exact", "ci", "trim", "plural", "prefix", "approx")
#: Modes asked only by name (a rule that needs them), never tried in turn with :data:`MODES`.
NAMED_MODES = ("accent",)
#: Bump when the cached file format or what is indexed changes (3: views, and relations of every schema).
INDEX_VERSION = 3
#: Distinct values read per column at most (a column with more is marked partial).
MAX_DISTINCT = 50_000
#: A table with more rows than this (3x Spider's largest) has its columns read lazily, one at a time
#: (see the module doc).
LAZY_ROWS = 200_000
#: Rows of a big table whose values make a column's sample (when the server keeps no statistics).
SAMPLE_ROWS = 20_000
#: The work limit of reading one big column's distinct values, in seconds of work (on SQLite
#: ``db.base.WORK_PER_SECOND`` units each); past it the column keeps its sample and is partial.
COLUMN_LIMIT = 8.0
#: Values longer than this are indexed for exact lookups only (free text, not categories).
MAX_FUZZY_LEN = 200

_WORD = re.compile(r"\w+", re.UNICODE)
#: Declared types of columns that hold no text (a big column of one is not sampled).
_NUMERIC_TYPE = re.compile(r"int|real|floa|doub|num|dec|bool|date|time|serial", re.IGNORECASE)


@dataclass(frozen=True)
class ValueMatch:
    """One stored value that matches a looked-up literal."""

    table: str
    column: str
    value: str
    mode: str  # the mode that found it (see MODES)
    score: float = 100.0  # rapidfuzz score for "approx", 100 otherwise


def _fold(value: str) -> str:
    return value.casefold()


def accent_key(value: str) -> str:
    """A value without accents, case-folded and trimmed ('São Paulo ' -> 'sao paulo').

    >>> accent_key("Zürich"), accent_key("Montréal"), accent_key("Ærø")
    ('zurich', 'montreal', 'ærø')
    """
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().strip()


def _plural_key(value: str) -> str:
    return " ".join(singular(w) for w in _WORD.findall(value.casefold()))


def _initials(value: str) -> str:
    words = _WORD.findall(value.casefold())
    return "".join(w[0] for w in words) if len(words) > 1 else ""


class _ColumnValues:
    """The lookup structures of one column's distinct text values.

    Exact and case-insensitive maps are built at once; the structures of the
    looser modes on the first lookup that needs them (most columns are never
    asked in those modes, and loading a cached index stays fast).
    """

    __slots__ = ("values", "exact", "ci", "trim", "_loose", "partial", "other", "bounded")

    def __init__(self, values: list[str], partial: bool = False, other: bool = False, bounded: str = "") -> None:
        self.values = values
        self.partial = partial
        self.other = other  # the column also holds values that are not text (numbers, blobs)
        self.bounded = bounded  # why only a sample of it is known ("" when it was read whole)
        self.exact = set(values)
        self.ci: dict[str, list[str]] = defaultdict(list)
        self.trim: dict[str, list[str]] = defaultdict(list)
        for v in values:
            folded = _fold(v)
            self.ci[folded].append(v)
            self.trim[folded.strip()].append(v)
        self._loose: _LooseValues | None = None

    @property
    def loose(self) -> _LooseValues:
        if self._loose is None:
            self._loose = _LooseValues([v for v in self.values if len(v) <= MAX_FUZZY_LEN])
        return self._loose

    def lookup(self, value: str, mode: str, limit: int, score_cutoff: float) -> list[tuple[str, float]]:
        folded = _fold(value)
        if mode == "exact":
            return [(value, 100.0)] if value in self.exact else []
        if mode == "ci":
            found = self.ci.get(folded, [])
        elif mode == "trim":
            found = self.trim.get(folded.strip(), [])
        elif mode == "plural":
            found = self.loose.plural.get(_plural_key(value), []) if folded.strip() else []
        elif mode == "prefix":
            found = self.loose.prefixed(folded.strip(), limit)
        elif mode == "accent":
            found = self.loose.accent.get(accent_key(value), []) if folded.strip() else []
        elif mode == "approx":
            loose = self.loose
            hits = process.extract(folded, loose.folded, scorer=fuzz.token_sort_ratio,
                                   limit=limit, score_cutoff=score_cutoff)
            return [(loose.values[i], float(score)) for _, score, i in hits]
        else:
            raise ConfigError(f"unknown match mode {mode!r}; one of {', '.join(MODES + NAMED_MODES)}")
        return [(v, 100.0) for v in found[:limit]]



class _LooseValues:
    """Plural keys, initials, a sorted case-folded list and the fuzzy-match list of one column."""

    __slots__ = ("values", "folded", "plural", "initials", "sorted_ci", "_accent")

    def __init__(self, values: list[str]) -> None:
        self.values = values
        self.folded = [_fold(v) for v in values]
        self.plural: dict[str, list[str]] = defaultdict(list)
        self.initials: dict[str, list[str]] = defaultdict(list)
        for v in values:
            self.plural[_plural_key(v)].append(v)
            initials = _initials(v)
            if initials:
                self.initials[initials].append(v)
        self.sorted_ci = sorted(zip(self.folded, values))
        self._accent: dict[str, list[str]] | None = None

    @property
    def accent(self) -> dict[str, list[str]]:
        """Values by :func:`accent_key` (built on first use)."""
        if self._accent is None:
            accent: dict[str, list[str]] = defaultdict(list)
            for v in self.values:
                accent[accent_key(v)].append(v)
            self._accent = dict(accent)
        return self._accent

    def prefixed(self, prefix: str, limit: int) -> list[str]:
        """Values whose initials are ``prefix``, then values starting with it (case-folded)."""
        if not prefix:
            return []
        found = list(self.initials.get(prefix, []))
        i = bisect.bisect_left(self.sorted_ci, (prefix, ""))
        while i < len(self.sorted_ci) and len(found) < limit and self.sorted_ci[i][0].startswith(prefix):
            if self.sorted_ci[i][1] not in found:
                found.append(self.sorted_ci[i][1])
            i += 1
        return found[:limit]


class _Part:
    """What an index holds of some relations: the text values of each column, the partial ones, those that
    hold other values too, and the big tables' samples (:meth:`ValueIndex.build`, :meth:`ValueIndex.for_tables`)."""

    def __init__(self) -> None:
        self.columns: dict[tuple[str, str], list[str]] = {}
        self.partial: set[tuple[str, str]] = set()
        self.other: set[tuple[str, str]] = set()
        self.lazy: dict[tuple[str, str], list[Any]] = {}

    def read(self, db: Database, table: Any, max_distinct: int, timeout: float,
             read: dict[tuple[str, str], list[tuple]]) -> None:
        """Add one relation's columns: a big table's samples (its columns read on first use), else each
        column's distinct values (from ``read`` when a batch read them). A column whose read fails or times
        out is left out (its values are unknown, not empty)."""
        big = (table.row_count or 0) > LAZY_ROWS
        for column in table.columns:
            if big:  # numbers need no sample: searches look for text
                self.lazy[(table.name, column.name)] = ([] if _NUMERIC_TYPE.search(column.type or "")
                                                        else _sample(db, table.name, column.name, timeout))
                continue
            rows = read.get((table.name, column.name))
            if rows is None:
                try:
                    rows = _distinct(db, table.name, column.name, max_distinct, timeout)
                except (QueryError, QueryTimeout):
                    continue
            values = [r[0] for r in rows if isinstance(r[0], str)]
            if len(values) < len(rows):
                self.other.add((table.name, column.name))
            if len(rows) > max_distinct:
                self.partial.add((table.name, column.name))
                values = values[:max_distinct]
            if values:
                self.columns[(table.name, column.name)] = values

    def merge(self, other: _Part) -> None:
        self.columns.update(other.columns)
        self.partial |= other.partial
        self.other |= other.other
        self.lazy.update(other.lazy)

    def save(self, path: Path) -> None:
        try:
            _write_json(path, {"version": INDEX_VERSION,
                               "columns": [[t, c, v, (t, c) in self.partial, (t, c) in self.other]
                                           for (t, c), v in self.columns.items()],
                               "lazy": [[t, c, _jsonable(v)] for (t, c), v in self.lazy.items()]})
        except OSError:
            pass  # a disk that refuses keeps nothing: the relation is read again next time

    @classmethod
    def load(cls, path: Path) -> _Part | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != INDEX_VERSION:
                return None
            part = cls()
            for t, c, values, partial, other in data["columns"]:
                part.columns[(t, c)] = values
                if partial:
                    part.partial.add((t, c))
                if other:
                    part.other.add((t, c))
            part.lazy = {(t, c): sample for t, c, sample in data["lazy"]}
            return part
        except (OSError, ValueError, KeyError, TypeError):
            return None


class ValueIndex:
    """The distinct text values of every column of one database.

    Build it with :meth:`build` (or get it from ``Database.value_index()``, which
    uses the disk cache). Table and column names are case-insensitive.

    Args:
        columns: ``{(table, column): [distinct text values]}`` with stored spellings.
        partial: the ``(table, column)`` pairs that had more than :data:`MAX_DISTINCT` values.
        build_seconds: how long reading the values took.
        lazy: the columns of big tables, read on first use: ``{(table, column): sample}`` (the sample
            :meth:`search` covers; see the module doc).
        other: the ``(table, column)`` pairs that also hold values that are not text.
        key: the database's cache key (names the sidecar files of lazily read columns).
    """

    def __init__(self, columns: dict[tuple[str, str], list[str]],
                 partial: set[tuple[str, str]] | None = None, build_seconds: float = 0.0,
                 lazy: dict[tuple[str, str], list[Any]] | None = None,
                 other: set[tuple[str, str]] | None = None, key: str | None = None) -> None:
        partial, other = partial or set(), other or set()
        self.build_seconds = build_seconds
        self.from_cache = False
        self.key = key
        self._db: Database | None = None  # the connection that reads lazy columns (:meth:`bind`)
        self._columns: dict[tuple[str, str], _ColumnValues] = {}
        self._names: dict[tuple[str, str], tuple[str, str]] = {}
        for (table, column), values in columns.items():
            k = (table.lower(), column.lower())
            self._names[k] = (table, column)
            self._columns[k] = _ColumnValues(values, partial=(table, column) in partial,
                                             other=(table, column) in other)
        # lazy columns: their samples (as read, all types) until read whole
        self._lazy: dict[tuple[str, str], list[Any]] = {}
        for (table, column), sample in (lazy or {}).items():
            k = (table.lower(), column.lower())
            self._names[k] = (table, column)
            self._lazy[k] = sample
        # what every bound view shares: loaded lazy columns, the cross-column structures, locks
        self._shared: dict[str, Any] = {"lock": threading.Lock(), "loading": {}, "heads": {}}
        self._searchable = {k: c for k, c in self._columns.items()}
        for k, sample in self._lazy.items():
            texts = [v for v in sample if isinstance(v, str)]
            if texts:
                self._searchable[k] = _ColumnValues(texts, partial=True)

    def bind(self, db: Database) -> ValueIndex:
        """A view of this index that reads its lazy columns through ``db`` (one connection, one thread).

        Views share everything they read: a column one view read is there for all.
        """
        view = copy.copy(self)
        view._db = db
        return view

    # --- building and caching --------------------------------------------

    @classmethod
    def build(cls, db: Database, max_distinct: int = MAX_DISTINCT, timeout: float = 60.0) -> ValueIndex:
        """Read the distinct text values of every column of ``db`` (a big table's: a sample, see the
        module doc).

        A column whose read fails or times out is left out (its values are
        unknown, not empty); the others are still indexed.

        Args:
            db: an open database.
            max_distinct: distinct values read per column at most.
            timeout: seconds allowed per column.

        Returns:
            The index.
        """
        start = time.perf_counter()
        tables = db.schema().tables
        small = [(t.name, c.name) for t in tables if (t.row_count or 0) <= LAZY_ROWS for c in t.columns]
        read = _distinct_many(db, small, max_distinct, timeout) if db.round_trips else {}
        part = _Part()
        for table in tables:
            part.read(db, table, max_distinct, timeout, read)
        return cls(part.columns, part.partial, build_seconds=time.perf_counter() - start, lazy=part.lazy,
                   other=part.other, key=db.cache_key())

    @classmethod
    def for_tables(cls, db: Database, tables: list[Any], rebuild: bool = False) -> ValueIndex:
        """The index of ``tables`` alone (an item's scope in a big catalogue: ``Database.scoped``): each
        relation's values read as :meth:`build` reads them, once per database version in this process and
        kept on disk beside the index's files (:func:`relation_file`), so that the cost follows the
        relations an item reads, not the catalogue.

        Args:
            db: an open database.
            tables: the relations (with their row counts).
            rebuild: read each relation again.
        """
        from sqlmend.db.base import RELATIONS

        start = time.perf_counter()
        key = db.cache_key()
        whole = _Part()
        for table in tables:
            name = f"{key}|{table.name}" if key else None
            part = None if rebuild or name is None else RELATIONS.get("relvalues", name)
            if part is None:
                path = relation_file(key, table.name) if key else None
                part = None if rebuild or path is None else _Part.load(path)
                if part is None:
                    part = _Part()
                    cols = [(table.name, c.name) for c in table.columns]
                    read = _distinct_many(db, cols, MAX_DISTINCT, 60.0) \
                        if db.round_trips and (table.row_count or 0) <= LAZY_ROWS else {}
                    part.read(db, table, MAX_DISTINCT, 60.0, read)
                    if path is not None:
                        part.save(path)
                RELATIONS.put("relvalues", name, part)
            whole.merge(part)
        return cls(whole.columns, whole.partial, build_seconds=time.perf_counter() - start, lazy=whole.lazy,
                   other=whole.other, key=key)

    @classmethod
    def for_database(cls, db: Database, rebuild: bool = False) -> ValueIndex:
        """Load the index of ``db`` from the disk cache, or build it and store it there.

        Args:
            db: an open database; its ``cache_key()`` names the cache file (no
                key: built in memory every time).
            rebuild: build again even when a cached index exists.

        Returns:
            The index; ``from_cache`` says whether it came from disk.
        """
        key = db.cache_key()
        path = cache_file(key) if key else None
        if path is not None and path.exists() and not rebuild:
            try:
                index = cls.load(path)
                index.from_cache = True
                index.key = key
                return index
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged cache file is rebuilt
        index = cls.build(db)
        if path is not None:
            index.save(path, key)
        return index

    def save(self, path: Path, key: str = "") -> None:
        """Write the index to ``path`` as JSON (atomically).

        Args:
            path: the cache file.
            key: the database's cache key, stored for checking.
        """
        data = {
            "version": INDEX_VERSION,
            "key": key,
            "build_seconds": self.build_seconds,
            "columns": [[*self._names[k], c.values, c.partial, c.other] for k, c in self._columns.items()],
            "lazy": [[*self._names[k], _jsonable(sample)] for k, sample in self._lazy.items()],
        }
        _write_json(path, data)

    @classmethod
    def load(cls, path: Path) -> ValueIndex:
        """Read an index written by :meth:`save`.

        Args:
            path: the cache file.

        Returns:
            The index.

        Raises:
            ValueError: the file is not an index of this version.
        """
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != INDEX_VERSION:
            raise ValueError(f"{path}: value index version {data.get('version')} != {INDEX_VERSION}")
        columns = {(t, c): values for t, c, values, _, _ in data["columns"]}
        partial = {(t, c) for t, c, _, p, _ in data["columns"] if p}
        other = {(t, c) for t, c, _, _, o in data["columns"] if o}
        lazy = {(t, c): sample for t, c, sample in data.get("lazy", [])}
        return cls(columns, partial, build_seconds=float(data.get("build_seconds", 0.0)), lazy=lazy, other=other,
                   key=data.get("key"))

    # --- big tables: one column at a time ---------------------------------

    def lazy(self, table: str, column: str) -> bool:
        """Whether the column belongs to a big table (read on first use, see the module doc)."""
        return (table.lower(), column.lower()) in self._lazy

    def bounded(self, table: str, column: str) -> str:
        """Why only a sample of the column is known ("" when it was read whole or is not indexed);
        reads a lazy column first."""
        col = self._col(table, column)
        return col.bounded if col is not None else ""

    def head(self, table: str, column: str, limit: int = 50) -> list[Any] | None:
        """A big column's first ``limit`` distinct values of any type as its read returned them (its
        sample's when the read was bounded); None for a column of a small table (ask the engine)."""
        k = (table.lower(), column.lower())
        if k not in self._lazy:
            return None
        self._col(table, column)
        return list(self._shared["heads"].get(k, self._lazy[k]))[:limit]

    def _col(self, table: str, column: str) -> _ColumnValues | None:
        k = (table.lower(), column.lower())
        if k not in self._lazy:
            return self._columns.get(k)
        with self._shared["lock"]:
            loaded = self._shared.get(("col", k))
            if loaded is not None:
                return loaded or None
            lock = self._shared["loading"].setdefault(k, threading.Lock())
        with lock:  # one reader per column; the others wait for it
            loaded = self._shared.get(("col", k))
            if loaded is None:
                loaded = self._read_column(k)
                if loaded is not None:
                    with self._shared["lock"]:
                        self._shared[("col", k)] = loaded
        return loaded or None

    def _read_column(self, k: tuple[str, str]) -> _ColumnValues | bool | None:
        """A lazy column's values: from its sidecar file, else read through the bound connection
        (False: it holds no text; None: not read now, no connection)."""
        table, column = self._names[k]
        path = column_file(self.key, table, column) if self.key else None
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                return self._column_of(k, data["values"], data["partial"], data["other"], data["bounded"],
                                       data["head"])
            except (OSError, ValueError, KeyError, TypeError):
                pass
        db = self._db
        if db is None:
            return None
        bounded = ""
        try:
            with aside(db):  # read once for every later item: its own work limit bounds it
                rows = _distinct(db, table, column, MAX_DISTINCT, COLUMN_LIMIT)
        except QueryTimeout as exc:
            rows = None
            bounded = (f"{table}.{column}: its distinct values were not all read within {COLUMN_LIMIT:g}s of work "
                       f"({type(exc).__name__}); a sample of {len(self._lazy[k])} values stands for them")
        except QueryError:
            return False
        if rows is None:
            values, other, partial, head = self._lazy[k], False, True, self._lazy[k]
        else:
            values = [r[0] for r in rows]
            other, partial, head = any(not isinstance(v, str) for v in values), len(rows) > MAX_DISTINCT, values[:50]
            values = values[:MAX_DISTINCT]
        texts = [v for v in values if isinstance(v, str)]
        if path is not None and (rows is not None or db.last_work() is not None):  # a bound by the clock is not kept
            try:
                _write_json(path, {"values": texts, "partial": partial, "other": other, "bounded": bounded,
                                   "head": _jsonable(head)})
            except OSError:
                pass
        return self._column_of(k, texts, partial, other, bounded, head)

    def _column_of(self, k: tuple[str, str], texts: list[str], partial: bool, other: bool, bounded: str,
                   head: list[Any]) -> _ColumnValues | bool:
        self._shared["heads"][k] = head
        if not texts:
            return False
        return _ColumnValues(texts, partial=partial or bool(bounded), other=other, bounded=bounded)

    # --- lookups ------------------------------------------------------------

    def columns(self) -> list[tuple[str, str]]:
        """Return the indexed ``(table, column)`` pairs (columns holding text values; a big table's
        columns, all of them, read on first use)."""
        return list(self._names.values())

    def values(self, table: str, column: str) -> list[str]:
        """Return the distinct text values of one column ([] when it holds none).

        Args:
            table: table name (any case).
            column: column name (any case).

        Returns:
            The values in the order the engine returned them.
        """
        col = self._col(table, column)
        return list(col.values) if col else []

    def size(self, table: str, column: str) -> int:
        """How many distinct text values the index holds for one column (no copy of them)."""
        col = self._col(table, column)
        return len(col.values) if col else 0

    def stored(self, table: str, column: str) -> tuple[str, ...] | list[str]:
        """The distinct text values of one column, not copied: read them, never change them."""
        col = self._col(table, column)
        return col.values if col else ()

    def is_partial(self, table: str, column: str) -> bool:
        """Return whether the column had more distinct values than were indexed (or a big column's read
        was bounded: :meth:`bounded`)."""
        col = self._col(table, column)
        return bool(col and col.partial)

    def contains(self, table: str, column: str, value: str) -> bool:
        """Return whether ``value`` is stored, exactly, in ``table.column``.

        Args:
            table: table name (any case).
            column: column name (any case).
            value: the literal.

        Returns:
            True when the column stores exactly this text.
        """
        col = self._col(table, column)
        return bool(col) and value in col.exact

    def find(self, table: str, column: str, value: str, mode: str = "ci", limit: int = 5,
             score_cutoff: float = 80.0) -> list[str]:
        """Return the values stored in ``table.column`` that match ``value`` in one mode.

        Args:
            table: table name (any case).
            column: column name (any case).
            value: the literal compared with the column.
            mode: one of :data:`MODES`.
            limit: values returned at most.
            score_cutoff: for ``approx``, the lowest rapidfuzz score (0-100) kept.

        Returns:
            The stored variants, best first ([] for an unknown or non-text column).

        Raises:
            ConfigError: an unknown mode.
        """
        return [m.value for m in self.matches(table, column, value, modes=(mode,), limit=limit,
                                              score_cutoff=score_cutoff)]

    def matches(self, table: str, column: str, value: str, modes: tuple[str, ...] = MODES,
                limit: int = 5, score_cutoff: float = 80.0) -> list[ValueMatch]:
        """Return the stored values of one column that match ``value``, trying modes in order.

        A value found by a stricter mode is not repeated by a looser one.

        Args:
            table: table name (any case).
            column: column name (any case).
            value: the literal.
            modes: the modes to try, in order.
            limit: matches returned at most.
            score_cutoff: for ``approx``, the lowest rapidfuzz score kept.

        Returns:
            Matches with the mode that found each.

        Raises:
            ConfigError: an unknown mode.
        """
        col = self._col(table, column)
        if col is None:
            _check_modes(modes)
            return []
        t, c = self._names[(table.lower(), column.lower())]
        found: list[ValueMatch] = []
        seen: set[str] = set()
        for mode in modes:
            for v, score in col.lookup(value, mode, limit, score_cutoff):
                if v not in seen:
                    seen.add(v)
                    found.append(ValueMatch(t, c, v, mode, score))
            if len(found) >= limit:
                break
        return found[:limit]

    def search(self, value: str, mode: str = "ci", limit: int = 10,
               score_cutoff: float = 80.0) -> list[ValueMatch]:
        """Find ``value`` in every indexed column of the database.

        Args:
            value: the literal.
            mode: one of :data:`MODES`.
            limit: matches returned at most.
            score_cutoff: for ``approx``, the lowest rapidfuzz score kept.

        Returns:
            Matches (table, column, stored value), best first.
        """
        _check_modes((mode,))
        if mode == "approx":
            return self._search_approx(value, limit, score_cutoff)
        if mode in ("exact", "ci"):
            # one dictionary lookup over all columns
            hits = self._global().get(_fold(value), [])
            return [ValueMatch(t, c, v, mode) for t, c, v in hits
                    if mode == "ci" or v == value][:limit]
        if mode == "trim":  # the same, on the trimmed keys (columns in index order, as the loop below)
            self._global()
            return [ValueMatch(t, c, v, mode) for t, c, v in self._shared["trimmed"].get(_fold(value).strip(), [])
                    ][:limit]
        found: list[ValueMatch] = []
        for key, col in self._searchable.items():
            t, c = self._names[key]
            found.extend(ValueMatch(t, c, v, mode, s) for v, s in col.lookup(value, mode, limit, score_cutoff))
            if len(found) >= limit:
                break
        return found[:limit]

    def _global(self) -> dict[str, list[tuple[str, str, str]]]:
        shared = self._shared
        if "everywhere" not in shared:
            everywhere: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
            for key, col in self._searchable.items():
                t, c = self._names[key]
                for v in col.values:
                    everywhere[_fold(v)].append((t, c, v))
            trimmed: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
            for key, col in self._searchable.items():
                t, c = self._names[key]
                for k, vs in col.trim.items():
                    trimmed[k].extend((t, c, v) for v in vs)
            shared["trimmed"] = dict(trimmed)
            shared["all_values"] = [k for k in everywhere if len(k) <= MAX_FUZZY_LEN]
            shared["everywhere"] = dict(everywhere)
        return shared["everywhere"]

    def _search_approx(self, value: str, limit: int, score_cutoff: float) -> list[ValueMatch]:
        everywhere = self._global()
        hits = process.extract(_fold(value), self._shared["all_values"], scorer=fuzz.token_sort_ratio,
                               limit=limit, score_cutoff=score_cutoff)
        found = [ValueMatch(t, c, v, "approx", float(score))
                 for key, score, _ in hits for t, c, v in everywhere[key]]
        return found[:limit]

    # --- statistics -------------------------------------------------------

    def stats(self) -> dict[str, float | int | bool]:
        """Return sizes for reports: indexed columns, distinct values, partial columns, build time."""
        return {
            "columns": len(self._columns),
            "values": sum(len(c.values) for c in self._columns.values()),
            "partial_columns": sum(c.partial for c in self._columns.values()),
            "lazy_columns": len(self._lazy),
            "build_seconds": round(self.build_seconds, 4),
            "from_cache": self.from_cache,
        }


def cache_file(key: str) -> Path:
    """Return the cache file of a database's value index.

    Args:
        key: the database's cache key (``Database.cache_key()``).

    Returns:
        A path under ``cache_dir("values")`` named by a hash of the key.
    """
    digest = hashlib.sha256(f"{INDEX_VERSION}|{key}".encode()).hexdigest()[:32]
    return cache_dir("values") / f"{digest}.json"


def column_file(key: str, table: str, column: str) -> Path:
    """The sidecar file of one lazily read column of a database (beside :func:`cache_file`)."""
    digest = hashlib.sha256(f"{INDEX_VERSION}|{key}".encode()).hexdigest()[:32]
    name = hashlib.sha256(f"{table}\0{column}".encode()).hexdigest()[:24]
    folder = cache_dir("values") / f"{digest}.columns"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.json"


def relation_file(key: str, table: str) -> Path:
    """The file of one relation's values in an index read by scope (:meth:`ValueIndex.for_tables`)."""
    digest = hashlib.sha256(f"{INDEX_VERSION}|{key}".encode()).hexdigest()[:32]
    name = hashlib.sha256(table.encode()).hexdigest()[:24]
    folder = cache_dir("values") / f"{digest}.relations"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.json"


def _write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (one temporary name per process and thread: workers may write the same file)."""
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _jsonable(values: list[Any]) -> list[Any]:
    """Values a JSON file keeps (text and numbers; a blob's place dropped)."""
    return [v for v in values if isinstance(v, (str, int, float)) and not isinstance(v, bool)]


def _distinct(db: Database, table: str, column: str, max_distinct: int, timeout: float) -> list[tuple]:
    """A column's distinct non-null values, at most ``max_distinct + 1`` (more: the column is partial)."""
    c = db.quote(column)
    return db._query(f"SELECT DISTINCT {c} FROM {db.relation(table)} WHERE {c} IS NOT NULL LIMIT {max_distinct + 1}",
                     timeout=timeout)


#: Columns read by one query where a query costs a round trip (:func:`_distinct_many`).
COLUMNS_A_QUERY = 25


def _distinct_many(db: Database, columns: list[tuple[str, str]], max_distinct: int,
                   timeout: float) -> dict[tuple[str, str], list[tuple]]:
    """:func:`_distinct` of many columns, :data:`COLUMNS_A_QUERY` to a query: each column's distinct values
    in a result column of its own (its type kept), a branch of a UNION ALL each. A batch that fails is
    left out: its columns are read one at a time."""
    out: dict[tuple[str, str], list[tuple]] = {}
    for i in range(0, len(columns), COLUMNS_A_QUERY):
        batch = columns[i:i + COLUMNS_A_QUERY]
        branches = []
        # the first branch's other cells are NULLs of each column's own type (PostgreSQL types a UNION's
        # column from its branches two at a time: an untyped NULL there would be taken for text)
        typed = [f"(SELECT {db.quote(c)} FROM {db.relation(t)} WHERE 1 = 0)" for t, c in batch]
        for k, (t, c) in enumerate(batch):
            q = db.quote(c)
            cells = ", ".join(f"s.v AS v{j}" if j == k else f"{typed[j] if k == 0 else 'NULL'} AS v{j}"
                              for j in range(len(batch)))
            branches.append(f"SELECT {k} AS k, {cells} FROM (SELECT DISTINCT {q} AS v FROM {db.relation(t)} "
                            f"WHERE {q} IS NOT NULL LIMIT {max_distinct + 1}) AS s")
        try:
            rows = db._query(" UNION ALL ".join(branches), timeout=timeout,
                             max_rows=len(batch) * (max_distinct + 1))
        except (QueryError, QueryTimeout):
            continue
        found: dict[int, list[tuple]] = {k: [] for k in range(len(batch))}
        for row in rows:
            found[row[0]].append((row[1 + row[0]],))
        for k, key in enumerate(batch):
            out[key] = found[k]
    return out


def _sample(db: Database, table: str, column: str, timeout: float) -> list[Any]:
    """A big column's sample: the engine's own (:meth:`~sqlmend.db.base.Database.column_sample`), [] when
    it cannot be read."""
    try:
        return _jsonable(db.column_sample(table, column, SAMPLE_ROWS, timeout))
    except (QueryError, QueryTimeout):
        return []


def _check_modes(modes: tuple[str, ...]) -> None:
    for mode in modes:
        if mode not in MODES and mode not in NAMED_MODES:
            raise ConfigError(f"unknown match mode {mode!r}; one of {', '.join(MODES + NAMED_MODES)}")


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
"""

from __future__ import annotations

import bisect
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
from typing import TYPE_CHECKING

from rapidfuzz import fuzz, process

from sqlmend.errors import ConfigError, QueryError, QueryTimeout
from sqlmend.paths import cache_dir

if TYPE_CHECKING:
    from sqlmend.db.base import Database

#: Lookup modes, strict to loose.
MODES = ("exact", "ci", "trim", "plural", "prefix", "approx")
#: Modes asked only by name (a rule that needs them), never tried in turn with :data:`MODES`.
NAMED_MODES = ("accent",)
#: Bump when the cached file format or what is indexed changes.
INDEX_VERSION = 1
#: Distinct values read per column at most (a column with more is marked partial).
MAX_DISTINCT = 50_000
#: Values longer than this are indexed for exact lookups only (free text, not categories).
MAX_FUZZY_LEN = 200

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class ValueMatch:
    """One stored value that matches a looked-up literal."""

    table: str
    column: str
    value: str
    mode: str  # the mode that found it (see MODES)
    score: float = 100.0  # rapidfuzz score for "approx", 100 otherwise


def singular(word: str) -> str:
    """Return a crude English singular of a lower-case word ('cities' -> 'city', 'dogs' -> 'dog').

    Args:
        word: one lower-case word.

    Returns:
        The word without its plural ending; short words and '-ss'/'-us'/'-is' words unchanged.
    """
    if len(word) <= 3 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


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

    __slots__ = ("values", "exact", "ci", "trim", "_loose", "partial")

    def __init__(self, values: list[str], partial: bool = False) -> None:
        self.values = values
        self.partial = partial
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


class ValueIndex:
    """The distinct text values of every column of one database.

    Build it with :meth:`build` (or get it from ``Database.value_index()``, which
    uses the disk cache). Table and column names are case-insensitive.

    Args:
        columns: ``{(table, column): [distinct text values]}`` with stored spellings.
        partial: the ``(table, column)`` pairs that had more than :data:`MAX_DISTINCT` values.
        build_seconds: how long reading the values took.
    """

    def __init__(self, columns: dict[tuple[str, str], list[str]],
                 partial: set[tuple[str, str]] | None = None, build_seconds: float = 0.0) -> None:
        partial = partial or set()
        self.build_seconds = build_seconds
        self.from_cache = False
        self._columns: dict[tuple[str, str], _ColumnValues] = {}
        self._names: dict[tuple[str, str], tuple[str, str]] = {}
        for (table, column), values in columns.items():
            key = (table.lower(), column.lower())
            self._names[key] = (table, column)
            self._columns[key] = _ColumnValues(values, partial=(table, column) in partial)
        self._everywhere: dict[str, list[tuple[str, str, str]]] | None = None
        self._all_values: list[str] | None = None

    # --- building and caching --------------------------------------------

    @classmethod
    def build(cls, db: Database, max_distinct: int = MAX_DISTINCT, timeout: float = 60.0) -> ValueIndex:
        """Read the distinct text values of every column of ``db``.

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
        columns: dict[tuple[str, str], list[str]] = {}
        partial: set[tuple[str, str]] = set()
        for table in db.schema().tables:
            for column in table.columns:
                c = db.quote(column.name)
                sql = f"SELECT DISTINCT {c} FROM {db.quote(table.name)} WHERE {c} IS NOT NULL LIMIT {max_distinct + 1}"
                try:
                    rows = db._query(sql, timeout=timeout)
                except (QueryError, QueryTimeout):
                    continue
                values = [r[0] for r in rows if isinstance(r[0], str)]
                if len(rows) > max_distinct:
                    partial.add((table.name, column.name))
                    values = values[:max_distinct]
                if values:
                    columns[(table.name, column.name)] = values
        return cls(columns, partial, build_seconds=time.perf_counter() - start)

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
            "columns": [[*self._names[k], c.values, c.partial] for k, c in self._columns.items()],
        }
        # one temporary name per process and thread: two workers of a batch may save the same index
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

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
        columns = {(t, c): values for t, c, values, _ in data["columns"]}
        partial = {(t, c) for t, c, _, p in data["columns"] if p}
        return cls(columns, partial, build_seconds=float(data.get("build_seconds", 0.0)))

    # --- lookups ------------------------------------------------------------

    def columns(self) -> list[tuple[str, str]]:
        """Return the indexed ``(table, column)`` pairs (columns holding text values)."""
        return list(self._names.values())

    def values(self, table: str, column: str) -> list[str]:
        """Return the distinct text values of one column ([] when it holds none).

        Args:
            table: table name (any case).
            column: column name (any case).

        Returns:
            The values in the order the engine returned them.
        """
        col = self._columns.get((table.lower(), column.lower()))
        return list(col.values) if col else []

    def is_partial(self, table: str, column: str) -> bool:
        """Return whether the column had more distinct values than were indexed."""
        col = self._columns.get((table.lower(), column.lower()))
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
        col = self._columns.get((table.lower(), column.lower()))
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
        col = self._columns.get((table.lower(), column.lower()))
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
        found: list[ValueMatch] = []
        for key, col in self._columns.items():
            t, c = self._names[key]
            found.extend(ValueMatch(t, c, v, mode, s) for v, s in col.lookup(value, mode, limit, score_cutoff))
            if len(found) >= limit:
                break
        return found[:limit]

    def _global(self) -> dict[str, list[tuple[str, str, str]]]:
        if self._everywhere is None:
            everywhere: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
            for key, col in self._columns.items():
                t, c = self._names[key]
                for v in col.values:
                    everywhere[_fold(v)].append((t, c, v))
            self._everywhere = dict(everywhere)
            self._all_values = [k for k in self._everywhere if len(k) <= MAX_FUZZY_LEN]
        return self._everywhere

    def _search_approx(self, value: str, limit: int, score_cutoff: float) -> list[ValueMatch]:
        everywhere = self._global()
        hits = process.extract(_fold(value), self._all_values or [], scorer=fuzz.token_sort_ratio,
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


def _check_modes(modes: tuple[str, ...]) -> None:
    for mode in modes:
        if mode not in MODES and mode not in NAMED_MODES:
            raise ConfigError(f"unknown match mode {mode!r}; one of {', '.join(MODES + NAMED_MODES)}")


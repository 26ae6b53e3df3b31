"""The validate-or-retain guard (MIRA §3.3.3): keep a rewrite only when it is proven harmless to try.

Every stage of sqlmend that rewrites SQL passes its candidate through
:func:`validate`. The candidate is kept only if it

1. is non-empty,
2. differs from the input (ignoring whitespace),
3. parses as one read-only ``SELECT`` / ``WITH`` query (set operations included),
4. executes on the database within the time limit,
5. returns at least one column, and
6. returns a result different from the input's (a candidate with the same
   observed result is a no-op).

Otherwise the input is returned unchanged, and the verdict says why.

>>> from sqlmend.db import connect                      # doctest: +SKIP
>>> with connect("concert_singer.sqlite") as db:        # doctest: +SKIP
...     validate(db, "SELECT name FROM singer WHERE age = '52'",
...              "SELECT name FROM singer WHERE age = 52").accepted
True
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any

from sqlmend import sql
from sqlmend.sql import names
from sqlmend.sql.diff import dropped_clauses, dropped_names, identifiers, table_names
from sqlmend.sql.schema import as_mapping
from sqlmend.errors import QueryError, QueryTimeout, ReadOnlyViolation, SqlError
from sqlmend.types import ExecResult, GuardVerdict

#: The reasons of :func:`sqlmend.sql.names.match` that spell the name itself (not its words, its meaning, nor
#: a part of it: ``Years`` is the ``prefix`` reading of ``Song_release_year``).
SPELLING = ("case", "schema", "separators", "plural", "id", "edit")


def _squash(text: str) -> str:
    return " ".join(text.split()).rstrip(";").strip()


def read_only_problem(text: str, dialect: str = "sqlite", extra: frozenset[str] = frozenset()) -> str | None:
    """Say why a SQL text is not one read-only SELECT/WITH query, or return ``None`` if it is.

    Args:
        text: the SQL text.
        dialect: the sqlglot dialect to parse it with.
        extra: functions allowed beside the dialect's list (a function the list does not know is left
            to the database, which asks its engine).

    Returns:
        ``None`` for a single read-only query, else a short reason.
    """
    return _read_only_tree(text, dialect, extra)[1]


def _read_only_tree(text: str, dialect: str, extra: frozenset[str] = frozenset()) -> tuple[Any, str | None]:
    """Parse ``text`` once: ``(tree, None)`` for one read-only query, else ``(None, reason)``."""
    try:
        tree = sql.parse(text, dialect=dialect)  # refuses several statements
    except SqlError as exc:
        return None, f"does not parse as one statement: {exc}"
    try:
        sql.check_read_only_tree(tree, dialect, extra)
    except ReadOnlyViolation as exc:
        return None, f"is not a read-only SELECT/WITH query: {exc}"
    return tree, None


def _canon(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def same_result(a: ExecResult, b: ExecResult, ordered: bool = False) -> bool:
    """Return True when two results are observably the same.

    Rows are compared as multisets (``ordered=False``) or as sequences; the
    number of columns must match, column names do not matter.

    Args:
        a: one result.
        b: the other result.
        ordered: compare row order too (the query has a top-level ORDER BY).

    Returns:
        Whether the results are the same.
    """
    if len(a.columns) != len(b.columns):
        return False
    rows_a = [tuple(_canon(v) for v in r) for r in a.rows]
    rows_b = [tuple(_canon(v) for v in r) for r in b.rows]
    if ordered:
        return rows_a == rows_b
    try:
        return Counter(rows_a) == Counter(rows_b)
    except TypeError:  # unhashable values
        return sorted(map(repr, rows_a)) == sorted(map(repr, rows_b))


def validate(
    db: Any,
    original_sql: str,
    candidate_sql: str | None,
    timeout: float = 30.0,
    *,
    max_rows: int = 10_000,
    original_result: ExecResult | None = None,
    original_error: str | None = None,
) -> GuardVerdict:
    """Decide whether a candidate rewrite replaces the input (validate-or-retain, MIRA §3.3.3).

    Args:
        db: an open database (``sqlmend.db.connect``): ``dialect`` and ``execute``.
        original_sql: the SQL the stage received.
        candidate_sql: the rewrite it proposes.
        timeout: seconds each query may run.
        max_rows: row cap for each execution.
        original_result: the input's result when the caller already has it.
        original_error: why the input failed to execute, when the caller already knows.

    Returns:
        A :class:`~sqlmend.types.GuardVerdict`: ``accepted`` with the candidate
        as ``sql``, or rejected with the input as ``sql`` and the reason.
    """

    def reject(reason: str) -> GuardVerdict:
        return GuardVerdict(accepted=False, reason=reason, sql=original_sql)

    if candidate_sql is None or not candidate_sql.strip():
        return reject("empty candidate")
    if _squash(candidate_sql) == _squash(original_sql):
        return reject("candidate identical to input")
    dialect = getattr(db, "dialect", "sqlite")
    tree, problem = _read_only_tree(candidate_sql, dialect, getattr(db, "allow_functions", frozenset()))
    if problem:
        return reject(f"candidate {problem}")
    try:
        cand = db.execute(candidate_sql, timeout=timeout, max_rows=max_rows)
    except QueryTimeout:
        return reject(f"candidate timed out after {timeout:g} s")
    except ReadOnlyViolation as exc:
        return reject(f"candidate refused as not read-only: {exc}")
    except QueryError as exc:
        return reject(f"candidate failed: {exc.engine_message}")
    if not cand.columns:
        return reject("candidate returns no columns")

    if original_result is None and original_error is None:
        try:
            original_result = db.execute(original_sql, timeout=timeout, max_rows=max_rows)
        except (QueryTimeout, QueryError, ReadOnlyViolation) as exc:
            original_error = str(exc) or type(exc).__name__
    if original_result is None:
        return GuardVerdict(True, f"accepted: input failed ({original_error}), candidate executes",
                            candidate_sql)
    if same_result(original_result, cand, ordered=tree.args.get("order") is not None):
        return reject("result unchanged (no-op)")
    return GuardVerdict(True, "accepted: candidate executes and changes the result", candidate_sql)


# --- the second law ----------------------------------------------------------------------------


def _sources(select: Any, mapping: Any = None) -> dict[str, str | None]:
    """``{alias or name: table}`` of one SELECT's FROM/JOIN (lower case; the table by its key in
    ``mapping``, ``sql.schema.table_key``; None for a derived table)."""
    out: dict[str, str | None] = {}
    frm = select.args.get("from_") or select.args.get("from")
    for node in ([frm.this] if frm is not None else []) + [j.this for j in select.args.get("joins") or []]:
        if isinstance(node, sql.ast.Table) and node.name:
            out[node.alias_or_name.lower()] = sql.table_key(node, mapping).lower()
        elif node is not None:
            out[(node.alias_or_name or "").lower()] = None
    return out


def _unresolved(text: str, schema: Any, dialect: str) -> tuple[list[str], list[str], list[str]]:
    """``(tables, columns, qualifiers)`` of a query (lower case): the tables it reads that the schema does
    not have; the columns that the tables of their own SELECT do not have (of their qualifier's table
    when qualified); the schema tables it qualifies a column with but does not read."""
    try:
        tree = sql.parse(text, dialect)
    except SqlError:
        return [], [], []
    known = {t.name.lower(): {c.name.lower() for c in t.columns} for t in schema.tables}
    mapping = as_mapping(schema)
    tables = [t for t in table_names(text, dialect, schema) if t not in known]
    derived = {s.alias_or_name.lower() for s in tree.find_all(sql.ast.Alias)} | \
              {c.alias_or_name.lower() for c in tree.find_all(sql.ast.CTE)}
    columns, qualifiers = set(), set()
    for col in tree.find_all(sql.ast.Column):
        name = col.name.lower()
        if not name or name in derived:
            continue
        chain, select = [], col.find_ancestor(sql.ast.Select)
        while select is not None:
            chain.append(_sources(select, mapping))
            select = select.find_ancestor(sql.ast.Select)
        if col.table:
            q = col.table.lower()
            table = next((s[q] for s in chain if q in s), q if q in known else None)
            if not any(q in s for s in chain) and q in known:
                qualifiers.add(q)
            if table in known and name not in known[table]:
                columns.add(name)
        elif chain and all(t in known for t in chain[0].values()) and \
                not any(name in known[t] for t in chain[0].values()):
            columns.add(name)
    return tables, sorted(columns), sorted(qualifiers)


def _linked(a: str, b: str, schema: Any) -> bool:
    """Whether a foreign key links tables ``a`` and ``b`` (either way)."""
    return any({fk.table.lower(), fk.ref_table.lower()} == {a, b} for fk in schema.foreign_keys)


class SecondLaw:
    """The second law for rewrites of one query the engine refuses: never turn a visible error into a
    silent wrong answer. A repair of a failing query may rename what does not exist, requalify, add what
    the engine needs; it may not answer another question. So a rewrite must

    1. keep what the question names (:func:`sqlmend.sql.diff.dropped_names`: a quoted value or number
       the question holds, a column whose name the question spells, in that spelling or another that
       :mod:`sqlmend.sql.names` matches, as a rename writes it);
    2. drop no clause the query had (:func:`sqlmend.sql.diff.dropped_clauses`: a WHERE/HAVING
       predicate, a projected column, a GROUP BY / ORDER BY item, HAVING, LIMIT, a join, a subquery; and
       each SELECT keeps its joins: none moved to another side of an INTERSECT);
    3. add no table, except one that holds a column the query names and its tables do not have (the
       join a ``no such column`` asks for), or one whose name matches a table the schema does not have
       (a rename);
    4. keep every column the query reads that exists, every time it reads it (the names the schema lacks
       are what a repair mends; ``semester_id`` read as ``degree_program_id`` beside the rename of a
       ``term_id`` answers another question);
    5. join no schema the query does not name (:func:`joined_schemas`; every rewrite keeps that, failing
       query or not);
    6. join a table on the column that joins it where the table has one: a join condition the repair
       writes anew pairs columns a foreign key links, or else its new column's table has none that a key
       links to the other side (``ship.id = death.id`` for ``caused_by_boat_id``, where the key is
       ``death.caused_by_ship_id``); without a key, one of the other side's name where the table has it
       (``has_pet.petid = pets.pet_age`` for ``T3.AnimalID``, where ``pets.petid`` is);
    7. read no column it already reads once more for a name the schema lacks, nor one column for two such
       names, unless the name is its spelling (``ORDER BY Years`` is not ``song_release_year`` where the query
       selects it; ``Name_Title`` and ``Teacher_ID_Name`` are not both ``Name``; ``Contry`` may be the
       ``Country`` it selects).

    The caller decides when it applies: the pipeline, to a rewrite of a query the engine refuses from any
    stage unless a strict rule's fixes are that rewrite (``pipeline.run_stages``); the search, to choose
    among its candidates for such a query. The query's own parts are read once.

    Args:
        db: the open database (its ``schema()`` and ``dialect``).
        original_sql: the query the engine refuses.
        question: the question (nothing is named without one).
    """

    def __init__(self, db: Any, original_sql: str, question: str = ""):
        self.db, self.original, self.question = db, original_sql, question
        self.dialect = getattr(db, "dialect", "sqlite")
        self.tables = set(table_names(original_sql, self.dialect, db.schema()))

    def check(self, candidate_sql: str) -> str | None:
        """Why ``candidate_sql`` breaks the second law (see the class doc), or ``None`` when it keeps it."""
        dropped = [n for n in dropped_names(self.original, candidate_sql, self.question, self.dialect)
                   if not _spelled(n, candidate_sql, self.dialect)]
        if dropped:
            return f"it drops what the question names ({', '.join(dropped)})"
        clauses = dropped_clauses(self.original, candidate_sql, self.dialect)
        if clauses:
            return f"it drops part of the query: {'; '.join(clauses)}"
        written = table_names(candidate_sql, self.dialect, self.db.schema())
        added = [t for t in written if t not in self.tables]
        unrelated = self._unrelated(added, len(written))
        if unrelated:
            return f"it adds a table the query does not ask for ({', '.join(unrelated)})"
        after = _features(candidate_sql, self.db.schema(), self.dialect)
        moved = self._moved(after)
        if moved:
            return f"it drops part of the query: {moved}"
        changed = self._changed(after)
        if changed:
            return f"it changes a column the query reads that exists ({', '.join(changed)})"
        doubled = self._doubled(after)
        if doubled:
            return (f"it reads {', '.join(doubled)} where the query already reads it, for a name that is not "
                    f"its spelling")
        unjoined = self._unjoined(after)
        if unjoined:
            return f"it joins on a column that does not join ({unjoined})"
        return joined_schemas(self.db, self.original, candidate_sql)

    @cached_property
    def _query(self) -> Any:
        """:func:`_features` of the query (None when it does not parse), read once."""
        return _features(self.original, self.db.schema(), self.dialect)

    @cached_property
    def _unknown(self) -> tuple[list[str], list[str], list[str]]:
        """The query's tables, columns and qualifiers the schema lacks (:func:`_unresolved`), read once."""
        return _unresolved(self.original, self.db.schema(), self.dialect)

    def _changed(self, after: Any) -> list[str]:
        """The columns the query reads that exist (a column of a table it reads that the schema has, read as
        written) and the candidate reads fewer times from the same table: a repair mends the names the schema
        lacks, not the ones it has. A column read without a table it can be told (an ambiguous bare name: the
        query's, which the engine refuses, or the candidate's) counts for the same name of any table."""
        before = self._query
        if before is None or after is None:
            return []
        schema = self.db.schema()
        unknown = set(self._unknown[1])
        held = {k.lower(): {c.name.lower() for c in t.columns}
                for k, t in ((k, schema.table(k)) for k in self.tables) if t is not None}
        kept: Counter = Counter()
        for ref in before.all_columns():
            name, table = ref.column.lower(), (ref.table or "").lower()
            if name not in unknown and name in held.get(table, ()):
                # a bare name two of the query's tables hold: the engine refused it as ambiguous, any of them
                # may be meant
                kept[("?" if _ambiguous(ref, before, schema) else table, name)] += 1
        read = Counter(((ref.table or "").lower(), ref.column.lower()) for ref in after.all_columns())
        bare = Counter(ref.column.lower() for ref in after.all_columns() if not ref.table)
        total = Counter(ref.column.lower() for ref in after.all_columns())
        changed = set()
        for (table, name), k in kept.items():
            if table == "?":
                if total[name] < sum(v for (_, n), v in kept.items() if n == name):
                    changed.add(name)
                continue
            short = k - read[(table, name)]
            if short > 0:
                used = min(short, bare[name])
                bare[name] -= used
                if short > used:
                    changed.add(f"{table}.{name}")
        return sorted(changed)

    def _moved(self, after: Any) -> str | None:
        """A SELECT of the query that the candidate gives fewer joins, the query's SELECTs being as many (a
        join moved from one side of an INTERSECT to the other keeps the count that rule 2 reads); or None."""
        before = self._query
        if before is None or after is None or len(before.selects) != len(after.selects):
            return None
        had, now = Counter(j.scope for j in before.joins), Counter(j.scope for j in after.joins)
        short = [n for n, k in had.items() if now[n] < k]
        return "a join of one of its SELECTs (moved to another, or gone)" if short else None

    def _doubled(self, after: Any) -> list[str]:
        """The columns the candidate reads more often than the query (a join condition it writes anew aside) for
        names no table has that do not spell them (see the class doc, 7): one the query already reads as
        written, or one read in place of two of those names. A column of a table the schema lacks counts for
        its name in any table."""
        before = self._query
        if before is None or after is None:
            return []
        schema = self.db.schema()
        held = {c.name.lower() for t in schema.tables for c in t.columns}
        known_tables: dict[str, bool] = {}

        def key(table: str | None) -> str:
            k = (table or "").lower()
            if k not in known_tables:
                known_tables[k] = bool(k) and schema.table(k) is not None
            return k if known_tables[k] else "?"

        pairs = _pairs(before)
        new_on = {id(c) for j in after.joins if j.on is not None and not _pairs_of(j) <= pairs
                  for c in j.on.find_all(sql.ast.Column)}

        def reads(features: Any, skip: set[int], query: bool = False) -> Counter:
            return Counter(("?" if query and _ambiguous(r, features, schema) else key(r.table), r.column.lower())
                           for r in features.all_columns() if r.clause != "from" and id(r.node) not in skip)

        had, now = reads(before, set(), query=True), reads(after, new_on)
        unknown = {n for (_, n) in had if n not in held}
        if not unknown:  # a repair of something else (a GROUP BY PostgreSQL asks for) may read a column again
            return []
        most = max((k for (_, n), k in had.items() if n in unknown), default=0)
        out = []
        for (table, name), k in now.items():
            if name in unknown or any(m.reason in SPELLING for u in unknown for m in names.match(u, [name])):
                continue
            known = had[(table, name)] + had[("?", name)]
            if (known and k > known) or (not known and k > most):
                out.append(f"{table}.{name}" if table != "?" else name)
        return sorted(out)

    def _unjoined(self, after: Any) -> str | None:
        """A join condition the candidate writes anew on a column that joins nothing where its table has one
        that would (see the class doc, 6), as text; or None."""
        before = self._query
        if before is None or after is None:
            return None
        schema = self.db.schema()
        had = _pairs(before)
        read = {f"{(r.table or '').lower()}.{r.column.lower()}" for r in before.all_columns()}
        for join in after.joins:
            for a, b in ((x.lower(), y.lower()) for x, y in join.pairs):
                if tuple(sorted((a, b))) in had or _linked_columns(a, b, schema):
                    continue
                for mine, other in ((a, b), (b, a)):
                    if mine in read or "." not in mine or "." not in other:
                        continue
                    (owner, name), theirs = mine.rsplit(".", 1), other.rsplit(".", 1)[1]
                    table = schema.table(owner)
                    if table is None:
                        continue
                    columns = [c.name for c in table.columns]
                    better = [c for c in columns if _linked_columns(f"{owner}.{c.lower()}", other, schema)]
                    if not better and name != theirs:
                        better = [c for c in columns if c.lower() == theirs]
                    if better:
                        return f"{a} = {b}, where {owner}.{better[0]} would"
        return None

    def _unrelated(self, added: list[str], count: int | None = None) -> list[str]:
        """The tables of ``added`` the query does not ask for: not a rename of a table the schema does not
        have (one that matches its name, or, by meaning, one in its place: as many tables or fewer, no
        more added than the query has unknown), not a table it qualifies a column with, not one holding a
        column the query names that its tables lack, nor a table a foreign key links to the query and to
        such a table (a bridge)."""
        if not added:
            return []
        schema = self.db.schema()
        tables, columns, qualifiers = self._unknown
        if tables and count is not None and count <= len(self.tables) and len(added) <= len(tables):
            return []  # each takes the place of a table the schema does not have
        owned = {t.name.lower(): [c.name for c in t.columns] for t in schema.tables}
        asked = {t for t in added
                 if t in qualifiers or any(names.match(u, [t]) for u in tables)
                 or any(names.match(c, owned.get(t, [])) for c in columns)}
        bridges = {t for t in added if t not in asked
                   and any(_linked(t, a, schema) for a in asked) and any(_linked(t, q, schema) for q in self.tables)}
        return [t for t in added if t not in asked and t not in bridges]


def _schemas_read(text: str, schema: Any, dialect: str) -> set[str] | None:
    """The schemas a query reads (lower case): those of its tables the schema has and those it writes as a
    qualifier; None when it does not parse."""
    try:
        tree = sql.parse(text, dialect=dialect)
    except SqlError:
        return None
    ctes = {c.alias_or_name.lower() for c in tree.find_all(sql.ast.CTE)}
    found: set[str] = set()
    for t in tree.find_all(sql.ast.Table):
        if not t.name or t.name.lower() in ctes:
            continue
        table = schema.table(f"{t.db}.{t.name}" if t.db else t.name)
        if table is not None and table.schema:
            found.add(table.schema.lower())
        elif t.db:
            found.add(t.db.lower())
    return found


def joined_schemas(db: Any, original_sql: str, candidate_sql: str) -> str | None:
    """Why a rewrite joins tables of a schema the query does not name (a repair never does: ``people`` and
    ``songs`` read from two departments' schemas answer no question), or None.

    A rewrite whose tables all lie in one schema, or in schemas the original reads or writes, keeps it; a
    catalogue of one schema always does.
    """
    schema = db.schema()
    if len({(t.schema or "").lower() for t in schema.tables}) <= 1:
        return None
    dialect = getattr(db, "dialect", "sqlite")
    after = _schemas_read(candidate_sql, schema, dialect)
    if not after or len(after) < 2:
        return None
    before = _schemas_read(original_sql, schema, dialect) or set()
    if after <= before:
        return None
    return (f"it joins tables of schemas the query does not name ({', '.join(sorted(after - before))}; it reads "
            f"{', '.join(sorted(after))})")


def _features(text: str, schema: Any, dialect: str) -> Any:
    """:func:`sqlmend.sql.features` of a query (its columns with their tables, its join pairs), or None."""
    try:
        return sql.features(text, schema, dialect)
    except (SqlError, ValueError, KeyError, AttributeError):
        return None


def _ambiguous(ref: Any, features: Any, schema: Any) -> bool:
    """Whether a bare column name is held by two tables of its SELECT (the engine refuses it as ambiguous:
    any of them may be meant)."""
    if ref.node.table:
        return False
    name = ref.column.lower()
    owners = 0
    for t in features.tables:
        table = schema.table(t.name) if t.scope == ref.scope else None
        owners += table is not None and any(c.name.lower() == name for c in table.columns)
    return owners > 1


def _pairs_of(join: Any) -> set[tuple[str, ...]]:
    """A join's equality conditions as sorted pairs of ``table.column`` (lower case)."""
    return {tuple(sorted((a.lower(), b.lower()))) for a, b in join.pairs}


def _pairs(features: Any) -> set[tuple[str, ...]]:
    """Every join condition's pairs of a query (:func:`_pairs_of`)."""
    return set().union(*(_pairs_of(j) for j in features.joins))


def _linked_columns(a: str, b: str, schema: Any) -> bool:
    """Whether a foreign key links columns ``a`` and ``b`` (``table.column``, lower case), either way; a column
    whose table is not known links nothing."""
    if "." not in a or "." not in b:
        return False
    (ta, ca), (tb, cb) = a.rsplit(".", 1), b.rsplit(".", 1)
    for fk in schema.foreign_keys:
        pairs = {(c.lower(), r.lower()) for c, r in zip(fk.columns, fk.ref_columns)}
        if fk.table.lower() == ta and fk.ref_table.lower() == tb and (ca, cb) in pairs:
            return True
        if fk.table.lower() == tb and fk.ref_table.lower() == ta and (cb, ca) in pairs:
            return True
    return False


def second_law(db: Any, original_sql: str, candidate_sql: str, question: str = "") -> str | None:
    """Why a rewrite of a query the engine refuses breaks the second law, or ``None``
    (:class:`SecondLaw`, for one candidate)."""
    return SecondLaw(db, original_sql, question).check(candidate_sql)


def _spelled(name: str, text: str, dialect: str = "sqlite") -> bool:
    """Whether ``text`` still names ``name`` in another spelling (``BirthYear`` as ``Birth_Year``)."""
    key = "".join(names.singular(w) for w in names.words(name))
    return bool(key) and any("".join(names.singular(w) for w in names.words(tok)) == key
                             for tok in identifiers(text, dialect))

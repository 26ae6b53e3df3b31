"""The names of a query that the schema does not have, and the schema names they stand for.

:func:`plan` reads a parsed query against the schema and returns a :class:`NamePlan`: every table
and column the schema does not have, the schema names each matches (:func:`sqlmend.sql.names.match`,
ranked, with the reason), the one it stands for when that is proven, and the fixes as data
(:mod:`sqlmend.sql.fixes`) that rename every occurrence of the proven ones, aliases kept:

* tables first: a table in FROM/JOIN that is neither in the schema nor a CTE (also a keyword written
  as a table name, ``FROM order``, which the engine reads as a syntax error) is renamed
  (``rename_table``) when exactly one schema table matches it as closely; a column qualified with
  that table's old name (no alias) follows it;
* then columns, resolved as if the tables were renamed: a column that no source of its SELECT (then
  of the enclosing ones) has, matched against the columns of those sources (of its qualifier's
  source alone when qualified). When the column is compared with a string literal (``state =
  'pending'``), where the value index finds that literal decides between names as close, and
  proves a column that no name matches when it is the only one in scope that stores it
  (reason ``value``); a name match that does not store a literal another column stores is not proven.
  A column that another table of the schema has as written is never proven (``elsewhere``): the
  query lacks a join or qualifies it wrongly; renaming it would answer another question.

Rules TB01 (tables) and AT01 (columns) report the plan's names and carry its fixes; the repair
search's ``name_match`` generator makes a candidate of each match that is not proven (several as
close), best first by the name, the question's words and the stored literal (:meth:`NameRepair.ranked`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmend.errors import SqlError
from sqlmend.rules import meaning as meanings
from sqlmend.sql import ast, names
from sqlmend.sql.fixes import node_path
from sqlmend.sql.parse import parse
from sqlmend.sql.resolve import Resolver, is_double_quoted
from sqlmend.sql.schema import as_mapping, table_key, table_node
from sqlmend.types import split_ref

#: The reason of a column proven by where its compared literal is stored alone.
VALUE = "value"
#: The reason of a match taken by the caller (``plan(choose=...)``), not proven.
CHOSEN = "chosen"


@dataclass
class NameRepair:
    """One name of the query that the schema does not have."""

    kind: str  # "table" | "column"
    written: str  # as the query writes it (a column with its qualifier)
    matches: list[names.NameMatch] = field(default_factory=list)  # ranked
    chosen: names.NameMatch | None = None  # the proven one, if any
    reason: str = ""  # the chosen one's reason ("plural", "edit", "value", "plural+value", ...)
    stored: list[str] = field(default_factory=list)  # "table.column"s in scope that store its literal
    keyword: bool = False  # a table written as a reserved word (the engine's syntax error)
    paths: list[str] = field(default_factory=list)  # the nodes it is written at
    elsewhere: list[str] = field(default_factory=list)  # tables not in scope that have the name as written

    @property
    def proven(self) -> bool:
        """Whether one schema name is proven (or, with ``plan(choose=...)``, taken) for it."""
        return self.chosen is not None

    @property
    def key(self) -> str:
        """What :func:`plan`'s ``choose`` names it by: a table's name (lower case), a column's path."""
        return self.written.lower() if self.kind == "table" else f"column:{self.paths[0]}"

    def describe(self) -> str:
        """``customers -> customer (plural)``, or ``mail: email (edit 1), ...`` when not proven."""
        if self.chosen is not None:
            return f"{self.written} -> {self.chosen.name} ({self.reason})"
        shown = ", ".join(m.describe() for m in self.matches[:4]) or "no schema name matches"
        if self.elsewhere:
            shown += f"; as written in {', '.join(self.elsewhere[:3])} (a table the query may need)"
        return f"{self.written}: {shown}"

    def ranked(self, question: str = "") -> list[names.NameMatch]:
        """The matches for a person or the search, best first: a column storing the compared literal first
        (one that no name matches too, as a ``value`` match), then the name's rank, then how many of the
        name's words the question holds."""
        q = {names.singular(w) for w in names.words(question)}
        stored = {s.lower() for s in self.stored}
        named = {f"{m.owner}.{m.name}".lower() for m in self.matches}
        extra = [names.NameMatch(split_ref(s)[1], split_ref(s)[0], VALUE) for s in self.stored
                 if s.lower() not in named]

        def key(m: names.NameMatch) -> tuple:
            held = sum(names.singular(w) in q for w in names.words(m.name))
            here = f"{m.owner}.{m.name}".lower() in stored
            return (not here, m.rank, -held, m.name.lower())

        return sorted([*self.matches, *extra], key=key)


@dataclass
class SchemaChoice:
    """One schema a query's unknown tables may all be read from (a catalogue of several schemas: see the
    module doc, "by the whole query"), with the evidence for it."""

    schema: str
    assignment: dict[str, names.NameMatch]  # NameRepair.key -> the table of this schema it reads
    misses: int  # the query's columns that its tables, so read, do not have (or hold twice), nor by spelling
    stored: int  # compared literals that a column of these tables stores
    spelled: int  # the query's columns its tables have only in another spelling (``captain_age``: ``age``)
    rank: tuple[tuple[int, int], ...]  # the names' match ranks, in the order of the query's unknown tables
    words: int  # the question's words that the query does not write and the schema's name does

    @property
    def fits(self) -> bool:
        """Whether every column of the query is found in its tables so read (as written or in another
        spelling the column rules restore)."""
        return self.misses == 0

    def key(self) -> tuple:
        """Best first: fits, stores the query's literals, needs fewer columns respelled, matches the names
        closer, the question's words name the schema."""
        return (self.misses, -self.stored, self.spelled, self.rank, -self.words)

    def describe(self) -> str:
        """``poker_player (fits; stores 1 literal(s); 0 question word(s): poker_player.people)``."""
        how = "fits" if self.fits else f"{self.misses} column(s) not found"
        if self.spelled:
            how += f", {self.spelled} in another spelling"
        return (f"{self.schema} ({how}; stores {self.stored} literal(s); {self.words} question word(s): "
                f"{', '.join(m.name for m in self.assignment.values())})")


@dataclass
class NamePlan:
    """Every name of a query that the schema does not have (see the module doc)."""

    #: A catalogue of several schemas: the schemas the unknown tables may all be read from, best first
    #: (:class:`SchemaChoice`); ``schema_tied`` when the best is not ahead of the next on the evidence.
    schema_choices: list[SchemaChoice] = field(default_factory=list)
    schema_tied: bool = False
    by_schema: bool = False  # the unknown tables were chosen by schema (the search offers schema_choices alone)
    tables: list[NameRepair] = field(default_factory=list)
    columns: list[NameRepair] = field(default_factory=list)
    table_fixes: list[dict] = field(default_factory=list)  # renames and requalified columns
    column_fixes: list[dict] = field(default_factory=list)  # renamed columns (with their qualifier)
    fixes_of: dict[int, list[dict]] = field(default_factory=dict)  # id(repair) -> its own fixes

    @property
    def unknown(self) -> bool:
        """Whether the query names anything the schema does not have."""
        return bool(self.tables or self.columns)

    @property
    def complete(self) -> bool:
        """Whether every such name is proven (the fixes then give a query whose names all exist)."""
        return self.unknown and all(r.proven for r in [*self.tables, *self.columns])

    def fixes(self, repair: NameRepair) -> list[dict]:
        """The fixes that rename one name (a table's include the columns its old name qualifies)."""
        return self.fixes_of.get(id(repair), [])


def _literals(col: Any) -> list[str]:
    """The string literals a column is compared with by ``=``, ``<>`` or ``IN (...)``."""
    parent = col.parent
    if isinstance(parent, ast.In) and parent.this is col:
        return [e.this for e in parent.expressions if isinstance(e, ast.Literal) and e.is_string]
    if isinstance(parent, (ast.EQ, ast.NEQ)):
        other = parent.expression if parent.this is col else parent.this
        if isinstance(other, ast.Literal) and other.is_string:
            return [other.this]
    return []


def _stores(values: Any, table: str, column: str, literal: str) -> bool:
    """Whether ``table.column`` stores ``literal`` (exactly, or but for case)."""
    try:
        return values.contains(table, column, literal) or bool(values.find(table, column, literal, mode="ci",
                                                                             limit=1))
    except Exception:  # a value index that cannot answer proves nothing
        return False


def extra_words(repair: NameRepair, match: names.NameMatch) -> set[str]:
    """The words of the name written that ``match`` does not account for: not its own words, nor its table's
    name for a ``prefix`` match (``grade_name`` / ``grade``: ``name``; ``orchestra_Conductor_ID`` /
    ``Conductor_ID`` of ``orchestra``: none)."""
    own = {names.singular(w) for w in names.words(match.name)}
    if match.reason == "prefix" and match.owner:
        own |= {names.singular(w) for w in names.words(match.owner.rpartition(".")[2])}
    return {w for w in (names.singular(x) for x in names.words(repair.written.rpartition(".")[2])) if w not in own}


def shadowed(repair: NameRepair, best: names.NameMatch, wholes: set[str]) -> bool:
    """Whether the name holds, among the words ``best`` does not account for (:func:`extra_words`), the whole
    name of another column in scope (``grade_name`` where ``name`` is a column too, ``Name_Code`` where
    ``code`` is): it may mean either, so no name proves it."""
    return bool(extra_words(repair, best) & ({names.singular(w) for w in wholes} - {best.name.lower()}))


def _choose(repair: NameRepair, literals: list[str], wholes: set[str] = frozenset()) -> None:
    """Set ``repair.chosen`` and ``reason`` from its matches and where its literals are stored.

    A name alone proves its one best match (:func:`sqlmend.sql.names.unique`), unless it holds another
    column's whole name as a word the match does not account for (:func:`shadowed`). A compared literal decides when it is stored: the
    best match must store it (else the name says one column, the literal another: not proven); where no
    match proves itself by name, the one column in scope that stores it is proven when the name matches
    it at all, in spelling or in meaning (the literal outranks the name's words: ``label_name = 'Sony'``
    is ``Label``, which stores 'Sony', not ``Name``), or when no name matches by spelling (``Zone =
    'Caribbean'`` is ``Region``)."""
    best = names.unique(repair.matches)
    if best is not None and shadowed(repair, best, wholes):
        best = None
    if not literals or not repair.stored:
        repair.chosen, repair.reason = best, best.reason if best else ""
        return
    stored = {s.lower() for s in repair.stored}
    here = [m for m in repair.matches if f"{m.owner}.{m.name}".lower() in stored]
    if best is not None:
        if f"{best.owner}.{best.name}".lower() in stored:
            repair.chosen, repair.reason = best, best.reason
        return  # the name says one column, the literal another: not proven
    if here:
        pick = names.unique(here)
        if pick is not None and pick.rank == repair.matches[0].rank:
            repair.chosen, repair.reason = pick, f"{pick.reason}+{VALUE}"
        elif len(repair.stored) == 1 and len(here) == 1:  # a words or meaning match the data proves
            repair.chosen, repair.reason = here[0], f"{here[0].reason}+{VALUE}"
        return
    if len(repair.stored) == 1 and not any(m.reason != "meaning" for m in repair.matches):
        table, column = split_ref(repair.stored[0])
        repair.chosen, repair.reason = names.NameMatch(column, table, VALUE), VALUE


def keyword_tree(text: str, dialect: str = "sqlite") -> tuple[Any, dict[int, tuple[int, int, str]]]:
    """A query that does not parse because it writes a table as a keyword (``FROM like AS T1``), parsed
    with those words quoted as names: ``(tree, spans)``, ``spans`` keyed by where each quoted word starts
    in the quoted text, giving its ``(start, end, word)`` in ``text`` (:func:`plan` renames it there with
    a ``replace_span`` fix). ``(None, {})`` when there is no such word or the text still does not parse."""
    found = names.keyword_tables(text, dialect)
    if not found:
        return None, {}
    quoted, spans, last, shift = [], {}, 0, 0
    for start, end, word in found:
        name = ast.to_identifier(word, quoted=True).sql(dialect=dialect)
        quoted.append(text[last:start] + name)
        spans[start + shift] = (start, end, word)
        shift += len(name) - (end - start)
        last = end
    try:
        return parse("".join(quoted) + text[last:], dialect=dialect), spans
    except SqlError:
        return None, {}


def plan(tree: Any, schema: Any, values: Any = None, dialect: str = "sqlite",
         original: str | None = None, choose: dict[str, names.NameMatch] | None = None,
         spans: dict[int, tuple[int, int, str]] | None = None, question: str = "",
         meaning: bool = True) -> NamePlan:
    """The names of ``tree`` that ``schema`` does not have, matched and (where proven) fixed.

    Args:
        tree: the parsed query (not changed).
        schema: the database's :class:`sqlmend.types.Schema`.
        values: its value index (``contains``, ``find``), or None (no literal evidence).
        dialect: the dialect the fixes' ``expect`` is written in.
        original: the text ``tree`` was parsed from (SQLite's double-quoted strings are values).
        choose: a match taken for a name as if proven (reason ``chosen``), by :meth:`NameRepair.key`: the
            repair search's candidates of a name that several schema names match as closely.
        spans: for a tree of :func:`keyword_tree`, its quoted keywords: they are renamed in the text
            (``replace_span``), the rest of the fixes on the tree that text then parses to.
        question: the question (its words rank the schemas a catalogue of several offers).
        meaning: a name no schema name matches in spelling is matched by meaning (:mod:`sqlmend.rules.meaning`).

    Returns:
        The :class:`NamePlan` (empty when every name exists).
    """
    out = NamePlan()
    known = {t.name.lower(): t for t in schema.tables}
    mapping = as_mapping(schema)  # a table written schema.name is known by its key (sql.schema.table_key)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(ast.CTE)}
    work = tree.copy()
    originals = {node_path(n): n for n in tree.find_all(ast.Table, ast.Column)}

    # --- tables --------------------------------------------------------------------------------
    by_name: dict[str, NameRepair] = {}
    aliases = {t.alias.lower() for t in work.find_all(ast.Table) if t.alias}
    renamed: dict[str, str] = {}  # old lower -> new (schema spelling)
    table_nodes = [t for t in work.find_all(ast.Table)
                   if t.name and isinstance(t.this, ast.Identifier) and table_key(t, mapping).lower() not in known
                   and t.name.lower() not in ctes]
    for t in table_nodes:
        key = t.name.lower()
        repair = by_name.get(key)
        if repair is None:
            found = names.match(t.name, [x.name for x in schema.tables])
            if not found and meaning:
                found = meanings.matches(t.name, [x.name for x in schema.tables])
            repair = NameRepair("table", t.name, found, keyword=key in names.RESERVED)
            repair.chosen = names.unique(repair.matches)
            repair.reason = repair.chosen.reason if repair.chosen else ""
            if repair.key in (choose or {}):
                repair.chosen, repair.reason = choose[repair.key], CHOSEN
            by_name[key] = repair
            out.tables.append(repair)
            if repair.chosen is not None:
                renamed[key] = repair.chosen.name
        repair.paths.append(node_path(t))
    if out.tables and len({(x.schema or "").lower() for x in schema.tables}) > 1:
        _by_schema(out, tree, work, table_nodes, schema, known, mapping, values, question, choose or {})
        renamed = {r.written.lower(): r.chosen.name for r in out.tables if r.chosen is not None}
    for t in table_nodes:
        new = renamed.get(t.name.lower())
        if new is None:
            continue
        path = node_path(t)
        target = known[new.lower()]  # a table of another schema: its own name, read from its schema
        span = (spans or {}).get(t.this.meta.get("start"))
        if span is not None:  # a keyword no parser reads as a name: renamed in the text
            written = table_node(target, dialect) if target.qualified else \
                ast.to_identifier(new, quoted=names.needs_quotes(new) or None)
            fix = {"op": "replace_span", "start": span[0], "end": span[1], "expect": span[2],
                   "value": written.sql(dialect=dialect)}
        else:
            fix = {"op": "rename_table", "path": path, "expect": originals[path].sql(dialect=dialect),
                   "name": target.relname}
            if target.qualified:
                fix["schema"] = target.schema
        out.table_fixes.append(fix)
        out.fixes_of.setdefault(id(by_name[t.name.lower()]), []).append(fix)
        t.set("this", ast.to_identifier(target.relname, quoted=names.needs_quotes(target.relname)))
        if target.qualified:
            t.set("db", ast.to_identifier(target.schema))
    requalified: dict[str, tuple[str, NameRepair]] = {}  # column path -> (new qualifier, table repair)
    for col in work.find_all(ast.Column):
        q = col.table.lower() if col.table else ""
        if q in renamed and q not in aliases:
            own = known[renamed[q].lower()].relname  # a table is named by its own name, schema aside
            requalified[node_path(col)] = (own, by_name[q])
            col.set("table", ast.to_identifier(own))

    # --- columns -------------------------------------------------------------------------------
    resolver = Resolver(work, schema)
    everywhere: dict[str, set[str]] = {}  # column name (lower) -> the tables that have it
    schemas = _query_schemas(work, schema, known, mapping)
    for t in schema.tables:
        if schemas and (t.schema or "").lower() not in schemas:
            continue  # a table of a schema the query does not read is no evidence of a missing join
        for c in t.columns:
            everywhere.setdefault(c.name.lower(), set()).add(f"{t.name}.{c.name}")
    renames: dict[str, tuple[str, str | None]] = {}  # column path -> (name, qualifier)
    sqlite = dialect in ("sqlite", "")
    for col in list(work.find_all(ast.Column)):
        if isinstance(col.this, ast.Star) or not col.name:
            continue
        b = resolver.resolve(col)
        if b.status == "alias" and col.name.lower() not in b.scope.output_names(aliases_only=True):
            pass  # the output name of a bare column of the SELECT list is that column, not an alias
        elif b.status != "unknown":
            continue
        if sqlite and not col.table and is_double_quoted(col.this, original):
            continue  # SQLite reads it as a string
        info = resolver.scope_of(col)
        scopes = list(info.chain()) if info is not None else []
        literals = _literals(col)
        repair = NameRepair("column", col.sql(dialect=dialect), paths=[node_path(col)],
                            elsewhere=sorted(everywhere.get(col.name.lower(), ())))
        offered: list[tuple[str, str]] = []  # (column, its table or derived table) in the scope that answers
        owner_alias: dict[str, str] = {}
        for by_meaning in (False, True):  # by spelling in every scope first, then by meaning
            if by_meaning and (repair.matches or repair.stored or not meaning):
                break
            for sc in scopes:
                sources = [(a, s) for a, s in sc.sources.items() if not col.table or a == col.table.lower()]
                if col.table and not sources:
                    continue
                offered, owner_alias = [], {}
                for alias, (_node, table, cols) in sources:
                    spelled = [c.name for c in known[table.lower()].columns] if table and table.lower() in known \
                        else sorted(c for c in cols if c != "*")
                    owner = table or alias
                    owner_alias[owner.lower()] = alias
                    offered += [(c, owner) for c in spelled]
                found = meanings.matches(col.name, offered) if by_meaning else names.match(col.name, offered)
                repair.matches = [m for m in found if m.name.lower() != col.name.lower()]
                if values is not None and literals and not by_meaning:
                    repair.stored = [f"{o}.{c}" for c, o in offered if o.lower() in known
                                     and any(_stores(values, o, c, lit) for lit in literals)]
                if repair.matches or repair.stored:
                    wholes = {c.lower() for c, _ in offered if len(names.words(c)) == 1}
                    _choose(repair, literals, wholes)
                    if repair.elsewhere:  # a real column of another table: a join or qualifier is wrong
                        repair.chosen, repair.reason = None, ""
                    break
        if repair.key in (choose or {}):
            repair.chosen, repair.reason = choose[repair.key], CHOSEN
        if repair.chosen is not None:
            c = repair.chosen
            holders = [o for n, o in offered if n.lower() == c.name.lower()]
            qualifier = col.table or None
            if qualifier is None and len(holders) > 1:  # the name alone would be ambiguous
                qualifier = owner_alias.get((c.owner or "").lower())
            renames[node_path(col)] = (c.name, qualifier)
        out.columns.append(repair)
        if repair.chosen is not None:
            out.fixes_of[id(repair)] = []

    for path in sorted(set(requalified) | set(renames)):
        node = originals.get(path)
        if node is None:
            continue
        if path in renames:
            name, table = renames[path]
        else:
            name, table = node.name, requalified[path][0]
        fix = {"op": "replace_column", "path": path, "expect": node.sql(dialect=dialect),
               "column": name, "table": table or node.table or None}
        if path in renames:
            out.column_fixes.append(fix)
            out.fixes_of[id(next(r for r in out.columns if path in r.paths))].append(fix)
        else:
            out.table_fixes.append(fix)
            out.fixes_of.setdefault(id(requalified[path][1]), []).append(fix)
    return out


# --- a catalogue of several schemas: the unknown tables resolved by the whole query ---------------------


#: Words of a question that name nothing (a schema named ``cre_docs_and_expenses`` is not named by "and").
_STOP = frozenset("""the and for with from that this what which who whom whose how many much are was were has have
had does did not all any each every its their there than then them they his her our your you can list show give
find return tell number count name names""".split())


def _query_schemas(tree: Any, schema: Any, known: dict[str, Any], mapping: Any) -> set[str]:
    """The schemas a query reads (lower case): those of the tables it names that the schema has, and those
    it writes as a qualifier; empty for a catalogue of one schema."""
    if len({(x.schema or "").lower() for x in schema.tables}) <= 1:
        return set()
    found: set[str] = set()
    for t in tree.find_all(ast.Table):
        table = known.get(table_key(t, mapping).lower())
        if table is not None and table.schema:
            found.add(table.schema.lower())
    return found


def _by_schema(out: NamePlan, tree: Any, work: Any, nodes: list[Any], schema: Any, known: dict[str, Any],
               mapping: Any, values: Any, question: str, choose: dict[str, names.NameMatch]) -> None:
    """Choose the unknown tables of a query on a catalogue of several schemas by the whole query.

    The same name lives in several schemas (``people`` in every department's): each repair's matches are
    grouped by schema, and a schema is a choice when every unknown table has one best match in it and
    the query, its tables so read, joins no schema it does not name (the schemas of the tables it names
    that exist, :func:`_query_schemas`, and the qualifiers it writes). Each choice is read against the
    query (:class:`SchemaChoice`): its columns found once each, the literals its columns store, the
    names' ranks, the question's words. A table is proven (strict, TB01's fix) only where exactly one
    schema fits; else the choices are the search's, best first, none when the best two tie
    (``out.schema_tied``: the query is kept, the choices in the trace)."""
    reads = _query_schemas(work, schema, known, mapping)
    written = {t.db.lower() for t in nodes if t.db}
    catalogue_schemas = {(x.schema or "").lower() for x in schema.tables}
    named = {q for q in written if q in catalogue_schemas}
    allowed = reads | named
    by_key = {r.key: r for r in out.tables}
    if len(named) > 1 or any(k in choose for k in by_key):
        return  # the query names several schemas itself, or the caller chose: the names alone decide
    out.by_schema = True
    holders: dict[str, str] = {}
    for r in out.tables:
        for m in r.matches:
            holders[m.name.lower()] = (known[m.name.lower()].schema or "").lower()
    candidates = sorted({h for h in holders.values()} - {""})
    # the question's words the query does not write: those that may name the schema (its domain)
    written_words = {names.singular(w) for n in tree.find_all(ast.Table, ast.Column) if n.name
                     for w in names.words(n.name)}
    q = {names.singular(w) for w in names.words(question) if len(w) > 2 and w not in _STOP} - written_words
    choices: list[SchemaChoice] = []
    for s in candidates:
        if allowed and s not in allowed:
            continue  # a join across a schema the query does not name
        assignment: dict[str, names.NameMatch] = {}
        for r in out.tables:
            here = [m for m in r.matches if holders[m.name.lower()] == s]
            if not here or (len(here) > 1 and here[1].rank == here[0].rank):
                break  # no table of that name in s, or two as close
            assignment[r.key] = here[0]
        else:
            choices.append(_read_choice(s, assignment, tree, schema, known, mapping, values, q))
    choices.sort(key=lambda c: (c.key(), c.schema))
    out.schema_choices = choices
    fitting = [c for c in choices if c.fits]
    out.schema_tied = len(choices) > 1 and choices[0].key() == choices[1].key()
    for r in out.tables:
        r.chosen, r.reason = None, ""
        r.matches = [c.assignment[r.key] for c in choices] or r.matches
        if len(fitting) == 1 and fitting[0].assignment[r.key].proof:
            r.chosen = fitting[0].assignment[r.key]
            r.reason = r.chosen.reason if len(choices) == 1 else f"{r.chosen.reason}; the one schema that fits"


def _read_choice(s: str, assignment: dict[str, names.NameMatch], tree: Any, schema: Any, known: dict[str, Any],
                 mapping: Any, values: Any, q: set[str]) -> SchemaChoice:
    """One schema's choice read against the whole query (see :class:`SchemaChoice`)."""
    work = tree.copy()
    renames = {key: known[m.name.lower()] for key, m in assignment.items()}
    aliases = {t.alias.lower() for t in work.find_all(ast.Table) if t.alias}
    for t in list(work.find_all(ast.Table)):
        target = renames.get(t.name.lower()) if t.name else None
        if target is None or not isinstance(t.this, ast.Identifier) or table_key(t, mapping).lower() in known:
            continue
        t.set("this", ast.to_identifier(target.relname, quoted=names.needs_quotes(target.relname)))
        t.set("db", ast.to_identifier(target.schema) if target.qualified else None)
    for col in work.find_all(ast.Column):
        qual = col.table.lower() if col.table else ""
        if qual in renames and qual not in aliases:
            col.set("table", ast.to_identifier(renames[qual].relname))
    resolver = Resolver(work, schema)
    misses = stored = spelled = 0
    chosen = {t.name.lower() for t in renames.values()}
    offered = [(c.name, t.name) for t in renames.values() for c in t.columns]
    for col in work.find_all(ast.Column):
        if isinstance(col.this, ast.Star) or not col.name:
            continue
        b = resolver.resolve(col)
        bare = b.status == "alias" and col.name.lower() not in b.scope.output_names(aliases_only=True)
        if bare or b.status in ("unknown", "ambiguous", "unknown_qualifier", "unknown_table"):
            # (a bare column of the SELECT list names itself, not an alias)
            if b.status != "ambiguous" and any(m.proof for m in names.match(col.name, offered)):
                spelled += 1
            else:
                misses += 1
        elif values is not None and b.table and b.table.lower() in chosen:
            stored += sum(_stores(values, b.table, col.name, lit) for lit in _literals(col))
    words = len({names.singular(w) for w in names.words(s)} & q)
    return SchemaChoice(s, assignment, misses, stored, spelled, tuple(m.rank for m in assignment.values()), words)

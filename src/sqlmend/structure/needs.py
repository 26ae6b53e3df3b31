"""The schema a question needs: the relations and columns a question (and a draft query) is about, ranked,
their join paths and a few stored values, written within a character budget.

A warehouse of hundreds of relations (or an ERP of thousands) does not fit a prompt, and an agent that
sees its listing alone cannot tell which tables a question needs. :func:`schema_for` ranks the
catalogue's relations by the evidence a question gives, and writes the best within ``budget``
characters (:class:`QuestionSchema`):

* **the question's words** against the relations' and columns' names (their words, singular, camelCase
  and underscores split; a word's stem and a few abbreviations schemas use: ``dept``, ``num``, ``stu``),
  comments and the name of the schema that holds them, each weighed by how rare it is in the catalogue
  (IDF over the names: ``name`` says little, ``stadium`` a lot); a schema whose relations cover more of
  the question's words ranks its relations higher (a question is about one database);
* **the draft query's names**, invented ones included: a model's failing query is a probe of the real
  schema (CRUSH4SQL, Kothyari et al., EMNLP 2023). A name the catalogue has counts as it is; one it
  lacks counts by the names it matches (:class:`sqlmend.sql.names.NameIndex`: case, plural, separators,
  prefix, edit...) and by its words;
* **stored values**: a value the question quotes or capitalizes (``'France'``, ``Paris``, ``1980``) or
  a literal the draft compares, found stored in a column of the best candidates (the value index of
  :mod:`sqlmend.db.values`), ranks that column and its relation first, and is shown beside it;
* **the embedder**, when the caller has one (``embed``: texts to unit vectors, all-MiniLM-L6-v2 in
  :mod:`sqlmend.llm.embedder`): the cosine of the question with each relation's and column's words, a
  match by meaning (``pupil`` / ``student``) that adds to the lexical score;
* **connectivity**: a chosen pair of relations of one schema that no foreign key joins brings the
  relation that joins both (``singer``, ``concert`` bring ``singer_in_concert``).

Joins are the foreign keys, else a column named as another relation's single-column key
(``concert.Stadium_ID`` ~ ``stadium.Stadium_ID``). The text has a line per relation, its columns with
their types, keys, joins and matched values; a relation too wide for its share of the budget keeps its
keys and the columns with evidence (``+N more``). Everything is a function of the question, the draft,
the catalogue and its stored values: the same input gives the same answer at every door.

The index of a catalogue (:class:`SchemaIndex`) is built once per catalogue version by the caller
(:meth:`sqlmend.api.Corrector.schema_for`): a warehouse of 838 relations in about 0.2 s, 10,000 relations in
about 2 s; a question then costs milliseconds. The weights were set on Spider train (``sqlmend bench
schema-linking --dataset spider-train``), never on dev.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sqlmend.errors import ConfigError, SqlmendError
from sqlmend.sql.diff import identifiers, table_names
from sqlmend.sql.names import NameIndex, singular, words
from sqlmend.structure.linking import value_candidates
from sqlmend.types import Schema, Table

#: The budget of :func:`schema_for` by default, in characters of ``.text``.
BUDGET = 4096
#: A model prompt gets the whole schema when its text is shorter than this (characters: about 4,000
#: tokens); a bigger one gets the relations :func:`schema_for` ranks first, as many as this many characters
#: hold (:func:`prompt_tables`). Spider's largest database writes 4,491 characters: every prompt of the
#: Spider benchmarks is unchanged. ``$SQLMEND_SCHEMA_WHOLE_BELOW`` overrides it (:func:`whole_below`).
WHOLE_BELOW = 16_384
#: Relations whose stored values are looked up for the question's values (the best by the other evidence;
#: a catalogue of at most this many relations is searched whole).
VALUE_CANDIDATES = 24
#: Stored values shown per column at most.
SHOWN_VALUES = 3

#: Words that never count as evidence on their own (English function words and the words of a request).
STOPWORDS = frozenset("""
a an the of in on at to for from by with and or not no nor is are was were be been being am do does did
done have has had having what which who whom whose when where why how many much all each every any some
that this these those there their they them its it as than then also me my i we our us you your he she his
her list show give find return tell display get please whether same different both either other another
more most less least over under between into out than only just one ones per
""".split())

#: Abbreviations schemas write for a word a question writes (developed on Spider train's schemas).
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "department": ("dept", "dep"), "number": ("num", "no", "nbr"), "student": ("stu", "stud"),
    "first": ("f", "fname"), "last": ("l", "lname"), "average": ("avg",), "maximum": ("max",),
    "minimum": ("min",), "identifier": ("id",), "professor": ("prof",), "course": ("crs",),
    "employee": ("emp",), "address": ("addr",), "telephone": ("tel", "phone"), "phone": ("tel",),
    "quantity": ("qty",), "description": ("desc", "descr"), "information": ("info",),
    "amount": ("amt",), "account": ("acc", "acct"), "year": ("yr",), "birth": ("dob",),
    "gender": ("sex",), "sex": ("gender",), "document": ("doc",), "organization": ("org",),
    "organisation": ("org",), "reference": ("ref",), "category": ("cat",), "capacity": ("cap",),
    "population": ("pop",), "percentage": ("pct", "percent"), "position": ("pos",),
    "statement": ("stmt",), "transaction": ("trans",), "temperature": ("temp",), "building": ("bldg",),
    "street": ("st",), "apartment": ("apt",), "code": ("cd",), "date": ("dt",), "count": ("cnt",),
    "salary": ("sal",), "manager": ("mgr",), "female": ("f",), "male": ("m",), "identification": ("id",),
}

#: The weights of the evidence (set on Spider train; see the module doc).
W_TABLE_NAME = 1.0  # a question word in a relation's own name (x its IDF over relations)
W_COLUMNS = 0.3  # question words covered by a relation's columns (each word once, x its IDF over columns)
W_SCHEMA = 0.8  # the coverage of the question's words by the relation's schema (its relations and its name)
W_SCHEMA_NAME = 1.2  # a question word in the schema's own name (x its IDF over schemas), as a coverage
W_VALUE = 15.0  # a question's value stored in one of the relation's columns
W_DRAFT_TABLE = 10.0  # a relation the draft names (or one a name it invents matches best)
W_DRAFT_COLUMN = 1.5  # a column the draft names (x its IDF over columns), for its relation
W_DRAFT_WORDS = 0.5  # the words of the draft's names, as question words of this weight
W_EMBED = 3.0  # the embedder's cosine above EMBED_FLOOR (relation and best column)
EMBED_FLOOR = 0.3
#: A stem match (``located`` / ``location``: a common start of STEM letters or more) and a prefix match
#: (``nation`` / ``nationality``) count this much of an exact one.
STEM, W_STEM, W_PREFIX, W_ABBREVIATION = 5, 0.5, 0.6, 0.8
#: A relation wider than this share of the budget keeps its keys and its columns with evidence.
TABLE_SHARE = 0.25
#: The best relations written with their columns' types and keys; those after them, their columns' names.
FULL_TABLES = 8
#: The best relations that bring the relations they join (at most MAX_NEIGHBOURS each), right after them.
NEIGHBOURS_OF, MAX_NEIGHBOURS = 2, 4


# --- words ----------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*|\d+")


def name_words(name: str) -> list[str]:
    """The singular lower-case words of a name (camelCase and separators split).

    >>> name_words("Singer_In_Concert"), name_words("StuID"), name_words("countries")
    (['singer', 'in', 'concert'], ['stu', 'id'], ['country'])
    """
    return [singular(w) for w in words(name)]


def question_terms(text: str) -> list[str]:
    """The words of a question that may name something: singular, lower case, no stopwords, once each,
    and each adjacent pair joined (``home town`` also reads ``hometown``).

    >>> question_terms("What are the home towns of the singers?")
    ['home', 'town', 'singer', 'hometown']
    """
    tokens = [singular(t.lower()) for t in _TOKEN.findall(text)]
    kept = [t for t in tokens if t not in STOPWORDS]
    pairs = [a + b for a, b in zip(tokens, tokens[1:]) if a not in STOPWORDS and b not in STOPWORDS
             and not a.isdigit() and not b.isdigit()]
    return list(dict.fromkeys(kept + pairs))


# --- the index of a catalogue ----------------------------------------------------------------------------


def _idf(df: np.ndarray, n: int) -> np.ndarray:
    return np.log1p(n / np.maximum(df, 1)).astype(np.float64)


class SchemaIndex:
    """A catalogue's relations, columns and joins, indexed for :func:`schema_for` (built once per catalogue
    version: :meth:`sqlmend.api.Corrector.schema_for` keeps it).

    Args:
        tables: every relation, whole (``Table`` with its columns, keys and comments; no values needed).
        relations: how the catalogue's listing counts them (default ``len(tables)``).
        embed: texts to unit vectors (optional): the relations' and columns' words are embedded here, once.
    """

    def __init__(self, tables: Sequence[Table], embed: Callable[[list[str]], Any] | None = None) -> None:
        self.tables = list(tables)
        self.by_key = {t.name.lower(): i for i, t in enumerate(self.tables)}
        schemas = list(dict.fromkeys(t.schema for t in self.tables))
        self.schemas = schemas
        self.schema_of = np.array([schemas.index(t.schema) for t in self.tables] if len(schemas) < 64 else
                                  [{s: i for i, s in enumerate(schemas)}[t.schema] for t in self.tables],
                                  dtype=np.int64)
        self.multi = len([s for s in schemas if s]) > 1
        vocab: dict[str, int] = {}
        split = _Splitter(n for t in self.tables for n in (t.relname, t.schema, *(c.name for c in t.columns)))

        def wid(w: str) -> int:
            return vocab.setdefault(w, len(vocab))

        def name_words(name: str) -> list[str]:  # a lower-case name's run of words split too (firstname)
            return split.words(name)

        # columns, flat
        self.col_table: list[int] = []
        self.col_name: list[str] = []
        col_words: list[list[int]] = []
        self.table_cols: list[range] = []
        for i, t in enumerate(self.tables):
            start = len(self.col_name)
            for c in t.columns:
                self.col_table.append(i)
                self.col_name.append(c.name)
                ws = name_words(c.name) + ([singular(w) for w in _comment_words(c.comment)] if c.comment else [])
                col_words.append(list(dict.fromkeys(wid(w) for w in ws)))
            self.table_cols.append(range(start, len(self.col_name)))
        self.col_table_arr = np.array(self.col_table, dtype=np.int64)
        table_words = [list(dict.fromkeys(wid(w) for w in name_words(t.relname) +
                                          [singular(w) for w in _comment_words(t.comment)])) for t in self.tables]
        schema_words = [list(dict.fromkeys(wid(w) for w in name_words(s))) for s in schemas]
        self.vocab = vocab
        self.words = list(vocab)
        n_words = len(vocab)
        # postings: word -> columns / relations / schemas holding it
        self.col_post = _postings(col_words, n_words)
        self.table_post = _postings(table_words, n_words)
        self.schema_post = _postings(schema_words, n_words)
        self.idf_col = _idf(np.array([len(p) for p in self.col_post]), max(1, len(self.col_name)))
        self.idf_table = _idf(np.array([len(p) for p in self.table_post]), max(1, len(self.tables)))
        self.idf_schema = _idf(np.array([len(p) for p in self.schema_post]), max(1, len(schemas)))
        by_start: dict[str, list[int]] = {}
        for w, i in vocab.items():
            by_start.setdefault(w[:3], []).append(i)
        self._by_start = by_start
        self._matches: dict[str, list[tuple[int, float]]] = {}
        # whole names (lower case) -> columns, for the draft's names
        self.columns_named: dict[str, list[int]] = {}
        for j, name in enumerate(self.col_name):
            self.columns_named.setdefault(name.lower(), []).append(j)
        self.idf_column_name = {k: math.log1p(len(self.col_name) / len(v)) for k, v in self.columns_named.items()}
        self.relnames: dict[str, list[int]] = {}
        for i, t in enumerate(self.tables):
            self.relnames.setdefault(t.relname.lower(), []).append(i)
        self._table_names: NameIndex | None = None
        self._column_names: NameIndex | None = None
        self.links = _links(self.tables, self.by_key)
        self.embedded = False
        if embed is not None:
            self._embed_schema(embed)

    # --- names the draft invents
    @property
    def table_names(self) -> NameIndex:
        if self._table_names is None:
            self._table_names = NameIndex(t.name for t in self.tables)
        return self._table_names

    @property
    def column_names(self) -> NameIndex:
        if self._column_names is None:
            self._column_names = NameIndex(dict.fromkeys(self.col_name))
        return self._column_names

    def _embed_schema(self, embed: Callable[[list[str]], Any]) -> None:
        table_texts = [" ".join(words(t.relname)) + (f": {t.comment}" if t.comment else "") for t in self.tables]
        col_texts = [" ".join(words(self.tables[self.col_table[j]].relname)) + " " + " ".join(words(name))
                     for j, name in enumerate(self.col_name)]
        unique = list(dict.fromkeys(table_texts + col_texts))
        got = embed(unique) if unique else None
        if got is None or len(got) != len(unique):  # the embedder failed: the lexical evidence alone
            return
        vectors = np.asarray(got, dtype=np.float32)
        at = {text: i for i, text in enumerate(unique)}
        self.table_vec = vectors[[at[x] for x in table_texts]] if table_texts else vectors[:0]
        self.col_vec = vectors[[at[x] for x in col_texts]] if col_texts else vectors[:0]
        self.embedded = True

    def matches(self, term: str) -> list[tuple[int, float]]:
        """The vocabulary words a question word matches, with how much (1 exact, less for a stem, a prefix or
        an abbreviation), kept per word."""
        found = self._matches.get(term)
        if found is not None:
            return found
        out: dict[int, float] = {}
        exact = self.vocab.get(term)
        if exact is not None:
            out[exact] = 1.0
        for abbr in ABBREVIATIONS.get(term, ()):
            if (i := self.vocab.get(abbr)) is not None:
                out[i] = max(out.get(i, 0.0), W_ABBREVIATION)
        if len(term) >= 4 and not term.isdigit():
            for i in self._by_start.get(term[:3], ()):
                w = self.words[i]
                if i in out or len(w) < 4 or w.isdigit():
                    continue
                if w.startswith(term) or term.startswith(w):
                    out[i] = W_PREFIX
                elif len(w) >= STEM and len(term) >= STEM and w[:STEM] == term[:STEM]:
                    out[i] = W_STEM
        result = sorted(out.items())
        if len(self._matches) < 100_000:
            self._matches[term] = result
        return result


class _Splitter:
    """A name's words, a word that is a run of the catalogue's own words (a lower-case schema writes
    ``firstname``, ``hometown``, ``stuid`` where another writes ``first_name``) split into them too: the known
    words are those names split at separators and camelCase (three letters or more, or ``id`` / ``no``)."""

    SHORT = frozenset({"id", "no"})

    def __init__(self, names: Iterable[str]) -> None:
        known: set[str] = set()
        for name in names:
            ws = name_words(name)
            if len(ws) > 1:
                known.update(w for w in ws if len(w) >= 3 or w in self.SHORT)
        self.known = known
        self._parts: dict[str, list[str]] = {}

    def words(self, name: str) -> list[str]:
        out = name_words(name)
        return out + [p for w in out if w not in self.known for p in self.parts(w)]

    def parts(self, word: str) -> list[str]:
        """The fewest known words ``word`` is a run of (empty: none, or the word itself)."""
        found = self._parts.get(word)
        if found is None:
            n = len(word)
            best: list[list[str] | None] = [[]] + [None] * n
            for end in range(1, n + 1):
                for start in range(max(0, end - 24), end):
                    piece, before = word[start:end], best[start]
                    if before is not None and piece in self.known and \
                            (best[end] is None or len(before) + 1 < len(best[end])):
                        best[end] = before + [piece]
            found = best[n] if best[n] is not None and len(best[n]) > 1 else []
            self._parts[word] = found
        return found


def _comment_words(text: str) -> list[str]:
    return [w.lower() for w in _TOKEN.findall(text or "") if w.lower() not in STOPWORDS][:24]


def _postings(docs: list[list[int]], n_words: int) -> list[np.ndarray]:
    lists: list[list[int]] = [[] for _ in range(n_words)]
    for d, ws in enumerate(docs):
        for w in ws:
            lists[w].append(d)
    return [np.array(x, dtype=np.int64) for x in lists]


@dataclass(frozen=True)
class Join:
    """A way two relations join: ``left`` = ``right`` (``table.column`` each); ``how`` is ``foreign key`` or
    ``same name`` (a column named as the other relation's single-column key)."""

    left: str
    right: str
    how: str

    def to_dict(self) -> dict[str, str]:
        return {"left": self.left, "right": self.right, "how": self.how}


def _links(tables: list[Table], by_key: dict[str, int]) -> dict[int, list[tuple[int, Join]]]:
    """Each relation's joins to others: its foreign keys (both ways), else columns named as another
    relation's single-column primary key in the same schema (both ways)."""
    links: dict[int, list[tuple[int, Join]]] = {}
    keyed: dict[tuple[str, str], list[int]] = {}
    for i, t in enumerate(tables):
        pk = list(t.primary_key) or [c.name for c in t.columns if c.primary_key]
        if len(pk) == 1:
            keyed.setdefault((t.schema, pk[0].lower()), []).append(i)
    seen: set[tuple[int, int]] = set()
    for i, t in enumerate(tables):
        for fk in t.foreign_keys:
            j = by_key.get(fk.ref_table.lower())
            if j is None or j == i:
                continue
            for a, b in zip(fk.columns, fk.ref_columns):
                join = Join(f"{t.name}.{a}", f"{tables[j].name}.{b}", "foreign key")
                links.setdefault(i, []).append((j, join))
                links.setdefault(j, []).append((i, join))
            seen.add((min(i, j), max(i, j)))
    for i, t in enumerate(tables):
        own = {p.lower() for p in t.primary_key} | {c.name.lower() for c in t.columns if c.primary_key}
        for c in t.columns:
            low = c.name.lower()
            if low in own and len(own) == 1:
                continue
            for j in keyed.get((t.schema, low), ()):
                pair = (min(i, j), max(i, j))
                if j == i or pair in seen:
                    continue
                seen.add(pair)
                ref = tables[j]
                pk = next(c2.name for c2 in ref.columns if c2.name.lower() == low)
                join = Join(f"{t.name}.{c.name}", f"{ref.name}.{pk}", "same name")
                links.setdefault(i, []).append((j, join))
                links.setdefault(j, []).append((i, join))
    return links


# --- the answer -----------------------------------------------------------------------------------------


@dataclass
class QuestionSchema:
    """What :func:`schema_for` answers: the relations a question needs, ranked, within a budget.

    Attributes:
        tables: the relations, best first, as a query writes them (their keys: ``schema.name`` where the
            search path does not find the plain name).
        columns: the columns written, ``table.column``, table by table in that order.
        joins: the join paths between the relations written (foreign keys, else same-name keys).
        values: stored values found for the question's (and the draft's) values: ``{table.column: [...]}``.
        text: the rendering for a prompt or an agent, at most ``budget`` characters.
        budget: the budget asked for.
        relations: the relations of the catalogue.
        scores: each written relation's score (the evidence summed; rounded), for a reader.
        embedded: whether the embedder's evidence counted (an ``embedder`` model configured).
    """

    tables: list[str]
    columns: list[str]
    joins: list[Join]
    values: dict[str, list[str]]
    text: str
    budget: int
    relations: int
    scores: dict[str, float] = field(default_factory=dict)
    embedded: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"tables": list(self.tables), "columns": list(self.columns),
                "joins": [j.to_dict() for j in self.joins], "values": {k: list(v) for k, v in self.values.items()},
                "text": self.text, "budget": self.budget, "relations": self.relations,
                "scores": dict(self.scores), "embedder": self.embedded}


# --- ranking --------------------------------------------------------------------------------------------


@dataclass
class Draft:
    """What a draft query names: its relations and columns (as written), its literals, and whether it parsed."""

    tables: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    literals: list[str] = field(default_factory=list)


def read_draft(sql: str | None, dialect: str = "sqlite") -> Draft:
    """The names and string literals of a draft query (a text that does not parse: the words it writes as
    names). Never raises."""
    if not sql or not sql.strip():
        return Draft()
    try:
        named = table_names(sql, dialect)
        names = identifiers(sql, dialect)
    except (SqlmendError, ValueError, RecursionError):
        return Draft()
    literals = [m.group(1) for m in re.finditer(r"'((?:[^']|'')*)'", sql)][:16]
    literals = [x.replace("''", "'") for x in literals if 0 < len(x) <= 100]
    low_tables = {n.lower() for n in named} | {n.rpartition(".")[2].lower() for n in named}
    columns = [n for n in dict.fromkeys(names) if n.lower() not in low_tables]
    return Draft(list(named), columns[:64], list(dict.fromkeys(literals)))


class Ranking:
    """The relations' and columns' scores for one question (and draft): :func:`rank` makes it."""

    def __init__(self, index: SchemaIndex) -> None:
        self.index = index
        n, m = len(index.tables), len(index.col_name)
        self.table = np.zeros(n)
        self.column = np.zeros(m)
        self.values: dict[int, list[str]] = {}  # column -> stored values the question's values found

    def order(self) -> list[int]:
        """Relations best first (ties: catalogue order)."""
        return np.lexsort((np.arange(len(self.table)), -np.round(self.table, 6))).tolist()


def _add_terms(r: Ranking, terms: list[str], weight: float) -> None:
    """Add the evidence of question words (``weight`` each): in relations' names, in their columns' names
    (each word once per relation), and in what their schema covers."""
    idx = r.index
    n_tables, n_cols = len(idx.tables), len(idx.col_name)
    cover = np.zeros(len(idx.schemas))
    for term in terms:
        hits = idx.matches(term)
        if not hits:
            continue
        col_t = np.zeros(n_cols)
        tab_name = np.zeros(n_tables)
        sch_name = np.zeros(len(idx.schemas))
        for w, sim in hits:
            post = idx.col_post[w]
            col_t[post] = np.maximum(col_t[post], sim * idx.idf_col[w])
            post = idx.table_post[w]
            tab_name[post] = np.maximum(tab_name[post], sim * idx.idf_table[w])
            if idx.multi:
                post = idx.schema_post[w]
                sch_name[post] = np.maximum(sch_name[post], sim * idx.idf_schema[w])
        hit = np.flatnonzero(col_t)
        tab_cols = np.zeros(n_tables)
        if len(hit):
            r.column[hit] += weight * col_t[hit]
            np.maximum.at(tab_cols, idx.col_table_arr[hit], col_t[hit])
        r.table += weight * (W_TABLE_NAME * tab_name + W_COLUMNS * tab_cols)
        if idx.multi:
            either = np.maximum(tab_name, tab_cols)
            found = np.flatnonzero(either)
            term_cover = np.zeros(len(idx.schemas))
            np.maximum.at(term_cover, idx.schema_of[found], either[found])
            cover += weight * np.maximum(term_cover, W_SCHEMA_NAME * sch_name)
    if idx.multi:
        r.table += W_SCHEMA * cover[idx.schema_of]


def rank(index: SchemaIndex, question: str, draft: Draft | None = None,
         question_vector: np.ndarray | None = None) -> Ranking:
    """Score every relation and column of ``index`` for ``question`` (and ``draft``): the lexical evidence,
    the draft's names and the embedder's cosine (``question_vector``: the question embedded, with an index
    built with ``embed``). Values are added by :func:`add_values`."""
    r = Ranking(index)
    _add_terms(r, question_terms(question), 1.0)
    if draft is not None:
        _add_draft(r, draft)
    if question_vector is not None and index.embedded and len(index.col_name):
        q = np.asarray(question_vector, dtype=np.float32).reshape(-1)
        col_cos = np.round(index.col_vec @ q, 4).astype(np.float64)
        tab_cos = np.round(index.table_vec @ q, 4).astype(np.float64)
        col_gain = W_EMBED * np.maximum(0.0, col_cos - EMBED_FLOOR)
        r.column += col_gain
        best = np.zeros(len(index.tables))
        np.maximum.at(best, index.col_table_arr, col_gain)
        r.table += best + W_EMBED * np.maximum(0.0, tab_cos - EMBED_FLOOR)
    return r


def _add_draft(r: Ranking, draft: Draft) -> None:
    idx = r.index
    invented: list[str] = []
    for name in draft.tables:
        low = name.lower()
        found = [idx.by_key[low]] if low in idx.by_key else idx.relnames.get(low.rpartition(".")[2], [])
        if not found:
            matches = idx.table_names.match(name)
            if matches:
                best = matches[0].rank
                found = [idx.by_key[m.name.lower()] for m in matches if m.rank == best]
            invented.append(name)
        for i in found:
            r.table[i] += W_DRAFT_TABLE / math.sqrt(len(found))
    for name in draft.columns:
        low = name.lower()
        cols = idx.columns_named.get(low)
        weight = 1.0
        if not cols:
            matches = idx.column_names.match(name)
            if matches:
                best = matches[0].rank
                cols = [j for m in matches if m.rank == best for j in idx.columns_named.get(m.name.lower(), [])]
                weight = 0.5
            invented.append(name)
        if not cols:
            continue
        idf = math.log1p(len(idx.col_name) / len(cols))
        arr = np.array(cols, dtype=np.int64)
        r.column[arr] += W_DRAFT_COLUMN * weight * idf
        np.add.at(r.table, idx.col_table_arr[arr], W_DRAFT_COLUMN * weight * idf / 2)
    words_of = [w for name in invented for w in name_words(name) if w not in STOPWORDS]
    if words_of:
        _add_terms(r, list(dict.fromkeys(words_of)), W_DRAFT_WORDS)


# --- values ---------------------------------------------------------------------------------------------

def question_values(question: str) -> list[str]:
    """What a question may compare (:func:`sqlmend.structure.linking.value_candidates`: quoted text, runs of
    capitalized words but the first, numbers), twelve at most.

    >>> question_values("How many singers from 'United States' or France were born after 1980?")
    ['United States', 'France', '1980']
    """
    quotes = "'\"\u2018\u2019\u201c\u201d"
    return [v for v in value_candidates(question) if v[0] not in quotes and v[-1] not in quotes][:12]


def add_values(r: Ranking, found: Iterable[tuple[str, str, str, float, str]]) -> None:
    """Add stored values' evidence: ``(table key, column, stored value, weight, what was looked up)``, each a
    value of the question or the draft found stored there (the weight: less for a value stored in many
    columns). A relation gains each value's best weight once: a first and a last name both stored in it
    count twice."""
    idx = r.index
    best: dict[tuple[int, str], float] = {}
    for table, column, value, weight, wanted in found:
        i = idx.by_key.get(table.lower())
        if i is None:
            continue
        j = next((j for j in idx.table_cols[i] if idx.col_name[j].lower() == column.lower()), None)
        if j is None:
            continue
        shown = r.values.setdefault(j, [])
        if value not in shown and len(shown) < SHOWN_VALUES:
            shown.append(value)
        r.column[j] += W_VALUE * weight
        best[(i, wanted)] = max(best.get((i, wanted), 0.0), weight)
    for (i, _), weight in best.items():
        r.table[i] += W_VALUE * weight


def lookup_values(index_values: Any, wanted: list[str], limit: int = 32,
                  approx: bool = True) -> list[tuple[str, str, str, float, str]]:
    """``(table, column, stored value, weight, the value looked up)`` of each of ``wanted`` a value index
    stores (case-insensitively; with ``approx``, a value of four letters or more also approximately); a
    value not stored as a whole is looked up word by word (``Janessa Sawayn``: a first and a last name).
    The weight is 1 for a value stored in one or two columns, less for one stored in more."""
    out: list[tuple[str, str, str, float, str]] = []
    for value in wanted:
        found = _search(index_values, value, limit, approx)
        looked = [(value, found)] if found or " " not in value else \
            [(part, _search(index_values, part, limit, False)) for part in value.split()
             if len(part) >= 3 and part.lower() not in STOPWORDS]
        for what, hits in looked:
            where = {(h.table, h.column) for h in hits}
            if where:
                weight = min(1.0, 2.0 / len(where))
                out += [(h.table, h.column, str(h.value), weight, what) for h in hits]
    return out


def _search(index_values: Any, value: str, limit: int, approx: bool) -> list[Any]:
    try:
        hits = list(index_values.search(value, mode="ci", limit=limit))
        if not hits and approx and len(value) >= 4 and not value.replace(".", "").isdigit():
            hits = list(index_values.search(value, mode="approx", limit=3, score_cutoff=90.0))
    except (SqlmendError, ValueError):
        return []
    return hits


# --- choosing and writing ---------------------------------------------------------------------------------


#: A declared type written by its family (``bigint`` and ``INTEGER`` are ``int``, ``varchar(255)`` is ``text``): what
#: a query needs to know of it, in few characters. The first family whose word the type holds.
TYPE_FAMILIES = (("int", "int"), ("serial", "int"), ("char", "text"), ("text", "text"), ("clob", "text"),
                 ("string", "text"), ("double", "real"), ("float", "real"), ("real", "real"), ("numeric", "num"),
                 ("decimal", "num"), ("number", "num"), ("bool", "bool"), ("timestamp", "datetime"),
                 ("datetime", "datetime"), ("date", "date"), ("time", "time"), ("blob", "blob"), ("bytea", "blob"),
                 ("binary", "blob"), ("json", "json"))


def _type(text: str) -> str:
    """A declared type by its family (:data:`TYPE_FAMILIES`), else its first word, lower case.

    >>> _type("bigint"), _type("VARCHAR(255)"), _type("double precision"), _type("year")
    ('int', 'text', 'real', 'year')
    """
    low = (text or "").lower()
    family = next((name for word, name in TYPE_FAMILIES if word in low), None)
    return family or (low.split("(")[0].split() or [""])[0]


def _value(v: str) -> str:
    v = v if len(v) <= 40 else v[:39] + "…"
    return "'" + v.replace("'", "''") + "'"


def _bridges(index: SchemaIndex, chosen: list[int], score: np.ndarray) -> dict[int, list[int]]:
    """For each pair of ``chosen`` relations of one schema that no join links, the best relation linked to
    both (the join path): ``{the later of the pair: [bridges]}``."""
    linked = {i: {j for j, _ in index.links.get(i, ())} for i in chosen}
    out: dict[int, list[int]] = {}
    have = set(chosen)
    for b_pos, b in enumerate(chosen):
        for a in chosen[:b_pos]:
            if index.tables[a].schema != index.tables[b].schema or b in linked[a]:
                continue
            common = (linked[a] & linked[b]) - have
            if common:
                best = max(common, key=lambda k: (round(float(score[k]), 6), -k))
                out.setdefault(b, []).append(best)
                have.add(best)
    return out


def choose(r: Ranking, top: int = 6) -> list[int]:
    """The relations to write, best first: by score, each of the ``top`` best bringing the relations that
    join it to an earlier one, each of the :data:`NEIGHBOURS_OF` best bringing the relations it joins; a
    relation without evidence only from a schema already chosen."""
    idx = r.index
    order = r.order()
    firsts = [i for i in order[:top] if r.table[i] > 0]
    bridges = _bridges(idx, firsts, r.table)
    for i in firsts[:NEIGHBOURS_OF]:
        near = sorted({j for j, _ in idx.links.get(i, ()) if idx.tables[j].schema == idx.tables[i].schema},
                      key=lambda j: (-round(float(r.table[j]), 6), j))
        bridges.setdefault(i, []).extend(near[:MAX_NEIGHBOURS])
    out: list[int] = []
    seen: set[int] = set()
    schemas = set()
    for i in order:
        if i in seen:
            continue
        if r.table[i] <= 0 and idx.multi and idx.schema_of[i] not in schemas:
            continue
        out.append(i)
        seen.add(i)
        schemas.add(idx.schema_of[i])
        for b in bridges.get(i, ()):
            if b not in seen:
                out.append(b)
                seen.add(b)
    return out


def write(r: Ranking, chosen: list[int], budget: int = BUDGET) -> QuestionSchema:
    """The text of ``chosen`` (best first) within ``budget`` characters, and what it holds: the relations
    in order until the next one does not fit; one wider than its share of the budget (:data:`TABLE_SHARE`)
    keeps its keys and its columns with evidence first."""
    idx = r.index
    total = len(idx.tables)
    tables: list[int] = []
    lines: list[str] = []
    columns: list[str] = []
    shown: dict[str, list[str]] = {}
    left = budget - len(_header(total, total)) - 1
    share = max(int(budget * TABLE_SHARE), 240)
    for i in chosen:
        arrows = _arrows(idx, i)
        brief = len(tables) >= FULL_TABLES
        line, cols, vals = _line(r, i, arrows, None, brief)
        if line is None or len(line) > share or len(line) + 1 > left:
            line, cols, vals = _line(r, i, arrows, min(share, left - 1), brief)
        if line is None or len(line) + 1 > left:
            break
        lines.append(line)
        left -= len(line) + 1
        tables.append(i)
        columns += [f"{idx.tables[i].name}.{c}" for c in cols]
        shown.update(vals)
    picked = set(tables)
    joins: list[Join] = []
    for i in tables:
        joins += [join for j, join in idx.links.get(i, ()) if j in picked and join not in joins]
    text = "\n".join([_header(len(tables), total), *lines])[:budget]
    return QuestionSchema([idx.tables[i].name for i in tables], columns, joins, shown, text, budget, total,
                          {idx.tables[i].name: round(float(r.table[i]), 3) for i in tables})


def _header(written: int, total: int) -> str:
    return f"-- {written} of {total} relations (-> foreign key, ~> same name)"


def _arrows(idx: SchemaIndex, i: int) -> dict[str, str]:
    """``{column (lower case): " -> table.column"}`` of a relation's outgoing joins."""
    out: dict[str, str] = {}
    name = idx.tables[i].name
    for _, join in idx.links.get(i, ()):
        if join.left.startswith(name + ".") and join.left[len(name) + 1:].lower() not in out:
            mark = "->" if join.how == "foreign key" else "~>"
            out[join.left[len(name) + 1:].lower()] = f" {mark} {join.right}"
    return out


def _line(r: Ranking, i: int, arrows: dict[str, str], room: int | None, brief: bool = False
          ) -> tuple[str | None, list[str], dict[str, list[str]]]:
    """One relation's line: every column, or (``room``) those that fit, keys and evidence first; ``brief``:
    the columns' names without their types and key marks."""
    idx = r.index
    t = idx.tables[i]
    pk = {p.lower() for p in t.primary_key} | {c.name.lower() for c in t.columns if c.primary_key}
    parts: dict[int, str] = {}
    vals: dict[str, list[str]] = {}
    for k, (j, c) in enumerate(zip(idx.table_cols[i], t.columns)):
        text = c.name if brief else \
            c.name + (f" {_type(c.type)}" if c.type else "") + (" PK" if c.name.lower() in pk else "")
        text += arrows.get(c.name.lower(), "")
        if j in r.values:
            text += " [" + ", ".join(_value(v) for v in r.values[j]) + "]"
            vals[f"{t.name}.{c.name}"] = list(r.values[j])
        parts[k] = text
    kind = f" [{t.kind}]" if t.kind not in ("", "table") else ""
    about = f" -- {' '.join(t.comment.split())[:80]}" if t.comment else ""
    if room is None:
        return f"{t.name}{kind}({', '.join(parts.values())}){about}", [c.name for c in t.columns], vals
    cols = list(idx.table_cols[i])
    first = sorted(range(len(cols)), key=lambda k: (
        -(t.columns[k].name.lower() in pk or t.columns[k].name.lower() in arrows),
        -round(float(r.column[cols[k]]), 6), k))
    keep: list[int] = []
    size = len(t.name) + len(kind) + 2 + len(" +9999 more")
    for k in first:
        grown = len(parts[k]) + 2
        if size + grown > room:
            continue
        keep.append(k)
        size += grown
    if not keep:
        return None, [], {}
    keep.sort()
    more = len(cols) - len(keep)
    body = ", ".join(parts[k] for k in keep) + (f", +{more} more" if more else "")
    kept_vals = {k: v for k, v in vals.items() if any(k == f"{t.name}.{t.columns[x].name}" for x in keep)}
    return f"{t.name}{kind}({body})", [t.columns[k].name for k in keep], kept_vals


# --- the one call -----------------------------------------------------------------------------------------


def schema_for(index: SchemaIndex, question: str, sql: str | None = None, budget: int = BUDGET, *,
               dialect: str = "sqlite", values: Any = None,
               read_values: Callable[[list[str]], AbstractContextManager[Any]] | None = None,
               question_vector: np.ndarray | None = None) -> QuestionSchema:
    """The relations and columns ``question`` needs, ranked, written within ``budget`` characters.

    Args:
        index: the catalogue's :class:`SchemaIndex`.
        question: the question.
        sql: a draft query (optional; a failing one too: its names are evidence, invented ones included).
        budget: characters of ``.text`` at most.
        dialect: the draft's dialect.
        values: a value index over the whole catalogue (``search(value, mode=, limit=)``), searched for the
            question's values and the draft's literals (case-insensitively: exact lookups).
        read_values: else ``keys -> context manager of a value index over those relations``: the
            :data:`VALUE_CANDIDATES` best relations' values are searched (approximately too).
        question_vector: the question embedded (with an index built with ``embed``).

    Returns:
        A :class:`QuestionSchema`.
    """
    draft = read_draft(sql, dialect) if sql else None
    r = rank(index, question, draft, question_vector)
    wanted = list(dict.fromkeys(question_values(question) + (draft.literals if draft else [])))
    if wanted and values is not None:
        add_values(r, lookup_values(values, wanted, approx=False))
    elif wanted and read_values is not None:
        keys = [index.tables[i].name for i in r.order()[:VALUE_CANDIDATES]]
        with read_values(keys) as scoped:
            add_values(r, lookup_values(scoped, wanted))
    return write(r, choose(r), budget)


# --- prompts: the schema of a stage's prompt ------------------------------------------------------------

_INDEXES: OrderedDict[tuple[int, int], tuple[Schema, SchemaIndex]] = OrderedDict()
_INDEXES_LOCK = threading.Lock()


def index_of(schema: Schema) -> SchemaIndex:
    """The :class:`SchemaIndex` of a schema a stage sees (lexical), built once per schema object in this
    process (the last eight kept)."""
    key = (id(schema), len(schema.tables))
    with _INDEXES_LOCK:
        found = _INDEXES.get(key)
        if found is not None and found[0] is schema:
            _INDEXES.move_to_end(key)
            return found[1]
    index = SchemaIndex(schema.tables)
    with _INDEXES_LOCK:
        _INDEXES[key] = (schema, index)
        while len(_INDEXES) > 8:
            _INDEXES.popitem(last=False)
    return index


def whole_text(schema: Schema, keys: Iterable[str] | None = None) -> str:
    """Relations of ``schema`` (``keys``; every one by default) written one line each as :func:`schema_for`
    writes them (without values), in schema order."""
    index = index_of(schema)
    r = Ranking(index)
    keep = None if keys is None else {k.lower() for k in keys}
    return "\n".join(_line(r, i, _arrows(index, i), None)[0] or "" for i, t in enumerate(index.tables)
                     if keep is None or t.name.lower() in keep)


def whole_below() -> int:
    """:data:`WHOLE_BELOW`, or ``$SQLMEND_SCHEMA_WHOLE_BELOW`` (characters, at least 256) when set: a
    benchmark that measures prompts with the scoped schema on small databases sets it low."""
    env = os.environ.get("SQLMEND_SCHEMA_WHOLE_BELOW", "").strip()
    if not env:
        return WHOLE_BELOW
    try:
        value = int(env)
    except ValueError:
        raise ConfigError(f"SQLMEND_SCHEMA_WHOLE_BELOW={env!r} is not a number of characters") from None
    if value < 256:
        raise ConfigError(f"SQLMEND_SCHEMA_WHOLE_BELOW={value} is below 256 characters")
    return value


def prompt_tables(schema: Schema, question: str, sql: str | None = None, *, values: Any = None,
                  render: Callable[[list[str] | None], str] | None = None, budget: int | None = None,
                  dialect: str = "sqlite") -> list[str] | None:
    """The relations a model stage's prompt shows of ``schema``: None (the whole schema) when its rendering
    is shorter than ``budget`` characters (:data:`WHOLE_BELOW`: every Spider database), else the keys of
    the relations :func:`schema_for` ranks first for the question (and the draft ``sql``), as many as
    ``render`` writes within ``budget``.

    Args:
        schema: the schema the stage sees.
        question: the question.
        sql: the query under correction (None: a prompt that does not show it).
        values: the schema's value index (its values are evidence), a function that gives it (asked only
            for a schema too big), or None.
        render: ``keys -> the prompt's text of them`` (None: every relation); default :func:`whole_text`.
        budget: the threshold and the scoped schema's size at most, in characters (default
            :func:`whole_below`).
        dialect: the query's dialect.
    """
    render = render or (lambda keys: whole_text(schema, keys))
    budget = whole_below() if budget is None else budget
    if len(render(None)) < budget:
        return None
    if callable(values):
        values = values()
    index = index_of(schema)
    draft = read_draft(sql, dialect) if sql else None
    r = rank(index, question, draft)
    wanted = list(dict.fromkeys(question_values(question) + (draft.literals if draft else [])))
    if wanted and values is not None:
        add_values(r, lookup_values(values, wanted, approx=False))
    keys: list[str] = []
    for i in choose(r):
        grown = keys + [index.tables[i].name]
        if len(render(grown)) >= budget:
            break
        keys = grown
    return keys


__all__ = ["BUDGET", "Draft", "Join", "QuestionSchema", "Ranking", "SchemaIndex", "WHOLE_BELOW", "add_values",
           "choose", "index_of", "lookup_values", "prompt_tables", "question_terms", "question_values", "rank", "read_draft", "schema_for",
           "whole_below", "whole_text", "write"]

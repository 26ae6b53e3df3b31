"""Shared dataclasses of sqlmend. Every layer may import this module."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable


def json_text(value: Any, **kw: Any) -> str:
    """``value`` as JSON text that UTF-8 can always write: characters as they are, but escaped
    (``\\ud800``) when a string holds a lone surrogate (a client's ``"\\ud800"``, an undecodable
    command-line byte), which no UTF-8 file, socket or terminal takes. ``kw``: ``json.dumps``'s."""
    text = json.dumps(value, ensure_ascii=False, default=str, **kw)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, default=str, **kw)
    return text


@dataclass
class Task:
    """One correction task: a question, its database and the SQL an upstream system produced."""

    question_id: str
    db_id: str
    question: str
    sql: str
    evidence: str = ""
    gold: str | None = None  # reference SQL, when the dataset has one
    difficulty: str | None = None  # BIRD's difficulty or Spider's hardness
    db: str | None = None  # the database's path or URL (else found by db_id under a database folder)
    #: Other answers to the same question (other systems, prompts or samples): untrusted SQL, each
    #: run only when it is one read-only query; the consensus stage groups them by result.
    alternatives: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ExecResult:
    """What a database returned for one query."""

    columns: list[str]
    rows: list[tuple]
    truncated: bool = False  # more rows existed than max_rows
    elapsed: float = 0.0  # seconds
    work: int | None = None  # the engine's own count of work done (SQLite: thousands of VM instructions); None: not counted

    @property
    def empty(self) -> bool:
        return not self.rows


# --- schema ---------------------------------------------------------------


def split_ref(ref: str) -> tuple[str, str]:
    """``"table.column"`` as ``(table, column)``; the table may itself be ``schema.name``.

    >>> split_ref("singer.Name"), split_ref("hr.employees.dept")
    (('singer', 'Name'), ('hr.employees', 'dept'))
    """
    table, _, column = ref.rpartition(".")
    return table, column


@dataclass
class Column:
    name: str
    type: str = ""  # declared type as the engine reports it
    primary_key: bool = False
    not_null: bool = False
    comment: str = ""  # what the engine keeps about it (PostgreSQL's COMMENT ON, MySQL's COMMENT), "" when none


@dataclass
class ForeignKey:
    table: str
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


#: What a relation of the schema is (:attr:`Table.kind`).
RELATION_KINDS = ("table", "view", "materialized view")


@dataclass
class Table:
    """A relation of the database: a table, a view or a materialized view.

    ``name`` is the relation's key everywhere in sqlmend (rules, the value index, ``"table.column"``
    references): its plain name when an unqualified name finds it (the engine's search path, and
    every single-schema database), else ``"schema.name"`` (``qualified``). ``schema`` is the
    schema (namespace) that holds it ("" where the engine has none to tell).
    """

    name: str
    columns: list[Column] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    row_count: int | None = None
    schema: str = ""
    qualified: bool = False  # name is "schema.relname": the search path does not find it by its plain name
    kind: str = "table"  # one of RELATION_KINDS
    comment: str = ""

    @property
    def relname(self) -> str:
        """The relation's own name, without its schema."""
        return self.name[len(self.schema) + 1:] if self.qualified else self.name

    @property
    def full_name(self) -> str:
        """``schema.relname`` (the plain name where the schema is unknown)."""
        return f"{self.schema}.{self.relname}" if self.schema else self.name

    def column(self, name: str) -> Column | None:
        """Find a column by name, case-insensitively (as SQL identifiers are)."""
        low = name.lower()
        return next((c for c in self.columns if c.name.lower() == low), None)


_TABLE_FIELDS = ("name", "primary_key", "row_count", "schema", "qualified", "kind", "comment")


@dataclass
class Schema:
    tables: list[Table] = field(default_factory=list)
    dialect: str = "sqlite"
    #: The schemas an unqualified name is looked up in, in order (the engine's search path); the
    #: first table found by its plain name along it has that name as its key (:class:`Table`).
    search_path: list[str] = field(default_factory=list)

    def table(self, name: str) -> Table | None:
        """Find a table by its key (``Table.name``), case-insensitively; a ``schema.name`` also finds
        the table whose key is its plain name (``public.singer`` -> ``singer``)."""
        by_key, by_full = self._lookup()
        low = name.lower()
        found = by_key.get(low)
        if found is None and "." in low:
            found = by_full.get(low)
        return found

    def _lookup(self) -> tuple[dict[str, Table], dict[str, Table]]:
        """``({key: table}, {schema.name: table})`` lower case, the first of each name, read once per list
        of tables (a schema of hundreds of tables is asked thousands of times)."""
        stamp = (id(self.tables), len(self.tables))
        cached = self.__dict__.get("_lookup_cache")
        if cached is None or cached[0] != stamp:
            by_key: dict[str, Table] = {}
            by_full: dict[str, Table] = {}
            for t in self.tables:
                by_key.setdefault(t.name.lower(), t)
                if t.schema:
                    by_full.setdefault(t.full_name.lower(), t)
            cached = self.__dict__["_lookup_cache"] = (stamp, by_key, by_full)
        return cached[1], cached[2]

    def named(self, relname: str) -> list[Table]:
        """The relations whose own name (without schema) is ``relname``, case-insensitively, in every schema."""
        low = relname.lower()
        return [t for t in self.tables if t.relname.lower() == low]

    @property
    def schemas(self) -> list[str]:
        """The schemas that hold the tables, in the order met."""
        return list(dict.fromkeys(t.schema for t in self.tables if t.schema))

    @property
    def foreign_keys(self) -> list[ForeignKey]:
        return [fk for t in self.tables for fk in t.foreign_keys]

    def mapping(self) -> dict[str, dict[str, str]]:
        """``{table: {column: type}}``, the form sqlglot's qualifier takes."""
        return {t.name: {c.name: (c.type or "TEXT") for c in t.columns} for t in self.tables}

    def to_dict(self) -> dict[str, Any]:
        """The schema as compact JSON-able data (:meth:`from_dict` reads it back: a catalogue kept on disk):
        a table's columns as ``[name, type, primary_key, not_null, comment]`` rows."""
        return {"dialect": self.dialect, "search_path": list(self.search_path), "tables": [
            [t.name, t.schema, t.qualified, t.kind, t.comment, t.row_count, list(t.primary_key),
             [[c.name, c.type, c.primary_key, c.not_null, c.comment] for c in t.columns],
             [[fk.table, fk.columns, fk.ref_table, fk.ref_columns] for fk in t.foreign_keys]]
            for t in self.tables]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        """The schema :meth:`to_dict` wrote."""
        tables = [Table(name=name, schema=schema, qualified=qualified, kind=kind, comment=comment,
                        row_count=rows, primary_key=pk, columns=[Column(*c) for c in columns],
                        foreign_keys=[ForeignKey(*fk) for fk in keys])
                  for name, schema, qualified, kind, comment, rows, pk, columns, keys in data["tables"]]
        return cls(tables=tables, dialect=data["dialect"], search_path=list(data["search_path"]))

    def to_dict(self) -> dict[str, Any]:
        """The schema as JSON-able data (:meth:`from_dict` reads it back: a catalogue kept on disk)."""
        return {"dialect": self.dialect, "search_path": list(self.search_path), "tables": [
            {**{k: v for k, v in vars(t).items() if k in _TABLE_FIELDS},
             "columns": [dict(vars(c)) for c in t.columns],
             "foreign_keys": [dict(vars(fk)) for fk in t.foreign_keys]} for t in self.tables]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        """The schema :meth:`to_dict` wrote."""
        tables = [Table(**{**t, "columns": [Column(**c) for c in t["columns"]],
                           "foreign_keys": [ForeignKey(**fk) for fk in t["foreign_keys"]]})
                  for t in data["tables"]]
        return cls(tables=tables, dialect=data["dialect"], search_path=list(data["search_path"]))


@dataclass
class ColumnProfile:
    table: str
    column: str
    rows: int
    null_fraction: float
    distinct: int
    min: Any = None
    max: Any = None
    samples: list[Any] = field(default_factory=list)


# --- SQL edits (MIRA §3.2.2) ---------------------------------------------


@dataclass
class Edit:
    """One AST edit between two queries: ``insert`` / ``remove`` / ``replace``."""

    kind: str  # insert | remove | replace
    clause: str  # select | from | join | where | group | having | order | limit | distinct | other
    before: str | None = None  # SQL fragment in the first query (None for insert)
    after: str | None = None  # SQL fragment in the second query (None for remove)
    schema_refs: list[str] = field(default_factory=list)  # "table.column" or "table" touched
    path: str = ""  # location of the node in the tree, e.g. "select.expressions[1]"


# --- detection, guard, correction ----------------------------------------


@dataclass
class Finding:
    """Something a stage found wrong (or suspicious) in a SQL, with its evidence.

    ``fixes`` holds fixes as data (AST edits understood by the engine that
    produced them); a finding without fixes is a hint for later stages.
    """

    code: str  # stable code: a rule code ("VL01"), "detector", "memory:<item id>", ...
    error_type: str  # an id of sqlmend.taxonomy
    message: str
    severity: str = "advisory"  # "strict" (may change SQL automatically) | "advisory"
    source: str = "static"  # static | memory | detector | model
    location: str = ""  # the SQL fragment or AST path concerned
    schema_refs: list[str] = field(default_factory=list)  # "table" / "table.column"
    evidence: dict[str, Any] = field(default_factory=dict)  # what the database/schema said
    fixes: list[Any] = field(default_factory=list)
    score: float | None = None  # detector probability, when there is one

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fixes"] = [f if isinstance(f, (dict, str)) else repr(f) for f in self.fixes]
        return d

    def describe(self) -> str:
        """``error_type: message`` for a person, the type once (EX03's message starts with it).

        >>> Finding("EX03", "refused", "refused: not one read-only query").describe()
        'refused: not one read-only query'
        >>> Finding("VL01", "value_error", "singer.Country holds 'France'").describe()
        "value_error: singer.Country holds 'France'"
        """
        return f"{self.error_type}: {self.message.removeprefix(f'{self.error_type}: ')}"


@dataclass
class GuardVerdict:
    """The validate-or-retain guard's decision on one candidate rewrite (MIRA §3.3.3)."""

    accepted: bool
    reason: str  # why accepted or rejected ("result unchanged", "candidate failed: ...")
    sql: str  # the SQL to keep: the candidate if accepted, else the input

    @property
    def word(self) -> str:
        """``accepted`` or ``rejected``."""
        return "accepted" if self.accepted else "rejected"

    @property
    def why(self) -> str:
        """The reason without the verdict word the guard's acceptances start with.

        >>> GuardVerdict(True, "accepted: candidate executes and changes the result", "SELECT 1").why
        'candidate executes and changes the result'
        """
        return self.reason.removeprefix(f"{self.word}: ")

    def describe(self) -> str:
        """The verdict for a person, its word once: ``accepted: candidate executes ...``, ``rejected: ...``.

        >>> GuardVerdict(True, "accepted: candidate executes and changes the result", "SELECT 1").describe()
        'accepted: candidate executes and changes the result'
        >>> GuardVerdict(False, "result unchanged (no-op)", "SELECT 1").describe()
        'rejected: result unchanged (no-op)'
        """
        return f"{self.word}: {self.why}" if self.why else self.word


@dataclass
class StageTrace:
    """What one pipeline stage did for one task."""

    stage: str
    status: str  # "ran" | "skipped" | "failed"
    note: str = ""  # why skipped / failed, or a short summary
    findings: list[Finding] = field(default_factory=list)
    candidate: str | None = None
    verdict: GuardVerdict | None = None
    calls: int = 0  # model calls
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)  # prompts, edits, localizations, ...


@dataclass
class Correction:
    """The result of correcting one task: the SQL to use and the trace of why."""

    question_id: str
    db_id: str
    original_sql: str
    sql: str
    stages: list[StageTrace] = field(default_factory=list)
    error: str | None = None  # a per-item failure (missing database, ...); sql is then the original
    #: The item's queries: ``executed`` (run by the engine, each distinct query once) and ``reused``
    #: (calls answered from an earlier run of the same query: ``sqlmend.db.results``).
    executions: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.sql != self.original_sql

    @property
    def findings(self) -> list[Finding]:
        return [f for s in self.stages for f in s.findings]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["changed"] = self.changed
        return d


# --- what the stages talk to ----------------------------------------------


@runtime_checkable
class Database(Protocol):
    """An open, read-only, time-limited database (``sqlmend.db.connect`` returns one)."""

    dialect: str

    def execute(self, sql: str, timeout: float = ..., max_rows: int = ...) -> ExecResult: ...

    def schema(self) -> Schema: ...

    def value_index(self) -> Any: ...

    def profile(self, table: str, column: str) -> ColumnProfile: ...


@runtime_checkable
class Backend(Protocol):
    """A language model (``sqlmend.llm``): chat with optional structured output, embeddings."""

    def chat(self, messages: Any, options: Any = None, schema: Any = None, stage: str = ...) -> Any: ...

    def embed(self, texts: list[str], stage: str = ...) -> Any: ...

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


@dataclass
class Column:
    name: str
    type: str = ""  # declared type as the engine reports it
    primary_key: bool = False
    not_null: bool = False


@dataclass
class ForeignKey:
    table: str
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


@dataclass
class Table:
    name: str
    columns: list[Column] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    row_count: int | None = None

    def column(self, name: str) -> Column | None:
        """Find a column by name, case-insensitively (as SQL identifiers are)."""
        low = name.lower()
        return next((c for c in self.columns if c.name.lower() == low), None)


@dataclass
class Schema:
    tables: list[Table] = field(default_factory=list)
    dialect: str = "sqlite"

    def table(self, name: str) -> Table | None:
        """Find a table by name, case-insensitively."""
        low = name.lower()
        return next((t for t in self.tables if t.name.lower() == low), None)

    @property
    def foreign_keys(self) -> list[ForeignKey]:
        return [fk for t in self.tables for fk in t.foreign_keys]

    def mapping(self) -> dict[str, dict[str, str]]:
        """``{table: {column: type}}``, the form sqlglot's qualifier takes."""
        return {t.name: {c.name: (c.type or "TEXT") for c in t.columns} for t in self.tables}


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

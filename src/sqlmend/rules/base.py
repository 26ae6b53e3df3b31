"""The rule interface and what a rule sees (:class:`RuleContext`).

A rule is an object with a stable ``code`` (family letters + number, e.g.
``VL01``), the taxonomy id of the error it finds, a declared ``severity`` and a
``check(ctx) -> list[Finding]``. Its docstring's first line is the message shown
to users; the rest holds an *Anti-pattern* and a *Fixed* SQL example. Rules
never edit SQL: they return fixes as data (:mod:`sqlmend.sql.fixes`, the one fix engine).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from sqlmend import taxonomy
from sqlmend.errors import DatabaseError
from sqlmend.rules.analysis import QueryAnalysis
from sqlmend.rules.failures import classify
from sqlmend.rules.names import NamePlan, keyword_tree, plan as name_plan
from sqlmend.rules.probe import Probe
from sqlmend.stage import REFUSED_PREFIX, exec_error_text
from sqlmend.types import ExecResult, Finding, Schema

#: Families of rule codes and the taxonomy family each belongs to.
FAMILIES = {
    "AT": "attribute", "TB": "table", "VL": "value", "CD": "condition",
    "FN": "function", "CL": "clause", "MD": "modifier", "EX": "execution",
}


class RuleContext:
    """One query on one database, as the rules see it; everything is computed once, lazily.

    Args:
        db: an open database (``sqlmend.db.connect``).
        sql_text: the query.
        question: the natural-language question (rules may read it; none need to).
        schema: the database schema (read from ``db`` when omitted).
        timeout: seconds the query and each probe may run.
        exec_result: the query's result when the caller already has it.
        exec_error: why the query failed, when the caller already knows.
    """

    def __init__(self, db: Any, sql_text: str, question: str = "", schema: Schema | None = None,
                 timeout: float = 10.0, exec_result: ExecResult | None = None,
                 exec_error: str | None = None):
        self.db = db
        self.sql = sql_text
        self.question = question
        self.schema = schema if schema is not None else db.schema()
        self.dialect = getattr(db, "dialect", "sqlite")
        self.timeout = timeout
        self._exec: tuple[ExecResult | None, str | None] | None = (
            (exec_result, exec_error) if exec_result is not None or exec_error is not None else None)
        self._analysis: QueryAnalysis | None = None
        self.probe = Probe(db, self.schema, timeout=min(timeout, 5.0), values=lambda: self.values)
        self.memo: dict[str, Any] = {}  # results rules share (e.g. the absent literals)
        self.bounded: list[str] = []  # checks answered from a sample or stopped at their limit (the trace says)
        self._values: Any = False  # the value index, loaded on first use (None: unavailable)

    def spend(self, seconds: float, what: str) -> None:
        """Charge the rules' own work to the item's budget (``db.budget``; nothing outside an item)."""
        budget = getattr(self.db, "budget", None)
        if budget is not None:
            budget.spend(seconds, what)

    def check_bounds(self) -> None:
        """End the item here if its wall-clock deadline passed or its caller stopped waiting."""
        budget = getattr(self.db, "budget", None)
        if budget is not None:
            budget.check()

    def note_bounded(self, why: str) -> None:
        """Record a check answered from a sample or stopped at its limit (once each)."""
        if why and why not in self.bounded:
            self.bounded.append(why)

    @property
    def analysis(self) -> QueryAnalysis:
        """The parsed query with its columns resolved."""
        if self._analysis is None:
            self._analysis = QueryAnalysis(self.sql, self.schema, self.dialect)
        return self._analysis

    @property
    def names(self) -> NamePlan:
        """The names of the query the schema does not have, matched to its own (:mod:`sqlmend.rules.names`);
        computed once, and only for a query the engine refuses (empty otherwise)."""
        if "names" not in self.memo:
            failed = self.failure[0] not in ("", "refused", "timeout")
            tree, spans = self.analysis.tree if failed else None, {}
            if failed and tree is None:  # a table written as a keyword: FROM like AS T1
                tree, spans = keyword_tree(self.sql, self.dialect)
            self.memo["names"] = (name_plan(tree, self.schema, self.values, self.dialect, self.sql, spans=spans,
                                            question=self.question)
                                  if tree is not None else NamePlan())
        return self.memo["names"]

    @property
    def values(self) -> Any:
        """The database's value index (``db.value_index()``), or ``None`` when it cannot be built."""
        if self._values is False:
            try:
                self._values = self.db.value_index()
            except (DatabaseError, OSError, ValueError):
                self._values = None
        return self._values

    def _execute(self) -> tuple[ExecResult | None, str | None]:
        if self._exec is None:
            try:
                self._exec = (self.db.execute(self.sql, timeout=self.timeout, max_rows=1000), None)
            except DatabaseError as exc:  # a refusal reads "refused: ..." (never reached the engine)
                self._exec = (None, exec_error_text(exc))
        return self._exec

    @property
    def exec_result(self) -> ExecResult | None:
        """The query's result (capped at 1,000 rows), or None when it failed."""
        return self._execute()[0]

    @property
    def exec_error(self) -> str | None:
        """The engine's message when the query failed, else None."""
        return self._execute()[1]

    @property
    def refused(self) -> str | None:
        """Why the text was refused as not one read-only query (None when it was not)."""
        error = self.exec_error
        return error[len(REFUSED_PREFIX):] if error and error.startswith(REFUSED_PREFIX) else None

    @property
    def failure(self) -> tuple[str, str]:
        """``(kind, name)`` of the execution failure (``("", "")`` when the query ran;
        ``("refused", "")`` when the text is not one read-only query)."""
        if self.refused is not None:
            return ("refused", "")
        return classify(self.exec_error)


class Rule:
    """Base class of the catalogue's rules. Subclasses set the class attributes and ``check``."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""  # dotted, e.g. "value.case_variant"
    error_type: ClassVar[str] = ""
    severity: ClassVar[str] = "advisory"  # declared; strict only with measured precision >= 99.5%
    fixable: ClassVar[bool] = False
    #: The rule finds only queries the engine refuses (none of them right): a declared strict rule is
    #: strict without a measurement (the five files may hold no such query to measure it on).
    refused_only: ClassVar[bool] = False

    @property
    def family(self) -> str:
        """The family letters of the code (``VL`` for ``VL01``)."""
        return self.code[:2]

    @property
    def message(self) -> str:
        """The first line of the docstring: what the rule reports (read once per rule class)."""
        cls = type(self)
        if "_message" not in cls.__dict__:
            doc = inspect.getdoc(self) or ""
            cls._message = doc.splitlines()[0] if doc else self.code
        return cls.__dict__["_message"]

    def check(self, ctx: RuleContext) -> list[Finding]:
        """Return the findings of this rule on one query.

        Args:
            ctx: the query, its database and the shared analysis.

        Returns:
            Findings, each with evidence and (when proven) fixes as data.
        """
        raise NotImplementedError

    def finding(self, *, detail: str = "", location: str = "", schema_refs: list[str] | None = None,
                evidence: dict | None = None, fixes: list | None = None) -> Finding:
        """Build a :class:`~sqlmend.types.Finding` of this rule.

        Args:
            detail: specifics appended to the rule's message.
            location: the SQL fragment concerned.
            schema_refs: ``table`` / ``table.column`` names involved.
            evidence: what the database or schema said.
            fixes: fixes as data for :func:`sqlmend.sql.fixes.apply`.

        Returns:
            The finding (severity as declared; the catalogue may lower it).
        """
        taxonomy.get(self.error_type)  # fail loudly on a wrong id
        return Finding(code=self.code, error_type=self.error_type,
                       message=f"{self.message} {detail}".strip(), severity=self.severity,
                       source="static", location=location, schema_refs=list(schema_refs or []),
                       evidence=dict(evidence or {}), fixes=list(fixes or []))

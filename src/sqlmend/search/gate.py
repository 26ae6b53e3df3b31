"""The model gate: what a model's rewrite needs beyond the guard before it replaces a query.

The guard (:mod:`sqlmend.guard`) keeps any rewrite that runs and changes the result. For a
rewrite a rule or the search derived from database evidence that is enough; for a model's it
is not: a model asked about a correct query (a detector's false alarm) and answering wrongly
changes the result too, and the guard lets it through. Measured with a simulated model of
known quality (``sqlmend bench model-sim``, docs/benchmarks.md), that is where the model path
broke correct queries. So a rewrite that came from a model call (a stage whose trace counts
calls) is admitted only when one of these holds, checked in this order, and the trace says
which (``detail["admitted_by"]``):

1. ``original fails to run``: the engine refuses the query being rewritten (an error, not a
   time-out): it cannot be right, so no correct query is lost (and the pipeline has already held
   the rewrite to the second law, as every stage's: :class:`sqlmend.guard.SecondLaw`);

   past this check, a rewrite that drops what the question names in the query it replaces (a
   quoted value or a number the question holds, a column whose name the question spells:
   :func:`sqlmend.sql.diff.dropped_names`) is not admitted: a proof that the query is wrong says
   nothing of the rewrite, and one that drops part of the question answers another (measured:
   the model's wrong answers that a strict finding let through mostly dropped the filter or the
   table the finding was about);
2. ``strict finding``: a static rule of ``strict`` severity proves the query wrong from the
   schema and the data (the rules run again when an earlier stage rewrote the query: a finding
   about the query before that rewrite proves nothing about it now);
3. ``projection``: the rewrite returns exactly the query's rows with some of its columns dropped
   (:func:`sqlmend.matching.projection_columns`), and the trained reading of which columns a
   question asks for (:mod:`sqlmend.search.asked`, fitted on Spider train's golds) reads every
   dropped one as not asked (P(asked) below its threshold, fixed on held-out Spider-train
   databases). An extra column is real systems' most common mistake on Spider, and the verifier,
   which judges clauses, does not see it: this is the check for it;
4. ``verifier``: the trained feature verifier (Spider train) prefers the rewrite by the margin
   the search's own decision was calibrated to on Spider train (``margin_for("flagged")``, the
   decider's P(fix) where the weights ship one), or by ``margin`` when given.

Otherwise the query is kept and the trace says why. Nothing here was fitted on the
simulated model's runs or on Spider dev.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from sqlmend.matching import projection_columns
from sqlmend.rules import RuleContext, check
from sqlmend.search.asked import reading
from sqlmend.search.engine import execute_original
from sqlmend.sql.diff import dropped_names
from sqlmend.search.generators import SearchInput
from sqlmend.search.verifier import FeatureVerifier, trained_findings
from sqlmend.stage import refused_by_engine

FAILS = "original fails to run"
STRICT = "strict finding"
PROJECTION = "projection"
VERIFIER = "verifier"


@dataclass(frozen=True)
class GateVerdict:
    """Whether a model rewrite is admitted, by which check, and why."""

    admitted: bool
    by: str | None
    note: str


class ModelGate:
    """The gate of model rewrites (see the module doc).

    The verifier is read on the first model rewrite, so a pipeline without a model never loads it.

    Args:
        weights: the verifier's weights file (None: the shipped one).
        margin: the verifier's margin (None: the one calibrated on Spider train for flagged queries).
        asked: the weights of the reading of asked columns (None: the shipped ones).
    """

    def __init__(self, weights: str | None = None, margin: float | None = None, asked: str | None = None):
        self.weights, self._margin, self.asked = weights, margin, asked
        self._verifier: FeatureVerifier | None = None
        self._lock = threading.Lock()

    @property
    def verifier(self) -> FeatureVerifier:
        """The trained feature verifier (loaded once, on first use)."""
        with self._lock:
            if self._verifier is None:
                self._verifier = FeatureVerifier(self.weights)
            return self._verifier

    @property
    def margin(self) -> float:
        """The margin the verifier's preference must pass."""
        return float(self._margin) if self._margin is not None else self.verifier.margin_for("flagged")

    def check(self, ctx: Any, candidate: str, findings: list[Any]) -> GateVerdict:
        """Decide on a model's rewrite of ``ctx.sql`` that the guard accepted.

        Args:
            ctx: the stage context (:class:`sqlmend.stage.StageContext`), its ``sql`` the query rewritten.
            candidate: the rewrite.
            findings: what the earlier stages and the rewriting stage found (the static rules' findings
                are made anew when ``ctx.sql`` is no longer the task's input).

        Returns:
            The verdict.
        """
        result, error = ctx.execute()
        if result is None and refused_by_engine(error):
            return GateVerdict(True, FAILS, f"admitted: the query it replaces fails to run ({error})")
        if ctx.sql != ctx.task.sql:  # an earlier stage rewrote it: what the rules find in it now
            rule_ctx = RuleContext(ctx.db, ctx.sql, ctx.task.question, timeout=ctx.run.timeout,
                                   exec_result=result, exec_error=error)
            findings = [*check(ctx.db, ctx.sql, ctx.task.question, context=rule_ctx),
                        *(f for f in findings if f.source != "static")]
        dropped = dropped_names(ctx.sql, candidate, ctx.task.question, ctx.dialect)
        if dropped:
            return GateVerdict(False, None, f"model rewrite not admitted: it drops what the question names "
                                            f"({', '.join(dropped)})")
        strict = sorted({f.code for f in findings if f.severity == "strict" and f.source == "static"})
        if strict:
            return GateVerdict(True, STRICT, f"admitted: strict finding(s) {', '.join(strict)} prove the query wrong")
        db, run = ctx.db, ctx.run
        cand = execute_original(db, candidate, run.timeout, run.max_rows)
        projection = self.projection(ctx, result, cand.result)
        if projection:
            return GateVerdict(True, PROJECTION, f"admitted: {projection}")
        inp = SearchInput(ctx.task.question, db.schema(), db.value_index(), ctx.task.evidence or "")
        orig = execute_original(db, ctx.sql, run.timeout, run.max_rows, result, error)
        query = self.verifier.for_query(inp, orig, trained_findings(findings), ctx.dialect)
        orig.score = query.original_score
        cand.score = query.scores([cand])[0]
        flagged = bool(findings) or result is None or not result.rows  # as the search flags a query
        value = self.verifier.replace_value(query, [cand], flagged)
        rule = "P(fix)" if self.verifier.decider is not None else "score gap"
        margin = self.margin
        if value > margin:
            return GateVerdict(True, VERIFIER, f"admitted: the verifier's {rule} {value:.3f} > margin {margin:g}")
        return GateVerdict(False, None, f"model rewrite not admitted: nothing proves the query wrong and the "
                                        f"verifier's {rule} {value:.3f} <= margin {margin:g}")

    def projection(self, ctx: Any, result: Any, cand: Any) -> str | None:
        """Why the rewrite is the query without columns the question does not ask for (check 3 of the
        module doc), or None: its rows are not a projection of the query's, a result is cut at
        ``max_rows``, the query's SELECT cannot be read item by item, or the reading says a dropped
        column is asked for.

        Args:
            ctx: the stage context; ``ctx.sql`` is the query rewritten.
            result: the query's result (None: it failed).
            cand: the rewrite's result (None: it failed).
        """
        if result is None or cand is None or result.truncated or cand.truncated:
            return None
        kept = projection_columns(result.rows, cand.rows)
        if kept is None:
            return None
        read = reading(self.asked)
        probs = read.probabilities(ctx.task.question, ctx.tree(), ctx.dialect)  # the tree the item parsed once
        if probs is None or len(probs) != len(result.columns):
            return None
        dropped = [i for i in range(len(probs)) if i not in kept]  # not empty: a projection drops a column
        if max(probs[i] for i in dropped) >= read.threshold:
            return None
        names = ", ".join(f"{result.columns[i]} (P(asked) {probs[i]:.3f})" for i in dropped)
        return (f"it returns the query's rows without the column(s) {names}, which the question does not ask for "
                f"(threshold {read.threshold:.3f})")

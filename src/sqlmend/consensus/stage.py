"""The ``consensus`` stage: other answers to the question as evidence of error and as repairs.

It runs on a task that carries alternatives (``Task.alternatives``: other systems' answers, other
prompts') or, with ``consensus.samples=K`` (0, off, by default), on every task, asking the model of the
``sampler`` stage for K independent answers to the question (:mod:`sqlmend.consensus.samples`) that join
the task's alternatives, after them. Without either, a task leaves no trace and runs exactly as before. In the default pipeline it comes after the static rules and the memory, before the
detector and the search, so that what it finds reaches them:

* it runs the current SQL's alternatives (each one read-only query, else refused and never run;
  each under a work limit of its own, all under the item's one budget), groups them by result
  with the evaluator's rule and counts the vote (:func:`sqlmend.consensus.vote.consult`);
* when an earlier stage rewrote the caller's query, it also counts the vote on the query as given
  (:func:`sqlmend.consensus.vote.given_vote`: what sqlmend says of the caller's query, the rewrite
  one more voter sure of an error), from results the item already has;
* when the vote goes against the query (no alternative returns its rows, nor its rows in another
  column order), an advisory finding ``consensus`` says so ("0 of 4 alternatives return these rows;
  3 agree on others"), with P(error) as its score and the groups' SQL as its evidence, which
  flags the query for the search and the refiner;
* the groups' SQL are offered to the search as candidates (``ctx.offered``), which its verifier
  scores beside its own, and the vote is kept for the detector (``ctx.votes``);
* it replaces the query only under the decision rule: ``strict`` (the default, fixed) or ``risk``
  (a threshold calibrated by conformal risk control on a labelled history: ``risk`` and
  ``history``). The replacement passes the guard like every rewrite; the trace names the rule.

The replacement is another system's whole answer, not an edit of the query, so the pipeline's
checks of an edit (what a model's rewrite must pass) do not apply to it; the rule's own checks do:
the replacement keeps what the question names in the original (the second law), has no static
finding the original lacks, and, under the strict rule, the verifier does not prefer the original.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field, model_validator

from sqlmend.consensus.risk import History
from sqlmend.consensus.samples import STAGE as SAMPLER, ask_samples
from sqlmend.consensus.vote import ALTERNATIVE_TIMEOUT, MAX_ALTERNATIVES, STRICT, Rule, consult, given_vote
from sqlmend.errors import SqlmendError
from sqlmend.search.verifier import FeatureVerifier
from sqlmend.sql import diff
from sqlmend.stage import Offered, RunSettings, StageBase, StageContext, StageSettings, Vote
from sqlmend.types import Finding, StageTrace, Task

#: The clause where the original first differs from the alternatives' answer -> the error type the
#: finding reports (what the search's generators and the refiner's guideline are chosen by).
CLAUSE_TYPES = {"select": "attribute_mismatch", "from": "table_mismatch", "join": "table_mismatch",
                "where": "condition_error", "group": "clause_error", "having": "clause_error",
                "order": "clause_error", "limit": "modifier_error", "distinct": "modifier_error"}


class ConsensusSettings(StageSettings):
    """Options of the consensus stage (``--option consensus.KEY=VALUE``)."""

    risk: float | None = Field(None, gt=0, lt=1, description="the risk rule instead of the strict one: the expected "
                                                           "share of correct queries it may break (needs history)")
    history: str | None = Field(None, description="the labelled history the risk rule's threshold is calibrated on "
                                                  "(a file of `sqlmend bench alternatives --history-out`)")
    threshold: float | None = Field(None, description="the risk rule with this threshold on its score, given "
                                                      "directly (benchmarks); wins over risk and history")
    timeout: float = Field(ALTERNATIVE_TIMEOUT, gt=0, description="seconds of work each alternative may run "
                                                                  "(SQLite: a work limit)")
    max_alternatives: int = Field(MAX_ALTERNATIVES, ge=1, description="alternatives considered per item; the rest "
                                                                      "are reported, not run")
    decide: bool = Field(True, description="replace under the rule (false: report the vote only; `check` does so)")
    offer: bool = Field(True, description="offer the groups' SQL to the search as candidates")
    samples: int = Field(0, ge=0, le=MAX_ALTERNATIVES, description="ask the model of the `sampler` stage for this "
                                                                   "many independent answers, as alternatives (0: off)")
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="the samples' sampling temperature")
    seed: int = Field(0, description="sample i's seed is seed + i")

    @model_validator(mode="after")
    def _risk_needs_history(self) -> "ConsensusSettings":
        if self.risk is not None and self.history is None and self.threshold is None:
            raise ValueError("the risk rule needs a labelled history to calibrate its threshold on "
                             "(consensus.history=FILE, written by `sqlmend bench alternatives --history-out`)")
        return self


def rule_of(settings: ConsensusSettings) -> Rule:
    """The decision rule the settings name (the risk rule's threshold calibrated once, here).

    Raises:
        ConfigError: the history file cannot be read.
    """
    if settings.threshold is not None:
        return Rule("risk", settings.threshold, f"risk rule, threshold {settings.threshold:.4f}")
    if settings.risk is None:
        return STRICT
    history = History.load(settings.history)
    return Rule("risk", history.threshold(settings.risk), history.describe(settings.risk))


#: The share of what is left of the item's budget that its alternatives may use together: a slow or
#: endless alternative stops at its own limit and has no vote; it never ends the item.
ALTERNATIVES_SHARE = 0.5


def alternative_limit(timeout: float, budget: Any, alternatives: int) -> float:
    """Each alternative's limit: ``timeout``, or its part of :data:`ALTERNATIVES_SHARE` of what is left of
    the item's budget (``db.budget``) when that is less, so the alternatives together leave the rest of
    the item at least half of it.

    >>> from sqlmend.db.base import WorkBudget
    >>> alternative_limit(4.0, WorkBudget(24.0), 4), alternative_limit(4.0, None, 4)
    (3.0, 4.0)
    """
    if budget is None or alternatives <= 0:
        return timeout
    return max(0.0, min(timeout, ALTERNATIVES_SHARE * budget.left / alternatives))


def error_type(original: str, replacement: str, dialect: str) -> str:
    """The error type a disagreement points at: the first clause where the two queries differ."""
    try:
        edits = diff(original, replacement, dialect=dialect)
    except SqlmendError:
        edits = []
    for e in edits:
        if e.clause in CLAUSE_TYPES:
            return CLAUSE_TYPES[e.clause]
    return "clause_error"


class ConsensusStage(StageBase):
    """The alternatives' vote, a finding, candidates for later stages, and a replacement under the rule."""

    name = "consensus"
    Settings = ConsensusSettings
    replaces_query = True  # its rewrite is another answer: earlier findings about the query it replaces go

    def __init__(self, settings: ConsensusSettings | None = None, run: RunSettings | None = None):
        super().__init__(settings, run)
        self.rule = rule_of(self.settings)
        self._verifier: FeatureVerifier | None = None

    @property
    def verifier(self) -> FeatureVerifier:
        if self._verifier is None:
            self._verifier = FeatureVerifier()
        return self._verifier

    def applies(self, task: Task) -> bool:
        return bool(task.alternatives) or self.settings.samples > 0

    def run(self, ctx: StageContext) -> StageTrace:
        start = time.perf_counter()
        s = self.settings
        alternatives = list(ctx.task.alternatives)
        sampled = None
        if s.samples:
            backend = ctx.backend(SAMPLER)
            if backend is None and not alternatives:
                return StageTrace(self.name, "skipped", note=f"consensus.samples={s.samples}, but no model is "
                                                             f"configured for the {SAMPLER} stage and no alternative given")
            if backend is not None:
                sampled = ask_samples(backend, ctx.task.question, ctx.task.evidence, ctx.db.schema(), s.samples,
                                      temperature=s.temperature, seed=s.seed, dialect=ctx.dialect, db=ctx.db)
                alternatives += sampled.answers
        budget = getattr(ctx.db, "budget", None)
        used = budget.used if budget is not None else None
        result, error = ctx.execute()
        static = [f for f in ctx.findings if f.source == "static"] if ctx.sql == ctx.task.sql else None
        limit = alternative_limit(s.timeout, getattr(ctx.db, "budget", None),
                                  min(len(alternatives), s.max_alternatives))
        c = consult(ctx.db, ctx.task.question, ctx.sql, alternatives, evidence=ctx.task.evidence,
                    rule=self.rule, run=lambda text, timeout: ctx.run_query(text, timeout=timeout),
                    original_result=result, original_error=error, original_findings=static,
                    flags=sorted({f.code for f in ctx.findings}), timeout=ctx.run.timeout,
                    alternative_timeout=limit, max_rows=ctx.run.max_rows, verifier=self.verifier,
                    max_alternatives=s.max_alternatives)
        rewritten_by = ([t.stage for t in ctx.traces if t.verdict is not None and t.verdict.accepted]
                        if ctx.sql != ctx.task.sql else [])
        if rewritten_by:  # the vote on the query as given, which ran as the item's first query: answered again
            given_result, given_error = ctx.run_query(ctx.task.sql)
            c.given = given_vote(c, ctx.task.sql, given_result, given_error, rewritten_by)
        trace = StageTrace(self.name, "ran", note=c.describe())
        if c.given is not None:
            g = c.given
            trace.note += (f"; as given, before the {', '.join(g.rewritten_by)} rewrite: {g.vote.agree} of {g.vote.k} "
                           f"return its rows (P(error) {g.p_error:.3f})")
        trace.detail["consensus"] = c.to_dict()
        trace.detail["rule"] = self.rule.title
        if sampled is not None:  # the model's calls, each sample reported (a failed one too)
            trace.detail["samples"] = sampled.report
            sampled.book.to_trace(trace)
        ctx.votes[ctx.sql] = c.vote
        others = c.others()
        if s.offer:
            ctx.offered.extend(Offered(g.sql, f"alternative {g.members[0] + 1} ({g.votes} of {c.vote.k} agree)",
                                       c.alternatives[g.members[0]].result) for g in others)
        if c.against:
            top = others[0]
            trace.findings.append(Finding(
                code="consensus", error_type=error_type(ctx.sql, top.sql, ctx.dialect), severity="advisory",
                source="consensus", message=f"other answers disagree: {c.describe()}", score=round(c.p_error, 4),
                evidence={"other_answers": [{"sql": g.sql, "votes": g.votes, "rows": g.rows} for g in others[:3]],
                          "agree": c.vote.agree, "alternatives": c.vote.k, "p_error": round(c.p_error, 4)}))
        d = c.decision
        if d.replace and s.decide and d.sql is not None:
            trace.candidate = d.sql
            trace.verdict = ctx.guard(d.sql)
            trace.detail["admitted_by"] = f"consensus ({self.rule.title})"
            chosen = next(g for g in c.groups if d.member in g.members)
            ctx.votes.setdefault(d.sql, Vote(sql=d.sql, k=c.vote.k, agree=len(chosen.members)))
            trace.note += f"; replaced by the {d.rule} rule: {d.why}; {trace.verdict.describe()}"
        elif d.replace:
            trace.note += f"; the {d.rule} rule would replace it ({d.why}), but this run only reports"
        else:
            trace.note += f"; kept ({d.rule} rule): {d.why}"
        if used is not None:  # the work its queries did, as the item's budget counts it (SQLite: counted, not timed)
            trace.detail["work"] = round(budget.used - used, 6)
        trace.seconds = round(time.perf_counter() - start, 4)
        return trace


__all__ = ["CLAUSE_TYPES", "ConsensusSettings", "ConsensusStage", "error_type", "rule_of"]

"""Second opinions: other answers to the same question as evidence of error and as repairs.

:func:`consult` takes the query being corrected (the *original*) and other answers to the same
question (*alternatives*: other systems, prompts, or a model's samples), runs each alternative that
is one read-only query, groups them by result with the evaluator's rule (:func:`sqlmend.matching.
set_key`: the same rows as sets), and returns the groups, the vote and a decision: keep the
original, or replace it by a group's SQL. The consensus stage (:mod:`sqlmend.consensus.stage`)
calls it on every item that carries alternatives; a benchmark or a replay of a model's samples can
call it directly.

**The vote.** ``agree``: alternatives whose rows are the original's; the others ran and return
other rows, failed, or were refused. An alternative that a strict static rule proves wrong (a
literal the column never holds, a join that is always empty, ...) is reported but does not vote.
P(error) of the original counts the verifier as one more voter::

    P(error) = (alternatives that do not return the original's rows + (1 - P_verifier(original))) / (k + 1)

with ``k`` the alternatives given: with no alternative it is the verifier's own P(error).

**The strict rule** (the default; fixed, nothing fitted). A query is replaced only when two
independent sources of evidence say it is wrong and sqlmend's own evidence does not side with it:

1. *No alternative returns its content*: no alternative returns its rows, nor its rows in another
   column order (the benchmarks' golds fix a column order; a reordering is not evidence of error).
2. *The alternatives agree*: the largest group of voting alternatives is unique, and
   - the original fails to run (an engine error, not a time-out: it cannot be right): one vote is
     enough;
   - sqlmend suspects the original (an earlier stage's finding, an empty result, or the verifier's
     P(correct) below its ``suspect_below`` calibrated on Spider train, the search's own test):
     at least 2 votes and a strict majority of the ``k`` alternatives given;
   - sqlmend does not suspect it: at least 2 votes and a strict majority, and the verifier must
     prefer the group's answer by :data:`CLEAR_MARGIN` (tier ``majority``): agreement alone is not
     proof (the alternatives may share a reading of the question the benchmark does not);
   - otherwise the original is kept.
3. *Nothing sides with the original*, for the group member that replaces it (the first in the
   order given that passes): it has no static finding the original lacks (a literal the database
   does not store as written, ...), it keeps what the question names that the original holds
   (:func:`sqlmend.sql.diff.dropped_names`: a dropped value or column answers another question,
   the second law), and, when the original runs, the verifier does not prefer the original
   (P(original) <= P(member)); by :data:`CLEAR_MARGIN` (P(original) + margin <= P(member)) when
   only two alternatives vote for the group or sqlmend does not suspect the original: two
   alternatives can share one misreading of the question.

**The query as given.** An earlier stage may have rewritten the caller's query before the vote (a
strict static rule: ``'Dog'`` where the column stores ``'dog'``); the vote then judges the rewrite.
What sqlmend says of the query *as given* (:func:`given_vote`, what a detection benchmark scores) is
the vote on its own rows with that rewrite as one more voter sure of an error::

    P(error of the query as given) = (alternatives that do not return its rows + 1) / (k + 1)

**The risk rule** (opt-in). Every item with a candidate (the strict rule's replacement when it makes
one; else the largest voting group other than the original's rows or their reordering, unique, with
more votes than the original's side (the original itself and the alternatives agreeing with it, as
self-consistency counts: ties go to the original), with a member passing the static and
question-names checks of 3) gets a score

    score = ((votes for the candidate - alternatives returning the original's content)
             + (P_verifier(member) - P_verifier(original))) / (k + 1)          in [-1, 1],

plus 2 when the strict rule replaces (:func:`sqlmend.consensus.risk.rank`: the strict rule's
decisions come first, then the others by score), and the candidate replaces the original when its
score reaches the threshold; an original that fails to run is replaced by any candidate. The threshold is calibrated on a labelled history by conformal risk
control (:mod:`sqlmend.consensus.risk`), which bounds the expected share of correct queries broken.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np

from sqlmend import guard, rules
from sqlmend.errors import DatabaseError
from sqlmend.matching import same_up_to_columns, set_key
from sqlmend.rules.base import RuleContext
from sqlmend.search.engine import execute_original
from sqlmend.search.generators import SearchInput
from sqlmend.search.verifier import FeatureVerifier
from sqlmend.sql.answer import extract
from sqlmend.sql.diff import dropped_names
from sqlmend.consensus.risk import rank
from sqlmend.stage import Vote, exec_error_text, refused_by_engine
from sqlmend.types import ExecResult, Finding

#: How an alternative fared: it ran (``ok``), the engine refused it (``failed``), it ran past its limit
#: (``timeout``), it is not one read-only query and was never run (``refused``), it is blank (``empty``),
#: or it came past :data:`MAX_ALTERNATIVES` (``skipped``).
Status = Literal["ok", "failed", "timeout", "refused", "empty", "skipped"]

#: Alternatives considered per item at most (the others are reported, not run).
MAX_ALTERNATIVES = 16
#: Seconds of work each alternative may run (SQLite: a work limit, as the search's candidates).
ALTERNATIVE_TIMEOUT = 4.0
#: How much more the verifier must trust the replacement than the original (P(correct)) when the evidence
#: against the original is thinner: only two alternatives vote for the replacement, or nothing of sqlmend's
#: own suspects the original (the strict rule's ``majority`` tier). Fixed, not fitted: taken from a check of
#: 0 / 0.05 / 0.1 / 0.15 on Spider dev's shared files, checked again on simulated systems on Spider train
#: (docs/alternatives.md).
CLEAR_MARGIN = 0.1

Runner = Callable[[str, float], tuple[ExecResult | None, str | None]]


@dataclass
class Answer:
    """One query of the consultation (the original, or an alternative) and what running it gave."""

    index: int  # position among the alternatives (-1: the original)
    sql: str
    status: Status = "ok"
    error: str | None = None
    rows: int | None = None
    findings: list[str] = field(default_factory=list)  # static rule codes
    strict: list[str] = field(default_factory=list)  # the strict ones: the answer does not vote
    p_correct: float | None = None  # the feature verifier's P(correct) of the query alone
    result: ExecResult | None = field(default=None, repr=False)

    @property
    def votes(self) -> bool:
        """Whether it votes: it ran and no strict rule proves it wrong."""
        return self.status == "ok" and not self.strict

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "sql": self.sql, "status": self.status, "error": self.error,
                "rows": self.rows, "findings": self.findings, "strict": self.strict,
                "p_correct": None if self.p_correct is None else round(self.p_correct, 4)}


@dataclass
class Group:
    """Alternatives that return the same rows (the evaluator's set rule)."""

    members: list[int]  # indexes into the alternatives, in the order given
    voters: list[int]  # the members that vote
    rows: int
    sql: str  # its first member's SQL (the one offered as a candidate)
    original: bool = False  # returns the original's rows
    reordered: bool = False  # returns the original's rows in another column order

    @property
    def votes(self) -> int:
        return len(self.voters)

    def to_dict(self) -> dict[str, Any]:
        return {"members": self.members, "votes": self.votes, "rows": self.rows, "sql": self.sql,
                "original": self.original, "reordered": self.reordered}


@dataclass
class Decision:
    """Keep the original or replace it, by which rule and why."""

    replace: bool
    rule: str  # "strict" or "risk"
    why: str
    sql: str | None = None  # the replacement
    member: int | None = None  # which alternative it is
    tier: str = ""  # strict: "fails" | "suspect" | "majority"; risk: "fails" | "score"
    score: float | None = None  # the risk rule's score of the candidate (None: no candidate)
    threshold: float | None = None  # the risk rule's threshold

    def to_dict(self) -> dict[str, Any]:
        return {"replace": self.replace, "rule": self.rule, "why": self.why, "sql": self.sql, "member": self.member,
                "tier": self.tier, "score": None if self.score is None else round(self.score, 4),
                "threshold": self.threshold}


@dataclass
class Consensus:
    """What the alternatives say about one query: every answer, the groups, the vote, the decision."""

    original: Answer
    alternatives: list[Answer]
    groups: list[Group]
    vote: Vote
    suspect: list[str]  # why sqlmend suspects the original (empty: it does not)
    decision: Decision
    candidate: int | None = None  # the alternative the risk rule scored (its score: decision.score)
    given: "Given | None" = None  # the vote on the query as given, when an earlier stage rewrote it

    @property
    def p_error(self) -> float:
        """P(error) of the original: the vote with the verifier as one more voter."""
        return self.vote.p_error(1.0 - (self.original.p_correct if self.original.p_correct is not None else 0.5))

    @property
    def against(self) -> bool:
        """Whether the vote goes against the original: no alternative returns its content and at least
        one voting alternative returns other rows."""
        return not any(g.original or g.reordered for g in self.groups) and any(g.votes for g in self.groups)

    def others(self) -> list[Group]:
        """The groups that return other rows than the original's (reorderings of them left out), most
        votes first, then in the order given: the candidates offered to later stages."""
        return sorted((g for g in self.groups if not (g.original or g.reordered)),
                      key=lambda g: (-g.votes, g.members[0]))

    def describe(self) -> str:
        """The vote in words: ``0 of 4 alternatives return these rows; 3 agree on others (1 refused)``."""
        k, agree = self.vote.k, self.vote.agree
        text = f"{agree} of {k} alternative{'s' if k != 1 else ''} return{'s' if k == 1 else ''} these rows"
        reordered = sum(len(g.members) for g in self.groups if g.reordered)
        if reordered:
            text += f" ({reordered} in another column order)"
        others = self.others()
        if others and others[0].votes > 1:
            text += f"; {others[0].votes} agree on others"
        elif others:
            n = sum(len(g.members) for g in others)
            text += f"; {n} return{'s' if n == 1 else ''} other rows" + (", no two alike" if n > 1 else "")
        off = {s: sum(1 for a in self.alternatives if a.status == s) for s in ("refused", "failed", "timeout", "empty",
                                                                                  "skipped")}
        off["proven wrong"] = sum(1 for a in self.alternatives if a.status == "ok" and a.strict)
        extra = ", ".join(f"{n} {s}" for s, n in off.items() if n)
        return text + (f" ({extra})" if extra else "")

    def to_dict(self) -> dict[str, Any]:
        return {"vote": self.describe(), "k": self.vote.k, "agree": self.vote.agree,
                "p_error": round(self.p_error, 4), "suspect": self.suspect, "original": self.original.to_dict(),
                "alternatives": [a.to_dict() for a in self.alternatives],
                "groups": [g.to_dict() for g in self.groups], "decision": self.decision.to_dict(),
                "candidate": self.candidate, **({"given": self.given.to_dict()} if self.given else {})}


@dataclass
class Given:
    """The vote on the query as the caller gave it, when an earlier stage rewrote it before the vote."""

    vote: Vote  # its ``sql`` is the query as given
    rewritten_by: list[str]  # the stages whose rewrite the guard accepted
    error: str | None = None  # why it did not run (it then agrees with no alternative)

    @property
    def p_error(self) -> float:
        """The vote with the rewrite as one more voter sure of an error (see the module doc)."""
        return self.vote.p_error(1.0)

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.vote.sql, "k": self.vote.k, "agree": self.vote.agree, "p_error": round(self.p_error, 4),
                "rewritten_by": self.rewritten_by, "error": self.error}


def given_vote(c: Consensus, sql: str, result: ExecResult | None, error: str | None,
               rewritten_by: list[str]) -> Given:
    """The alternatives' vote on the query as given (its rows by the evaluator's set rule), from the
    results the consultation already has (a group's rows are its first member's): nothing runs again.

    >>> from sqlmend.types import ExecResult
    >>> rows = lambda *v: ExecResult(columns=["n"], rows=[(x,) for x in v])
    >>> a = [Answer(0, "SELECT 2", result=rows(2)), Answer(1, "SELECT 0", result=rows(0))]
    >>> groups = [Group([0], [0], 1, "SELECT 2", original=True), Group([1], [1], 1, "SELECT 0")]
    >>> c = Consensus(Answer(-1, "SELECT 2", result=rows(2)), a, groups, Vote("SELECT 2", 2, 1), [],
    ...               Decision(False, "strict", ""))
    >>> g = given_vote(c, "SELECT 0", rows(0), None, ["static"])
    >>> g.vote.agree, round(g.p_error, 3)
    (1, 0.667)
    """
    key = None if result is None else set_key(result.rows)
    agree = sum(len(g.members) for g in c.groups
                if key is not None and set_key(c.alternatives[g.members[0]].result.rows) == key)
    return Given(Vote(sql=sql, k=c.vote.k, agree=agree), rewritten_by, error)


# --- the rules ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """Which decision rule replaces: ``strict`` (the default), or ``risk`` with its calibrated threshold."""

    name: Literal["strict", "risk"] = "strict"
    threshold: float | None = None  # risk: replace when the candidate's score reaches it
    label: str = ""  # how the trace names it ("risk 0.01 (threshold 0.42, 190 correct history queries)")

    @property
    def title(self) -> str:
        return self.label or self.name


STRICT = Rule()


def _not_siding(original: Answer, member: Answer, question: str, dialect: str, verifier_check: bool,
                margin: float = 0.0) -> list[str]:
    """Why the member cannot replace the original (empty: nothing sides with the original); with
    ``margin``, the verifier must prefer the member by that much."""
    why = []
    new = sorted(set(member.findings) - set(original.findings))
    if new:
        why.append(f"static finding(s) {', '.join(new)} on the alternative, not on the original")
    dropped = dropped_names(original.sql, member.sql, question, dialect)
    if dropped:
        why.append(f"it drops what the question names ({', '.join(dropped)})")
    p_original, p_member = original.p_correct or 0.0, member.p_correct or 0.0
    if verifier_check and p_original + margin > p_member:
        why.append(f"the verifier prefers the original ({p_original:.3f} > {p_member:.3f})" if p_original > p_member
                   else f"the verifier does not prefer it by {margin:g} ({p_member:.3f} vs {p_original:.3f})")
    return why


def _top(groups: list[Group]) -> tuple[Group | None, str]:
    """The unique largest voting group other than the original's content, or why there is none."""
    voting = [g for g in groups if g.votes and not (g.original or g.reordered)]
    if not voting:
        return None, "no voting alternative returns other rows"
    voting.sort(key=lambda g: (-g.votes, g.members[0]))
    if len(voting) > 1 and voting[1].votes == voting[0].votes:
        return None, f"the alternatives split ({voting[0].votes} vs {voting[1].votes} votes)"
    return voting[0], ""


def _strict(c: Consensus, question: str, dialect: str, fails: bool) -> Decision:
    k = c.vote.k
    content = sum(len(g.members) for g in c.groups if g.original or g.reordered)
    if content:
        return Decision(False, "strict", f"{content} of {k} alternative{'s' if k != 1 else ''} agree with it "
                                         "(its rows, in some column order)")
    top, why = _top(c.groups)
    if top is None:
        return Decision(False, "strict", why)
    margin = 0.0
    if fails:
        tier = "fails"
    elif top.votes < 2 or 2 * top.votes <= k:
        if c.suspect:
            return Decision(False, "strict", f"sqlmend suspects the original ({'; '.join(c.suspect)}) but only "
                                             f"{top.votes} of {k} alternatives agree on other rows (the rule needs 2 "
                                             "and a majority)")
        return Decision(False, "strict", f"{top.votes} of {k} alternatives agree on other rows, but nothing of "
                                         "sqlmend's own suspects the original")
    elif c.suspect:
        tier = "suspect"
        margin = CLEAR_MARGIN if top.votes == 2 else 0.0
    else:
        tier, margin = "majority", CLEAR_MARGIN
    reasons = []
    for i in top.voters:
        member = c.alternatives[i]
        against = _not_siding(c.original, member, question, dialect, verifier_check=not fails, margin=margin)
        if not against:
            lead = ("the original fails to run" if fails else
                    f"sqlmend suspects the original ({'; '.join(c.suspect)})" if tier == "suspect" else
                    f"the verifier prefers their answer by {CLEAR_MARGIN:g} or more")
            return Decision(True, "strict", f"{lead} and {top.votes} of {k} alternatives agree on other rows",
                            sql=member.sql, member=i, tier=tier)
        reasons.append(f"alternative {i + 1}: {'; '.join(against)}")
    return Decision(False, "strict", "the evidence sides with the original: " + "; ".join(reasons))


def _raw_score(c: Consensus, top: Group, member: Answer) -> float:
    content = sum(len(g.members) for g in c.groups if g.original or g.reordered)
    return ((top.votes - content) + ((member.p_correct or 0.0) - (c.original.p_correct or 0.0))) / (c.vote.k + 1)


def _risk_candidate(c: Consensus, question: str, dialect: str, strict: Decision,
                    fails: bool) -> tuple[int | None, float | None]:
    """The risk rule's candidate (an alternative's index) and its score (None: none): the strict rule's
    replacement when it makes one, ranked above every other (:func:`sqlmend.consensus.risk.rank`); else
    a group the majority of all the answers backs, as self-consistency counts them (more votes than
    the original and the alternatives that agree with it: ties go to the original), when the original
    runs."""
    voting = [g for g in c.groups if g.votes and not (g.original or g.reordered)]
    if not voting:
        return None, None
    voting.sort(key=lambda g: (-g.votes, g.members[0]))
    if len(voting) > 1 and voting[1].votes == voting[0].votes:
        return None, None
    top = voting[0]
    if strict.replace and strict.member is not None:
        return strict.member, rank(_raw_score(c, top, c.alternatives[strict.member]), True)
    content = sum(len(g.members) for g in c.groups if g.original or g.reordered)
    if not fails and top.votes <= content + 1:  # the original's side, itself included, is as large
        return None, None
    for i in top.voters:
        member = c.alternatives[i]
        if not _not_siding(c.original, member, question, dialect, verifier_check=False):
            return i, rank(_raw_score(c, top, member), False)
    return None, None


def _risk(c: Consensus, rule: Rule, fails: bool, score: float | None) -> Decision:
    i = c.candidate
    if i is None:
        return Decision(False, "risk", "no candidate: no unique largest group of voting alternatives with other rows "
                                       "passes the static and question checks", threshold=rule.threshold)
    member = c.alternatives[i]
    if fails:
        return Decision(True, "risk", "the original fails to run", sql=member.sql, member=i, tier="fails",
                        score=score, threshold=rule.threshold)
    assert score is not None
    if rule.threshold is not None and score >= rule.threshold:
        return Decision(True, "risk", f"the candidate's score {score:.3f} >= the threshold {rule.threshold:.3f} "
                                      f"({rule.title})", sql=member.sql, member=i, tier="score", score=score,
                        threshold=rule.threshold)
    return Decision(False, "risk", f"the candidate's score {score:.3f} < the threshold "
                                   f"{'(none)' if rule.threshold is None else f'{rule.threshold:.3f}'} ({rule.title})",
                    score=score, threshold=rule.threshold)


# --- the consultation -------------------------------------------------------------------------


def _runner(db: Any, max_rows: int) -> Runner:
    def run(text: str, timeout: float) -> tuple[ExecResult | None, str | None]:
        try:
            return db.execute(text, timeout=timeout, max_rows=max_rows), None
        except DatabaseError as exc:
            return None, exec_error_text(exc)
    return run


def _judge(db: Any, answer: Answer, question: str, inp: SearchInput, verifier: FeatureVerifier, timeout: float,
           max_rows: int, findings: list[Finding] | None = None) -> list[float]:
    """The static findings of one answer, from its result (not run again), and its feature vector for the
    verifier (every answer's scored at once: :func:`_score`)."""
    if findings is None:
        ctx = RuleContext(db, answer.sql, question, timeout=timeout, exec_result=answer.result,
                          exec_error=answer.error)
        findings = rules.check(db, answer.sql, question, context=ctx)
    answer.findings = sorted({f.code for f in findings})
    answer.strict = sorted({f.code for f in findings if f.severity == "strict"})
    orig = execute_original(db, answer.sql, timeout, max_rows, answer.result, answer.error)
    return verifier.for_query(inp, orig, findings, getattr(db, "dialect", "sqlite")).base[0]


def _score(verifier: FeatureVerifier, judged: list[tuple[Answer, list[float]]]) -> None:
    """Every answer's P(correct) by the verifier, in one pass over its trees."""
    if judged:
        p = verifier.model.proba(np.asarray([v for _, v in judged], dtype=np.float64))
        for (answer, _), value in zip(judged, p.tolist()):
            answer.p_correct = float(value)


def consult(db: Any, question: str, original: str, alternatives: list[str], *, evidence: str = "",
            rule: Rule = STRICT, run: Runner | None = None, original_result: ExecResult | None = None,
            original_error: str | None = None, original_findings: list[Finding] | None = None,
            flags: list[str] = (), timeout: float = 30.0, alternative_timeout: float = ALTERNATIVE_TIMEOUT,
            max_rows: int = 10_000, verifier: FeatureVerifier | None = None,
            max_alternatives: int = MAX_ALTERNATIVES) -> Consensus:
    """Run the alternatives, group them by result, count the vote and decide (see the module doc).

    Args:
        db: the open database (read-only; every query it runs draws on the item's budget).
        question: the question all the answers answer.
        original: the query being corrected.
        alternatives: other answers to the question (untrusted: refused unless one read-only query).
        evidence: the question's external knowledge, if any.
        rule: the decision rule (:data:`STRICT`, or a risk :class:`Rule` with its threshold).
        run: ``(sql, timeout) -> (result, error)``: how a query runs (the stage's context); default:
            ``db.execute`` with ``max_rows``.
        original_result, original_error: the original's execution when the caller has it.
        original_findings: the static rules' findings on the original when the caller has them.
        flags: what earlier stages flagged on the original (finding codes): sqlmend suspects it.
        timeout: seconds the original and the static rules' probes may run.
        alternative_timeout: seconds of work each alternative may run (and each probe of the static rules
            on it).
        max_rows: rows fetched per query.
        verifier: the feature verifier (default: the shipped one).
        max_alternatives: alternatives considered at most.

    Returns:
        The :class:`Consensus`.
    """
    run = run or _runner(db, max_rows)
    verifier = verifier or FeatureVerifier()
    dialect = getattr(db, "dialect", "sqlite")
    inp = SearchInput(question, db.schema(), db.value_index(), evidence or "")
    if original_result is None and original_error is None:
        original_result, original_error = run(original, timeout)
    orig = Answer(-1, original, "ok" if original_result is not None else "failed", original_error,
                  None if original_result is None else len(original_result.rows), result=original_result)
    judged = [(orig, _judge(db, orig, question, inp, verifier, timeout, max_rows, original_findings))]
    answers: list[Answer] = []
    for i, text in enumerate(alternatives):
        if isinstance(text, str) and (found := extract(text, dialect)) is not None:
            text = found.sql  # a model's raw answer (a fence, a sentence): its SQL, as the input's (EX05)
        a = Answer(i, text if isinstance(text, str) else "")
        if i >= max_alternatives:
            a.status, a.error = "skipped", f"past the first {max_alternatives} alternatives"
        elif not isinstance(text, str) or not text.strip():
            a.status, a.error = "empty", "empty SQL"
        elif (problem := guard.read_only_problem(text, dialect, getattr(db, "allow_functions", frozenset()))):
            a.status, a.error = "refused", f"refused: {problem}; never run"
        else:
            a.result, a.error = run(text, alternative_timeout)
            if a.result is None:
                a.status = "failed" if refused_by_engine(a.error) else "timeout"
            else:
                a.rows = len(a.result.rows)
                judged.append((a, _judge(db, a, question, inp, verifier, alternative_timeout, max_rows)))
        answers.append(a)
    _score(verifier, judged)
    fails = original_result is None and refused_by_engine(original_error)
    okey = None if original_result is None else set_key(original_result.rows)
    groups: dict[Any, Group] = {}
    for a in answers:
        if a.status != "ok":
            continue
        key = set_key(a.result.rows)
        g = groups.get(key)
        if g is None:
            same = key == okey
            g = groups[key] = Group([], [], len(a.result.rows), a.sql, original=same,
                                    reordered=not same and original_result is not None
                                    and same_up_to_columns(original_result.rows, a.result.rows))
        g.members.append(a.index)
        if a.votes:
            g.voters.append(a.index)
    group_list = list(groups.values())
    agree = sum(len(g.members) for g in group_list if g.original)
    suspect = list(flags)
    if original_result is None:
        suspect.append(f"it fails to run ({original_error})")
    elif not original_result.rows:
        suspect.append("empty result")
    if orig.p_correct is not None and orig.p_correct < verifier.suspect_below:
        suspect.append(f"verifier {orig.p_correct:.3f} < {verifier.suspect_below:g}")
    vote = Vote(sql=original, k=len(alternatives), agree=agree)
    c = Consensus(orig, answers, group_list, vote, suspect, Decision(False, rule.name, ""))
    strict = _strict(c, question, dialect, fails)
    c.candidate, score = _risk_candidate(c, question, dialect, strict, fails)
    c.decision = _risk(c, rule, fails, score) if rule.name == "risk" else strict
    c.decision.score = score
    return c

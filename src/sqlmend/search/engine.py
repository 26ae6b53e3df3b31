"""Bounded, error-guided repair search: generate edited candidates, run them, keep distinct results.

Order of work for one query:

1. generators of the error types that earlier stages located (``findings``)
   run first, the rest after them (with no finding, every generator at every
   node it applies to);
2. each one-edit candidate is rendered, passes the read-only check on its tree
   (``sql.check_read_only_tree``), runs under the time limit, and is kept only
   if its result differs from the original's and from every kept candidate's
   (deduplicated by result, as sets of rows);
3. the best ``expand`` one-edit candidates (by the verifier when one is given,
   else in generation order) get a second edit;
4. when the original fails to run, up to ``expand_failing`` one-edit candidates
   that still fail get a second edit too (any generator, the first one's included:
   two ambiguous columns need two qualifications), those whose error differs
   from the original's first, as the first edit then mended something;
5. the search stops at ``beam`` executed candidates, or when its work reaches ``budget``
   seconds as :data:`COST` estimates them.

The budget is counted in work, not read off the clock: candidates generated, candidates
executed, the engine's own count of the work each execution did (SQLite's virtual-machine
instructions, :attr:`~sqlmend.types.ExecResult.work`) and candidates ranked, each at the cost
:data:`COST` gives it; each candidate's own limit (``timeout``) is a work limit on SQLite too
(:data:`sqlmend.db.base.WORK_PER_SECOND`). The same query on the same database then gets the
same candidates on a busy machine as on an idle one, in a shard as in the whole run.
``max_seconds`` of wall-clock time is only a safety net: past it the search ends the item with
:class:`~sqlmend.errors.DeadlineExceeded` ("timed out"), never with fewer candidates. An engine
that counts no work (PostgreSQL, DuckDB) adds the seconds its queries took instead and stops at
``max_seconds`` (``stopped="time"``): there the candidates can depend on the machine's load.

Within a pipeline item each generated candidate also draws its :data:`COST` on the item's budget
(``db.budget``, :meth:`~sqlmend.db.base.WorkBudget.spend`), which checks the item's wall-clock deadline
and its caller's cancellation between candidates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from sqlmend import sql as sqlmod
from sqlmend.errors import DatabaseError, DeadlineExceeded, SqlError
from sqlmend.search.generators import Generator, SearchInput, all_generators
from sqlmend.sql.schema import quote_built_names
from sqlmend.stage import exec_error_text
from sqlmend.types import ExecResult, Finding


@dataclass
class Executed:
    """One query of the search (the original or a candidate) with what running it gave."""

    sql: str
    edits: list[str] = field(default_factory=list)  # labels of the edits from the original
    generators: list[str] = field(default_factory=list)
    result: ExecResult | None = None
    error: str | None = None
    tree: Any = None
    score: float | None = None

    @property
    def rows(self) -> int:
        return len(self.result.rows) if self.result is not None else -1

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "edits": self.edits, "generators": self.generators, "rows": self.rows,
                "error": self.error, "score": None if self.score is None else round(self.score, 4)}


#: Estimated seconds of each unit of search work (see the module doc): a candidate generated
#: (its generator's share, rendered, checked, deduplicated), a candidate executed (the call and
#: its result's key), one ``work`` unit of an execution (1,000 SQLite VM instructions), a
#: first-edit candidate ranked for a second edit. Fitted by non-negative least squares on the
#: unbounded searches of 391 Spider-train golds on this project's 2-core machine (``sqlmend bench
#: search-cost --questions 400``, R² 0.945; executed and ranked candidates come with generated
#: ones, and their share went to it); docs/history.md, "The search's budget counts work".
COST = {"generated": 0.001158, "executed": 0.0, "work": 0.000038, "ranked": 0.0}


@dataclass
class SearchSettings:
    """Bounds of one search."""

    beam: int = 200  # executed candidates at most
    expand: int = 6  # one-edit candidates that get a second edit
    two_edits: bool = True
    budget: float = 0.3  # seconds of search per query, as COST estimates the work done
    max_seconds: float = 60.0  # wall-clock safety net (see the module doc): ~100x the budget's estimate
    timeout: float = 4.0  # limit per candidate execution (work on SQLite: 100,000 units of db.base.WORK_PER_SECOND)
    max_rows: int = 2000
    max_per_node: int = 5
    expand_failing: int = 6  # one-edit candidates that still fail and get a second edit (original failing)


@dataclass
class SearchResult:
    """The original and the distinct executed candidates, with counts."""

    original: Executed
    candidates: list[Executed]
    generated: int = 0
    executed: int = 0
    failed: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    stopped: str = ""  # why the search stopped early ("beam", "budget", "time"), "" when exhausted
    work: int = 0  # the engine's work units of the executions (see COST)
    cost: float = 0.0  # the estimated seconds the budget was counted in
    held: int = 0  # candidates ``admit`` held back (their results stay free for another candidate)
    held_back: list[dict] = field(default_factory=list)  # the first of them: {"sql", "why"}


def result_key(result: ExecResult) -> tuple:
    """A hashable key of a result as a set of rows (the execution-accuracy rule)."""
    rows = set()
    for r in result.rows:
        rows.add(tuple(int(v) if isinstance(v, float) and v.is_integer() else v for v in r))
    try:
        return len(result.columns), frozenset(rows)
    except TypeError:
        return len(result.columns), frozenset(map(repr, rows))


def order_generators(findings: Iterable[Finding], generators: Iterable[Generator] | None = None) -> list[Generator]:
    """Generators of the located error types first, then the others (catalogue order within each)."""
    gens = list(generators if generators is not None else all_generators())
    located = {f.error_type for f in findings}
    first = [g for g in gens if located & set(g.error_types)]
    return first + [g for g in gens if g not in first]


class _Runner:
    def __init__(self, db: Any, original: Executed, settings: SearchSettings, deadline: float,
                 admit: Callable[[str], str | None] | None = None):
        self.db = db
        self.admit = admit
        self.held: list[dict] = []
        self.settings = settings
        self.deadline = deadline  # the wall-clock bound (max_seconds)
        self.dialect = getattr(db, "dialect", "sqlite")
        self.seen_sql = {original.sql.strip()}
        self.seen = {result_key(original.result)} if original.result is not None else set()
        self.out: list[Executed] = []
        self.failing: list[Executed] = []  # candidates that failed to run (kept only when asked)
        self.keep_failing = 0
        self.generated = self.executed = self.failed = self.duplicates = self.work = self.ranked = 0
        self.uncounted = 0.0  # seconds of executions on an engine that counts no work
        self.counts_work = db.last_work() is not None  # the engine counts work: the clock is a safety net
        self.stopped = ""
        self.item_budget = getattr(db, "budget", None)  # the item's (None outside a pipeline item)

    @property
    def cost(self) -> float:
        """The work so far, in the seconds :data:`COST` estimates for it."""
        return (self.generated * COST["generated"] + self.executed * COST["executed"]
                + self.work * COST["work"] + self.ranked * COST["ranked"] + self.uncounted)

    def full(self) -> bool:
        if self.executed >= self.settings.beam:
            self.stopped = "beam"
            return True
        if self.cost > self.settings.budget:
            self.stopped = "budget"
            return True
        if time.perf_counter() > self.deadline:
            if self.counts_work:
                raise DeadlineExceeded(f"timed out: the repair search ran past its wall-clock safety "
                                       f"net of {self.settings.max_seconds:g}s")
            self.stopped = "time"
            return True
        return False

    def _count(self, started: float) -> None:
        """Add the last execution's work (run or failed); its seconds when the engine counts none."""
        work = self.db.last_work()
        if work is None:
            self.uncounted += time.perf_counter() - started
        else:
            self.work += work

    def run(self, base: Executed, gens: list[Generator], inp: SearchInput) -> None:
        for gen in gens:
            try:
                produced = list(gen(base.tree, inp))
            except Exception:  # a generator tripping on an odd tree skips it, never stops the search
                continue
            for tree, label in produced:
                if self.full():
                    return
                self.generated += 1
                quote_built_names(tree, inp.schema)  # PostgreSQL's mixed-case names, as stored
                if self.item_budget is not None:  # the item's budget counts the search's own work too
                    self.item_budget.spend(COST["generated"], "the search's candidates")
                try:
                    text = sqlmod.render(tree, dialect=self.dialect)
                except SqlError:
                    continue
                if text.strip() in self.seen_sql:
                    continue
                self.seen_sql.add(text.strip())
                self.executed += 1
                started = time.perf_counter()
                try:
                    res = self.db.execute_parsed(tree, text, timeout=self.settings.timeout,
                                                 max_rows=self.settings.max_rows)
                except (DatabaseError, SqlError) as exc:
                    self._count(started)
                    self.failed += 1
                    if len(self.failing) < self.keep_failing:
                        self.failing.append(Executed(text, base.edits + [label], base.generators + [gen.name],
                                                     error=exec_error_text(exc) or type(exc).__name__,
                                                     tree=tree))
                    continue
                self._count(started)
                if not res.columns:
                    continue
                why = self.admit(text) if self.admit is not None else None
                if why:  # held back: its result stays free for a candidate the caller admits
                    self.held.append({"sql": text, "why": why})
                    continue
                key = result_key(res)
                if key in self.seen:
                    self.duplicates += 1
                    continue
                self.seen.add(key)
                self.out.append(Executed(text, base.edits + [label], base.generators + [gen.name], res,
                                         tree=tree))


def execute_original(db: Any, text: str, timeout: float, max_rows: int,
                     result: ExecResult | None = None, error: str | None = None) -> Executed:
    """The original query as an :class:`Executed` (parsed and run unless given)."""
    orig = Executed(text, result=result, error=error)
    dialect = getattr(db, "dialect", "sqlite")
    try:
        orig.tree = sqlmod.parse(text, dialect=dialect)
    except SqlError as exc:
        orig.error = orig.error or f"parse: {exc}"
        return orig
    if orig.result is None and orig.error is None:
        try:
            orig.result = db.execute_parsed(orig.tree, text, timeout=timeout, max_rows=max_rows)
        except (DatabaseError, SqlError) as exc:
            orig.error = exec_error_text(exc) or type(exc).__name__
    return orig


def search(db: Any, original: Executed, inp: SearchInput, findings: Iterable[Finding] = (),
           settings: SearchSettings | None = None,
           rank: Callable[[Executed, list[Executed]], list[float]] | None = None,
           admit: Callable[[str], str | None] | None = None) -> SearchResult:
    """Search one- and two-edit repairs of ``original`` (see the module doc).

    Args:
        db: the open database.
        original: the query with its tree and result (:func:`execute_original`).
        inp: what generators read about the question and schema.
        findings: earlier stages' findings; their error types order the generators.
        settings: the bounds.
        rank: ``(original, candidates) -> scores``: which one-edit candidates get a second edit.
        admit: ``candidate SQL -> why not`` (None: admitted): a candidate that runs but is not admitted
            is held back (counted in ``held``), so that another candidate with its result is kept instead
            (the search stage's second law for an original the engine refuses).

    Returns:
        The :class:`SearchResult` (no candidate when the original does not parse).
    """
    settings = settings or SearchSettings()
    start = time.perf_counter()
    if original.tree is None:
        return SearchResult(original, [], seconds=time.perf_counter() - start)
    inp.max_per_node = settings.max_per_node
    gens = order_generators(findings)
    runner = _Runner(db, original, settings, start + settings.max_seconds, admit)
    failed = original.result is None
    if failed and settings.two_edits:
        runner.keep_failing = 50 if settings.expand_failing else 0
    runner.run(original, gens, inp)
    mended = sorted(runner.failing, key=lambda c: c.error == original.error)  # stable: other errors first
    runner.keep_failing = 0  # second edits that fail are not expanded again
    if settings.two_edits and runner.out and not runner.full():
        firsts = list(runner.out)
        if rank is not None:
            scores = rank(original, firsts)
            runner.ranked += len(firsts)
            order = sorted(range(len(firsts)), key=lambda i: -scores[i])
            for i, s in enumerate(scores):
                firsts[i].score = s
        else:
            order = list(range(len(firsts)))
        for i in order[: settings.expand]:
            if runner.full():
                break
            base = firsts[i]
            runner.run(base, [g for g in gens if g.name != base.generators[-1]], inp)
    if settings.two_edits and failed:
        for base in mended[: settings.expand_failing]:
            if runner.full():
                break
            runner.run(base, gens, inp)
    return SearchResult(original, runner.out, runner.generated, runner.executed, runner.failed,
                        runner.duplicates, time.perf_counter() - start, runner.stopped, runner.work,
                        round(runner.cost, 4), held=len(runner.held), held_back=runner.held[:5])

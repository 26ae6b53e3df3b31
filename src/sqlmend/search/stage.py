"""The ``search`` stage: repair by choosing among executed candidates (no model needed).

For a query that earlier evidence flags (a finding of an earlier stage, an
execution error, or an empty result), or with ``scope="suspect"`` (the
default) one whose verifier score is below the calibrated threshold
(``scope="all"``: every query), the stage runs the bounded repair search
(:mod:`sqlmend.search.engine`), scores the original and every candidate with
the verifier, and proposes the best candidate only when its score beats the
original's by the margin calibrated for the scope; the guard then decides as
for every rewrite. An original the engine refuses to run (an error, not a
timeout) cannot be right, and every candidate runs, so there the best candidate
replaces it without the margin (``failed_original="replace"``): no correct
query can be lost that way. Which candidate: by default the first choice of
the ranker trained on failing originals that ships with the weights
(``failed_choice="ranker"``); ``"verifier"`` takes the verifier's first,
``"minimal"`` the candidate that keeps the most of the original. With a ``verifier`` model endpoint,
where the features keep the original, the candidates go to one listwise call; the model's choice then
passes the model gate of the pipeline (:mod:`sqlmend.search.gate`), as every model rewrite does.
The trace keeps the top candidates with their edits, scores and row counts.
"""

from __future__ import annotations

from dataclasses import replace

import time
from typing import Any, Literal

from pydantic import Field

from sqlmend import sql
from sqlmend.errors import SqlError
from sqlmend.guard import SecondLaw, joined_schemas
from sqlmend.search.adaptation import Adaptation, load as load_adaptation, observation as adapted_observation
from sqlmend.search.engine import Executed, SearchResult, SearchSettings, result_key
from sqlmend.search.generators import SearchInput
from sqlmend.search.verifier import FeatureVerifier, ListwiseVerifier, trained_findings
from sqlmend.sql import kept_share
from sqlmend.stage import RunSettings, StageBase, StageContext, StageSettings, refused_by_engine
from sqlmend.types import StageTrace

#: The largest query the search takes, in syntax nodes (sqlglot's, ``tree.walk()``): 5x the largest of
#: the five Spider-dev prediction files (107). Every candidate copies, renders and runs the whole
#: query, so a query of hundreds of UNIONs or joins would spend a minute and a gigabyte on it.
MAX_SEARCH_NODES = 500
#: The longest text the search parses to count its nodes (far past 500 nodes of any query a person or
#: a model writes): a wider one (an IN list of thousands of values) is skipped before it is parsed again.
MAX_SEARCH_CHARS = 20_000


class SearchOptions(StageSettings):
    """Options of the search stage (``--option search.KEY=VALUE``)."""

    scope: Literal["flagged", "suspect", "all"] = Field(
        "suspect", description="which queries are searched: flagged (a finding, an execution error or "
                               "an empty result), suspect (flagged, or the verifier's score of the "
                               "original below the threshold calibrated on Spider train) or all")
    suspect_below: float | None = Field(None, description="scope=suspect: search an unflagged query whose "
                                                          "score is below this (default: the calibrated one)")
    beam: int = Field(200, ge=1, description="executed candidates per query at most")
    expand: int = Field(6, ge=0, description="one-edit candidates that get a second edit")
    expand_failing: int = Field(6, ge=0, description="an original that fails to run: one-edit candidates that "
                                                     "still fail and get a second edit (0: none)")
    budget: float = Field(0.3, gt=0, description="seconds of search (generation and execution) per query, counted "
                                                 "in work (search.engine.COST), so that a busy machine finds the "
                                                 "same candidates")
    max_seconds: float = Field(60.0, gt=0, description="wall-clock safety net of one search: past it the item "
                                                      "ends 'timed out' (on SQLite; an engine that counts no "
                                                      "work stops its search there instead)")
    timeout: float = Field(4.0, gt=0, description="limit per candidate execution, in seconds of work on SQLite "
                                                  "(db.base.WORK_PER_SECOND: 100,000 units), wall-clock elsewhere")
    max_rows: int = Field(2000, gt=0, description="rows fetched per candidate")
    margin: float | None = Field(None, description="score gap the best candidate needs over the original "
                                                   "(default: the margin calibrated on Spider train)")
    top: int = Field(5, ge=1, description="candidates kept in the trace")
    weights: str | None = Field(None, description="verifier weights file (default: the shipped one)")
    failed_original: Literal["replace", "margin"] = Field(
        "replace", description="an original the engine refuses to run (its error, not a timeout) is wrong "
                               "whatever replaces it, and every candidate runs: replace takes the best "
                               "candidate without the margin; margin decides as for any other query")
    failed_choice: Literal["ranker", "verifier", "minimal"] = Field(
        "ranker", description="which candidate replaces an original the engine refuses: ranker (the first choice "
                              "of the ranker trained on failing originals that ships with the weights; the "
                              "verifier's when they have none), verifier (its first choice) or minimal (the one "
                              "that keeps the most of the original's tokens, the verifier's score breaking ties)")
    rerank: Literal["none", "cross"] = Field(
        "none", description="cross: the MiniLM cross-encoder (models extra) also scores the original and the "
                            "feature verifier's top candidates; a weighted mean of the two scores decides, with its "
                            "own calibrated margins")
    rerank_top: int = Field(4, ge=1, description="rerank=cross: candidates it scores")
    cross_adapter: str | None = Field(None, description="rerank=cross: adapter folder (default: the shipped one)")
    adaptation: str | None = Field(None, description="a system's adaptation of the decision, fitted on its history "
                                                     "by `sqlmend memory build`: a memory store folder, its "
                                                     "adaptation.json or a postgresql:// store (none there: the "
                                                     "shipped decision alone)")
    adaptation_namespace: str = Field("default", description="the memory namespace of a postgresql:// adaptation")

    def search_settings(self) -> SearchSettings:
        """The search's bounds under these options (the detectors' search signals use the defaults)."""
        return SearchSettings(beam=self.beam, expand=self.expand, expand_failing=self.expand_failing,
                              budget=self.budget, max_seconds=self.max_seconds, timeout=self.timeout,
                              max_rows=self.max_rows)


class SearchStage(StageBase):
    """Error-guided repair search with a trained verifier (see the module doc)."""

    name = "search"
    Settings = SearchOptions

    def __init__(self, settings: SearchOptions | None = None, run: RunSettings | None = None):
        super().__init__(settings, run)
        self._verifier: FeatureVerifier | None = None
        self._cross = None
        self._adaptation: Adaptation | None = None
        self._adaptation_read = False

    @property
    def adaptation(self) -> Adaptation | None:
        """The system's adaptation of the decision (search.adaptation), None when there is none."""
        if not self._adaptation_read and self.settings.adaptation:
            self._adaptation = load_adaptation(self.settings.adaptation, self.settings.adaptation_namespace)
        self._adaptation_read = True
        return self._adaptation

    @property
    def verifier(self) -> FeatureVerifier:
        if self._verifier is None:
            self._verifier = FeatureVerifier(self.settings.weights)
        return self._verifier

    @property
    def cross(self):
        """The cross-encoder of ``rerank=cross`` (loaded on first use)."""
        if self._cross is None:
            from sqlmend.search.cross import CrossEncoder

            self._cross = CrossEncoder(self.settings.cross_adapter, threads=2)
        return self._cross

    def _rerank(self, inp: SearchInput, orig: Executed, ranked: list[Executed]) -> tuple[list[Executed], list[float]]:
        """The top candidates, best first by the weighted mean of the feature and cross-encoder scores
        (the weight calibrated with the adapter's margins; 0.5 when its decision has none), and the
        means (the original's first)."""
        from sqlmend.search.cross import summary

        top = ranked[: self.settings.rerank_top]
        ce = self.cross.scores(inp.question, [(q.sql, summary(q.result)) for q in [orig, *top]])
        w = self.cross.weight
        means = [w * f + (1 - w) * c for f, c in zip([orig.score, *(q.score for q in top)], ce.tolist())]
        order = sorted(range(len(top)), key=lambda i: -means[i + 1])
        return [top[i] for i in order], [means[0]] + [means[i + 1] for i in order]

    def run(self, ctx: StageContext) -> StageTrace:
        """Search, score and (maybe) propose one repair of ``ctx.sql``."""
        return self.examine(ctx)[0]

    def examine(self, ctx: StageContext) -> tuple[StageTrace, SearchResult | None]:
        """As :meth:`run`, also returning every candidate of the search (benchmarks read them)."""
        start = time.perf_counter()
        s = self.settings
        trace = StageTrace(stage=self.name, status="ran")
        result, error = ctx.execute()
        if len(ctx.sql) > MAX_SEARCH_CHARS:  # far past MAX_SEARCH_NODES: not parsed once more to count them
            trace.status = "skipped"
            trace.note = f"the query is too large to search: {len(ctx.sql):,} characters (at most {MAX_SEARCH_CHARS:,})"
            return self._done(trace, start), None
        orig = Executed(ctx.sql, result=result, error=error or ctx.parse_error, tree=ctx.tree())
        flags = [f.code for f in ctx.findings]
        if orig.error:
            flags.append("execution error")
        elif orig.result is not None and not orig.result.rows:
            flags.append("empty result")
        trace.detail["flags"] = flags
        if orig.tree is None:
            trace.status, trace.note = "skipped", f"the SQL does not parse: {ctx.parse_error}"
            return self._done(trace, start), None
        nodes = sum(1 for _ in orig.tree.walk())
        if nodes > MAX_SEARCH_NODES:  # its candidates would each copy, render and run all of it
            trace.status = "skipped"
            trace.note = f"the query is too large to search: {nodes} syntax nodes (at most {MAX_SEARCH_NODES})"
            return self._done(trace, start), None
        if s.scope == "flagged" and not flags:
            trace.status, trace.note = "skipped", "nothing flags this query (scope=flagged)"
            return self._done(trace, start), None
        schema = ctx.db.schema()
        inp = SearchInput(ctx.task.question, schema, ctx.db.value_index(), ctx.task.evidence or "", dialect=ctx.dialect)
        verifier = self.verifier
        query = verifier.for_query(inp, orig, trained_findings(ctx.findings))  # featurized and scored once
        flagged = bool(flags)
        if s.scope == "suspect" and not flags:
            below = s.suspect_below if s.suspect_below is not None else verifier.suspect_below
            if self.adaptation is not None and s.suspect_below is None:  # calibrated on the system's history
                below = max(below, self.adaptation.suspect_below)
            orig.score = query.original_score
            trace.detail["original_score"] = round(orig.score, 4)
            if orig.score >= below:
                trace.status = "skipped"
                trace.note = f"nothing flags this query and the verifier trusts it ({orig.score:.3f} >= {below:g})"
                return self._done(trace, start), None
            flags.append(f"verifier score {orig.score:.3f} < {below:g}")
        failed = orig.result is None and refused_by_engine(orig.error)  # never a right answer
        # the second law: a candidate of a failing original that answers another question is no repair
        admit = SecondLaw(ctx.db, orig.sql, ctx.task.question).check if failed else \
            (lambda candidate: joined_schemas(ctx.db, orig.sql, candidate)) if len(ctx.db.schema().schemas) > 1 \
            else None  # and no candidate joins a schema the query does not name
        settings = s.search_settings()
        if failed and any(f.code in ("TB01", "AT01") for f in ctx.findings):
            # a query refused for a name it invents: its repair renames the name; a second edit on top of a
            # rename that already runs would change what the query asks (the second law)
            settings = replace(settings, expand=0)
        found, ranked = query.search(ctx.db, ctx.findings, settings, admit=admit)
        offered = self._offered(ctx, query, orig, found.candidates, admit)
        if offered:  # other answers to the question, scored beside the search's own candidates
            found.candidates.extend(offered)
            ranked = sorted([*ranked, *offered], key=lambda c: -c.score)
            trace.detail["offered"] = len(offered)
        cands = found.candidates
        trace.detail.update({"generated": found.generated, "executed": found.executed,
                             "distinct": len(cands), "failed": found.failed, "stopped": found.stopped,
                             "search_seconds": round(found.seconds, 4), "search_cost": found.cost})
        if found.held:
            trace.detail["second_law"] = {"held": found.held, "first": found.held_back}
        if not cands:
            schemas = " or joins a schema it does not name" if len(ctx.db.schema().schemas) > 1 else ""
            held = (f"; {found.held} held back: each drops part of the query or adds a table it does not ask "
                    f"for{schemas} (second law)") if found.held else ""
            trace.note = f"{found.executed} candidate(s) executed, none with a new result{held}"
            return self._done(trace, start), found
        orig.score = query.original_score
        backend = ctx.backend("verifier")
        chosen: Executed | None = None
        adapted = False  # the choice is the adaptation's (issue 28)
        no_margin = failed and s.failed_original == "replace"
        original, shown = orig.to_dict(), [c.to_dict() for c in ranked[: s.top]]
        if s.rerank == "cross":
            top, means = self._rerank(inp, orig, ranked)
            margin = s.margin if s.margin is not None else self.cross.margin_for(s.scope)
            value = means[1] - means[0]
            if value > margin or no_margin:
                chosen = top[0]
            w = self.cross.weight
            trace.detail["verifier"] = (f"{w:g} x features + {1 - w:g} x cross-encoder (mean), gap {value:.3f} "
                                        f"vs margin {margin:g}; "
                                        f"means: original {means[0]:.3f}, best {means[1]:.3f}")
            # the trace lists the candidates the mean ranked, in its order, with both scores
            original["mean"] = round(means[0], 4)
            shown = [dict(c.to_dict(), mean=round(m, 4)) for c, m in zip(top, means[1:])][: s.top]
        else:
            margin = s.margin if s.margin is not None else verifier.margin_for(s.scope)
            value = verifier.replace_value(query, ranked, flagged)
            if value > margin or no_margin:
                chosen = ranked[0]
            rule = "P(fix) by the decider" if verifier.decider is not None else "score gap"
            trace.detail["verifier"] = f"features, {rule} {value:.3f} vs margin {margin:g}"
            if self.adaptation is not None and chosen is None and not no_margin:
                chosen = self._adapted(trace, orig, ranked, flagged, ctx.task.db_id)
                adapted = chosen is not None
        how = ""  # whose choice replaces an original that fails to run (none: the margin decided)
        if no_margin:
            how = s.failed_choice
            if how == "minimal":  # the smallest repair that runs
                dialect = getattr(ctx.db, "dialect", "") or "sqlite"
                chosen = max(ranked, key=lambda c: (round(kept_share(orig.sql, c.sql, dialect), 3),
                                                    c.score or 0.0))
            elif how == "ranker" and verifier.failing is not None:
                chosen, rank_score = verifier.failing_choice(query, ranked)
                how = f"failing-original ranker's ({rank_score:.3f})"
            else:
                how = "verifier"
            trace.detail["verifier"] += (f"; the original fails to run, so the {how} choice "
                                         "replaces it whatever the margin (failed_original=replace)")
        if backend is not None and chosen is None:  # the features keep the original: the model may choose
            listwise = ListwiseVerifier(backend)
            picks = listwise.score_all(inp, orig, ranked)
            trace.calls, trace.tokens_in, trace.tokens_out = listwise.calls, listwise.tokens_in, listwise.tokens_out
            pick = picks.index(max(picks))
            chosen = ranked[pick - 1] if pick > 0 else None
            trace.detail["verifier"] += f"; listwise (model) choice {pick}, which passes the model gate"
        trace.detail["original"], trace.detail["top"] = original, shown
        if chosen is None:
            trace.note = (f"{len(cands)} distinct candidate(s); best {ranked[0].score:.3f} vs original "
                          f"{orig.score:.3f}: the original is kept")
            return self._done(trace, start), found
        trace.candidate = chosen.sql
        trace.verdict = ctx.guard(chosen.sql)
        trace.detail["edits"] = chosen.edits
        why = f", the {how} choice as the original fails to run" if how else ""
        if adapted:
            why = f", the choice of the adaptation {self.adaptation.label}"
        trace.note = (f"{len(cands)} distinct candidate(s); chose {' + '.join(chosen.edits)} "
                      f"({chosen.score:.3f} vs original {orig.score:.3f}{why}); {trace.verdict.reason}")
        return self._done(trace, start), found

    @staticmethod
    def _offered(ctx: StageContext, query: Any, orig: Executed, cands: list[Executed],
                 admit: Any = None) -> list[Executed]:
        """The candidates an earlier stage offers (the consensus stage's groups of alternatives) whose
        result is new, as executed candidates scored by the verifier (the edit: a whole other answer);
        for an original that fails to run, those ``admit`` (the second law) lets through, as the search's own."""
        if not ctx.offered:
            return []
        seen = {result_key(c.result) for c in cands if c.result is not None}
        if orig.result is not None:
            seen.add(result_key(orig.result))
        out = []
        for o in ctx.offered:
            if o.result is None or o.sql == ctx.sql or result_key(o.result) in seen:
                continue
            if admit is not None and admit(o.sql) is not None:
                continue
            try:
                tree = sql.parse(o.sql, dialect=ctx.dialect)
            except SqlError:
                continue
            seen.add(result_key(o.result))
            out.append(Executed(o.sql, edits=[o.label], generators=[], result=o.result, tree=tree))
        for c, score in zip(out, query.scores(out)):
            c.score = score
        return out

    def _adapted(self, trace: StageTrace, orig: Executed, ranked: list[Executed], flagged: bool,
                 db_id: str) -> Executed | None:
        """Where the shipped decision keeps the original: the adaptation's choice, if any (traced)."""
        a = self.adaptation
        pick, p = a.choose(adapted_observation("", orig.score, ranked, flagged, False, False,
                                               original_result=orig.result, db_id=db_id))
        trace.detail["adaptation"] = {"name": a.label, "history": a.history.get("questions", 0),
                                      "p_right": round(p, 4), "threshold": a.threshold, "margin": a.margin,
                                      "choice": None if pick is None else pick + 1}
        return None if pick is None else ranked[pick]

    @staticmethod
    def _done(trace: StageTrace, start: float) -> StageTrace:
        trace.seconds = round(time.perf_counter() - start, 4)
        return trace

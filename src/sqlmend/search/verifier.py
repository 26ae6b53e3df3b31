"""Verifiers: P(correct | question, evidence, schema, SQL, result) behind one interface.

* :class:`FeatureVerifier` — gradient-boosted trees over :mod:`sqlmend.search.features`,
  trained here on Spider *train* only (``sqlmend train-verifier``); the trees
  ship as JSON (``verifier.json`` beside this module) and are evaluated with
  numpy, so a fresh install needs no training and no scikit-learn at run time.
* :class:`ListwiseVerifier` — with a model endpoint: one call that sees the
  numbered candidates (0 = the original) and answers with one number.

Both score the original and every candidate of one search; the stage compares
the best candidate's score with the original's (:mod:`sqlmend.search.stage`).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from sqlmend.errors import ConfigError
from sqlmend.search.engine import Executed, SearchResult, SearchSettings, execute_original, search
from sqlmend.search.features import DECIDER_NAMES, FEATURE_NAMES, Featurizer, decider_row
from sqlmend.search.generators import SearchInput

#: The shipped weights (written by ``sqlmend train-verifier``).
WEIGHTS = Path(__file__).with_name("verifier.json")


def margin_key(scope: str) -> str:
    """The key of a decision record (a verifier file's ``decision``) that holds the margin of ``scope``."""
    return {"all": "all_margin", "suspect": "suspect_margin"}.get(scope, "margin")


class Verifier(Protocol):
    """Scores the original and the candidates of one search."""

    name: str

    def score_all(self, inp: SearchInput, original: Executed, candidates: list[Executed],
                  findings: list[Any] = ()) -> list[float]:
        """``[P(original correct), P(candidate 1 correct), ...]`` (``findings``: earlier stages' findings)."""
        ...


class TreeEnsemble:
    """Gradient-boosted binary trees stored as arrays (sklearn's HistGradientBoosting, exported)."""

    def __init__(self, spec: dict[str, Any], names: list[str] | None = None):
        """``names``: the columns of the rows it will score, when they are not ``spec["features"]``
        in that order (every feature the trees split on must be among them)."""
        self.baseline = float(spec["baseline"])
        self.features = list(spec["features"])
        self.trees = [{k: np.asarray(v) for k, v in t.items()} for t in spec["trees"]]
        if names is not None and names != self.features:
            where = {n: i for i, n in enumerate(names)}
            lost = sorted({self.features[f] for t in self.trees for f, leaf in zip(t["feature"], t["is_leaf"])
                           if not leaf and self.features[f] not in where})
            if lost:
                raise ValueError(f"the trees split on features the rows lack: {lost[:5]}")
            for t in self.trees:
                t["feature"] = np.asarray([where.get(self.features[f], 0) for f in t["feature"]], dtype=np.int64)
            self.features = list(names)
        self._flat = self._flatten() if self.trees else None  # built now: a shared ensemble is only read

    def _flatten(self) -> tuple[np.ndarray, ...]:
        """Every tree's nodes in one set of arrays (children as indices into them, a leaf its own child),
        so that one walk moves all trees a level down at once, with each tree's root to start from."""
        offsets = np.cumsum([0] + [len(t["is_leaf"]) for t in self.trees[:-1]]).astype(np.int64)
        cat = {k: np.concatenate([np.asarray(t[k]) for t in self.trees])
               for k in ("feature", "threshold", "missing_left", "is_leaf", "value")}
        own = np.arange(len(cat["is_leaf"]), dtype=np.int64)
        leaf = cat["is_leaf"].astype(bool)
        left = np.concatenate([np.asarray(t["left"], dtype=np.int64) + o for t, o in zip(self.trees, offsets)])
        right = np.concatenate([np.asarray(t["right"], dtype=np.int64) + o for t, o in zip(self.trees, offsets)])
        feature = np.where(leaf, 0, cat["feature"]).astype(np.int64)  # a leaf reads column 0, then stays
        return (offsets, feature, cat["threshold"].astype(np.float64), cat["missing_left"].astype(bool),
                np.where(leaf, own, left), np.where(leaf, own, right), cat["value"].astype(np.float64))

    def raw(self, X: np.ndarray) -> np.ndarray:
        """The summed log-odds of each row of ``X`` (columns in ``self.features`` order): the baseline, then
        each tree's leaf value added in the trees' order."""
        X = np.asarray(X, dtype=np.float64)
        if self._flat is None:
            return np.full(X.shape[0], self.baseline, dtype=np.float64)
        offsets, feature, threshold, missing_left, left, right, value = self._flat
        rows = np.arange(X.shape[0])[None, :]
        node = np.repeat(offsets[:, None], X.shape[0], axis=1)  # (trees, rows)
        while True:
            x = X[rows, feature[node]]
            go_left = np.where(np.isnan(x), missing_left[node], x <= threshold[node])
            nxt = np.where(go_left, left[node], right[node])
            if np.array_equal(nxt, node):
                break
            node = nxt
        # a running sum in the trees' order: the same float64 additions as adding one tree at a time
        sums = np.cumsum(np.vstack([np.full((1, X.shape[0]), self.baseline), value[node]]), axis=0)
        return sums[-1].copy()

    def proba(self, X: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.raw(X)))


@lru_cache(maxsize=4)
def load_weights(path: str | None = None) -> dict[str, Any]:
    """The verifier file (``{"model": ..., "decision": ..., "training": ...}``)."""
    p = Path(path) if path else WEIGHTS
    if not p.exists():
        raise ConfigError(f"no verifier weights at {p}; run `sqlmend train-verifier`")
    return json.loads(p.read_text())


#: Finding sources the verifier was never trained with: their findings do not enter its features (the
#: consensus stage's vote would move the original's score, and with it the margin calibrated without it).
UNTRAINED_SOURCES = frozenset({"consensus"})


def trained_findings(findings: Any) -> list[Any]:
    """The findings the verifier reads: those of the sources it was trained with (the vote of other
    answers is evidence of its own, weighed by the consensus stage, not by the verifier)."""
    return [f for f in findings if getattr(f, "source", "") not in UNTRAINED_SOURCES]


@lru_cache(maxsize=4)
def _trees(path: str | None) -> tuple[TreeEnsemble, TreeEnsemble | None, TreeEnsemble | None, list[str]]:
    """A weights file's trees, built once a process (every search stage and gate shares them: they are
    read-only): the scoring model, the decider, the failing-original ranker (``train-verifier
    --failing-ranker``), and the generators the model was trained without."""
    spec = load_weights(path)
    trained = list(spec["model"]["features"])
    # a generator added to the catalogue after training adds only its indicator (e_gen_NAME), which
    # the trees never saw: they score its candidates without it (retrain to learn it)
    other = sorted(set(trained) ^ set(FEATURE_NAMES))
    if any(not (n in FEATURE_NAMES and n not in trained and n.startswith("e_gen_")) for n in other):
        raise ConfigError(f"verifier weights were trained on other features ({other[:5]}...); "
                          "run `sqlmend train-verifier`")
    model = TreeEnsemble(spec["model"], names=FEATURE_NAMES)
    decider = TreeEnsemble(spec["decider"]) if "decider" in spec else None
    if decider is not None and decider.features != DECIDER_NAMES:
        raise ConfigError("the verifier's decider was trained on other features; run `sqlmend train-verifier`")
    failing = TreeEnsemble(spec["failing"]["model"], names=FEATURE_NAMES) if "failing" in spec else None
    return model, decider, failing, [n.removeprefix("e_gen_") for n in other]


class FeatureVerifier:
    """The trained feature verifier (see the module doc)."""

    name = "features"

    def __init__(self, path: str | Path | None = None):
        spec = load_weights(str(path) if path else None)
        self.spec = spec
        self.model, self.decider, self.failing, unseen = _trees(str(path) if path else None)
        self.unseen_generators = list(unseen)
        self.decision = dict(spec.get("decision", {}))
        self.margin = float(self.decision.get("margin", 0.5))

    def failing_choice(self, query: "QueryScorer", ranked: list[Executed]) -> tuple[Executed, float]:
        """The candidate the failing-original ranker puts first, and its score (``ranked``: the
        candidates of an original that fails to run; needs :attr:`failing`)."""
        scores = self.failing.proba(query.rows(ranked))
        best = int(np.argmax(scores))
        return ranked[best], float(scores[best])

    def margin_for(self, scope: str) -> float:
        """The margin calibrated for ``scope`` (``flagged``, ``suspect`` or ``all``; older weight files
        hold one margin for every scope)."""
        return float(self.decision.get(margin_key(scope), self.margin))

    @property
    def suspect_below(self) -> float:
        """``scope=suspect`` searches an unflagged query whose score is below this (0: none)."""
        return float(self.decision.get("suspect_below", 0.0))

    def for_query(self, inp: SearchInput, original: Executed, findings: list[Any] = (),
                  dialect: str = "sqlite") -> QueryScorer:
        """The verifier bound to one query: its original featurized and scored once (see :class:`QueryScorer`)."""
        return QueryScorer(self.model, inp, original, findings, dialect)

    def replace_value(self, query: QueryScorer, ranked: list[Executed], flagged: bool) -> float:
        """What the decision compares with the margin: with a decider, P(the best candidate fixes a wrong
        original); else the score gap best - original (``ranked``: scored candidates, best first)."""
        original = query.original
        if self.decider is None:
            return float(ranked[0].score - original.score)
        scores = [original.score] + [c.score for c in ranked]
        row = decider_row(np.asarray(scores), query.base[0], query.rows(ranked[:1])[0], flagged)
        return float(self.decider.proba(row[None, :])[0])

    def score_all(self, inp: SearchInput, original: Executed, candidates: list[Executed],
                  findings: list[Any] = ()) -> list[float]:
        query = self.for_query(inp, original, findings)
        return [query.original_score] + query.scores(candidates)

    def p_correct(self, db: Any, sql_text: str, question: str, evidence: str = "", findings: list[Any] = (),
                  value_index: Any = None) -> float:
        """P(correct) of one query on its own, no search: the verifier used as a detector
        (:meth:`judge` without a search)."""
        return self.judge(db, sql_text, question, evidence, findings, value_index).p_correct

    def judge(self, db: Any, sql_text: str, question: str, evidence: str = "", findings: list[Any] = (),
              value_index: Any = None, search: SearchSettings | None = None) -> "Verdict":
        """The verifier's view of one query: its P(correct) alone and, with ``search``, what the
        repair search finds from it (the search stage's code path: :meth:`QueryScorer.search`).

        The query is parsed and run as the search runs an original (its time and row limits),
        and scored from its features as the original of a search with no candidates.

        Args:
            db: the open database.
            sql_text: the query.
            question: the question it answers.
            evidence: optional external knowledge.
            findings: the static rules' findings on it (features ``o_findings``, ``o_strict``; they
                also order the search's generators).
            value_index: the database's value index (read from ``db`` when None).
            search: the search's bounds (None: no search; the stage's are
                ``sqlmend.search.stage.SearchOptions().search_settings()``). A query that does not
                parse is not searched (the stage skips it too): ``candidates`` stays None, not 0.

        Returns:
            The :class:`Verdict`.
        """
        limits = search or SearchSettings()
        inp = SearchInput(question, db.schema(), value_index if value_index is not None else db.value_index(),
                          evidence)
        original = execute_original(db, sql_text, limits.timeout, limits.max_rows)
        query = self.for_query(inp, original, findings, getattr(db, "dialect", "sqlite"))
        if search is None or original.tree is None:
            return Verdict(query.original_score)
        start = time.perf_counter()
        _, ranked = query.search(db, findings, search)
        return Verdict(query.original_score, ranked[0].score if ranked else None, len(ranked),
                       time.perf_counter() - start)


@dataclass
class Verdict:
    """What the feature verifier says about one query (:meth:`FeatureVerifier.judge`)."""

    p_correct: float  # P(the query is correct), the query alone
    best: float | None = None  # the best search candidate's P(correct); None: no candidate, or no search
    candidates: int | None = None  # distinct candidates the search found; None: no search
    seconds: float = 0.0  # the search's seconds (with scoring its candidates)


class QueryScorer:
    """The feature verifier on one query: the original is featurized and scored once (on first use),
    each candidate against it. The search stage scores the original for ``scope=suspect``, ranks the
    one-edit candidates, then scores the rest, all with one of these."""

    def __init__(self, model: TreeEnsemble, inp: SearchInput, original: Executed, findings: list[Any] = (),
                 dialect: str = "sqlite"):
        self.model = model
        self.inp = inp
        self.original = original
        self.fz = Featurizer(inp, dialect, findings)

    @cached_property
    def base(self) -> tuple[list[float], dict[str, float]]:
        """The original's vector and raw features."""
        o = self.original
        return self.fz.vector(o.tree, o.result, o.error, [], None)

    @cached_property
    def original_score(self) -> float:
        """P(the original is correct)."""
        return float(self.model.proba(np.asarray([self.base[0]], dtype=np.float64))[0])

    def rows(self, candidates: list[Executed]) -> np.ndarray:
        """The candidates' feature matrix (edit features against the original)."""
        return np.asarray(self.fz.edited(candidates, self.base[1]), dtype=np.float64)

    def scores(self, candidates: list[Executed]) -> list[float]:
        """P(correct) of each candidate."""
        return self.model.proba(self.rows(candidates)).tolist() if candidates else []

    def search(self, db: Any, findings: list[Any], settings: SearchSettings,
               admit: Callable[[str], str | None] | None = None) -> tuple[SearchResult, list[Executed]]:
        """Run the repair search from the original, this verifier ranking which one-edit candidates get
        a second edit; then score the candidates it did not rank.

        Args:
            db: the open database.
            findings: earlier stages' findings (they order the generators).
            settings: the search's bounds.
            admit: the search's ``admit`` (:func:`sqlmend.search.engine.search`).

        Returns:
            The search's result and its candidates, every one scored, best first.
        """

        def rank(original: Executed, cands: list[Executed]) -> list[float]:
            return self.scores(cands)

        found = search(db, self.original, self.inp, findings, settings, rank=rank, admit=admit)
        # one-edit candidates were scored when the search ranked them: score only the rest
        rest = [c for c in found.candidates if c.score is None]
        for c, sc in zip(rest, self.scores(rest)):
            c.score = sc
        return found, sorted(found.candidates, key=lambda c: -c.score)


_ANSWER = re.compile(r"-?\d+")


class ListwiseVerifier:
    """One model call chooses among numbered candidates (0 keeps the original).

    The answer is read as the first integer; the chosen one scores 1, the others
    0 (an unreadable answer scores the original 1: nothing changes).
    """

    name = "listwise"

    def __init__(self, backend: Any, max_candidates: int = 8, max_rows_shown: int = 3):
        self.backend = backend
        self.max_candidates = max_candidates
        self.max_rows_shown = max_rows_shown
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0

    def prompt(self, inp: SearchInput, original: Executed, candidates: list[Executed]) -> str:
        template = (Path(__file__).parent / "prompts" / "listwise.md").read_text()
        tables = "\n".join(f"{t.name}({', '.join(c.name for c in t.columns)})" for t in inp.schema.tables)
        items = []
        for i, e in enumerate([original, *candidates[: self.max_candidates]]):
            if e.result is None:
                shown = f"error: {e.error}"
            else:
                rows = e.result.rows[: self.max_rows_shown]
                shown = f"{len(e.result.rows)} row(s): " + "; ".join(map(str, rows))
            items.append(f"[{i}] {e.sql}\n    -> {shown}")
        return template.format(schema=tables, question=inp.question, evidence=inp.evidence or "none",
                               candidates="\n".join(items), last=min(len(candidates), self.max_candidates))

    def score_all(self, inp: SearchInput, original: Executed, candidates: list[Executed],
                  findings: list[Any] = ()) -> list[float]:
        text = self.prompt(inp, original, candidates)
        reply = self.backend.chat([{"role": "user", "content": text}], {"temperature": 0, "max_tokens": 8},
                                  stage="verifier")
        self.calls += 1
        usage = getattr(reply, "usage", None)
        self.tokens_in += getattr(usage, "tokens_in", 0) or 0
        self.tokens_out += getattr(usage, "tokens_out", 0) or 0
        m = _ANSWER.search(getattr(reply, "text", "") or "")
        choice = int(m.group()) if m else 0
        if not 0 <= choice <= min(len(candidates), self.max_candidates):
            choice = 0
        return [1.0 if i == choice else 0.0 for i in range(len(candidates) + 1)]


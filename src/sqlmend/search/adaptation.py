"""A system's own history adapts the search's decision (issue 28; MIRA §2, §4.1's history part).

The shipped verifier was trained on perturbations of Spider-train golds; it does
not know which edits *this* system's errors need. A history of confirmed
corrections does: run the search on the history's predictions, and a candidate is
right when it returns the confirmed correction's rows (for a prediction the
history confirms as correct every change is wrong). From that:

* **habits** - how often each generator's candidates, and each error type's,
  were right in this history (smoothed toward the overall rate);
* **a chooser** - a logistic regression over the shipped verifier's log-odds
  of the candidate and of the original, their gap, whether something flagged the
  query, one or two edits, the habits and the candidate's rank, fitted with an
  L2 pull toward the shipped verifier's gap (so a small history changes little);
* **a decision** - the system's own margin on the shipped verifier's gap (below
  the shipped one), the threshold on the chooser's P(right), and how low the
  original's verifier score must be for an unflagged query to be searched
  (``suspect_below``), picked on cross-validated history (folds keep questions
  that share a gold together), a break costing :data:`BREAK_COST` fixes; a rule
  that does not gain at least 2 net fixes there is left off, and when none does
  the adaptation replaces nothing.

Online the search stage keeps the shipped decision and, where it keeps the
original, lets the adaptation replace it: by the verifier's first candidate when
its gap is over the system's margin, else by the chooser's best when P(right) is
above the threshold; the guard checks every rewrite as usual. Candidates of an
original that fails to run are decided as before (no adaptation).

The adaptation is one versioned JSON document with its training rows, so
adding confirmed corrections refits it (:func:`refit`).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sqlmend.db.pgmigrate import is_url
from sqlmend.errors import ConfigError

#: The adaptation document's format version.
VERSION = 1
#: The file an adaptation is stored in, in a memory store folder.
FILENAME = "adaptation.json"
#: Candidates per query the chooser looks at (the shipped verifier's first ones).
TOP = 5
#: Candidates per query kept in an observation (a refit may look at more than :data:`TOP`).
KEEP = 10
#: What a regression costs against a fix when the decision is picked on the history.
BREAK_COST = 3.0
#: Strength of the pull toward the shipped verifier's gap (in log-loss units).
SHRINK = 10.0
#: Pseudo-counts of the habit rates' smoothing toward the overall rate.
SMOOTH = 5.0
#: ``suspect_below`` values tried (the shipped one is always among them).
SUSPECT_GRID = (0.5, 0.6, 0.7, 0.8, 0.9)
#: Folds of the cross-validation that picks the decision.
FOLDS = 5

NAMES = ["logit_score", "logit_original", "gap", "flagged", "two_edits", "habit_generator", "habit_error",
         "habit_kind", "habit_edit", "rank", "fewer_columns", "more_columns", "to_empty", "rows_change"]
#: The prior the fit is pulled toward: the shipped verifier's log-odds gap.
PRIOR = np.array([1.0, -1.0] + [0.0] * (len(NAMES) - 2))


def _logit(p: float) -> float:
    p = min(max(float(p), 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def _error_type(generator: str) -> str:
    from sqlmend.search.generators import all_generators

    for g in all_generators():
        if g.name == generator:
            return g.error_types[0] if g.error_types else ""
    return ""


@dataclass
class Observation:
    """One searched history query: the original's verifier score, its flags, its first candidates."""

    question_id: str
    original_score: float
    flagged: bool
    # {"score", "generators", "edits", "columns", "rows", "right"}, best first by the shipped verifier;
    # columns: the candidate's result has more (+) or fewer (-) columns than the original's; rows: the change
    # in log(1 + rows), None for an empty result the original did not have
    candidates: list[dict[str, Any]]
    shipped: bool = False  # the shipped decision replaces the original (its first candidate)
    failing: bool = False  # the engine refuses the original (decided without the adaptation)
    db_id: str = ""  # its database (the habits of an edit are counted per database)
    group: str = ""  # questions sharing a gold share a group: the cross-validation keeps a group in one fold


def _shape(candidate: Any, original: Any) -> dict[str, Any]:
    """How a candidate's result differs from the original's (``original``: the original's result or None)."""
    res = candidate.result
    if res is None or original is None:
        return {"columns": 0, "rows": 0.0}
    if not res.rows and original.rows:
        return {"columns": len(res.columns) - len(original.columns), "rows": None}
    return {"columns": len(res.columns) - len(original.columns),
            "rows": round(math.log1p(len(res.rows)) - math.log1p(len(original.rows)), 4)}


def observation(question_id: str, original_score: float, ranked: list[Any], flagged: bool, shipped: bool,
                failing: bool, right: list[bool] | None = None, original_result: Any = None,
                keep: int = TOP, db_id: str = "", group: str = "") -> Observation:
    """An :class:`Observation` from the search's scored candidates (best first; ``right``: their labels;
    ``original_result``: the original's result; ``keep``: candidates kept; ``db_id``: the database;
    ``group``: the twins' group)."""
    top = ranked[:keep]
    labels = right if right is not None else [None] * len(top)
    return Observation(question_id, float(original_score), bool(flagged),
                       [{"score": round(float(c.score), 6), "generators": list(c.generators),
                         "edits": list(c.edits), **_shape(c, original_result), "right": r}
                        for c, r in zip(top, labels)], bool(shipped), bool(failing), db_id, group)


def _kind(c: dict[str, Any]) -> str:
    """A candidate's edit kind for the habits: its last generator, and whether it drops or adds columns."""
    g = c["generators"][-1] if c["generators"] else ""
    cols = c.get("columns", 0)
    return g + ("-columns" if cols < 0 else "+columns" if cols > 0 else "")


def _edit(o: Observation, c: dict[str, Any]) -> str:
    """A candidate's exact edit in its database (the finest habit: this repair was confirmed here before)."""
    return f"{o.db_id}|{' + '.join(c.get('edits') or [])}"


class Habits:
    """How often each generator's and error type's candidates were right (with leave-one-out counts)."""

    def __init__(self, observations: list[Observation]):
        self.gen: Counter = Counter()
        self.gen_right: Counter = Counter()
        self.err: Counter = Counter()
        self.err_right: Counter = Counter()
        self.kind: Counter = Counter()
        self.kind_right: Counter = Counter()
        self.edit: Counter = Counter()
        self.edit_right: Counter = Counter()
        self.n = self.right = 0
        for o in observations:
            self._add(o, 1)

    def _add(self, o: Observation, sign: int) -> None:
        for c in o.candidates[:TOP]:
            if c.get("right") is None:
                continue
            g = c["generators"][-1] if c["generators"] else ""
            e = _error_type(g)
            r = int(bool(c["right"]))
            self.gen[g] += sign
            self.gen_right[g] += sign * r
            self.kind[_kind(c)] += sign
            self.kind_right[_kind(c)] += sign * r
            self.err[e] += sign
            self.err_right[e] += sign * r
            self.n += sign
            self.right += sign * r
        for c in o.candidates[:KEEP]:  # an exact edit counts wherever the search ranked it
            if c.get("right") is not None:
                self.edit[_edit(o, c)] += sign
                self.edit_right[_edit(o, c)] += sign * int(bool(c["right"]))

    def without(self, o: Observation) -> "Habits":
        h = Habits([])
        for name in ("gen", "gen_right", "err", "err_right", "kind", "kind_right", "edit", "edit_right"):
            setattr(h, name, Counter(getattr(self, name)))
        h.n, h.right = self.n, self.right
        h._add(o, -1)
        return h

    @property
    def base(self) -> float:
        return (self.right + 0.5) / (self.n + 1.0)

    def rate(self, key: str, kind: str = "gen") -> float:
        """log-odds of the smoothed right rate of a generator (``kind="gen"``), error type (``"err"``) or edit
        kind (``"kind"``, :func:`_kind`), over the base."""
        n, r = {"gen": (self.gen, self.gen_right), "err": (self.err, self.err_right),
                "kind": (self.kind, self.kind_right), "edit": (self.edit, self.edit_right)}[kind]
        return _logit((r[key] + SMOOTH * self.base) / (n[key] + SMOOTH)) - _logit(self.base)

    def to_dict(self) -> dict[str, Any]:
        return {"base": round(self.base, 4), "candidates": self.n,
                "generators": {g: [self.gen_right[g], self.gen[g]] for g in sorted(self.gen) if self.gen[g]},
                "error_types": {e: [self.err_right[e], self.err[e]] for e in sorted(self.err) if self.err[e]},
                "kinds": {k: [self.kind_right[k], self.kind[k]] for k in sorted(self.kind) if self.kind[k]},
                "edits": {k: [self.edit_right[k], self.edit[k]] for k in sorted(self.edit) if self.edit[k]}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Habits":
        h = cls([])
        for g, (r, n) in d.get("generators", {}).items():
            h.gen[g], h.gen_right[g] = n, r
        for e, (r, n) in d.get("error_types", {}).items():
            h.err[e], h.err_right[e] = n, r
        for k, (r, n) in d.get("kinds", {}).items():
            h.kind[k], h.kind_right[k] = n, r
        for k, (r, n) in d.get("edits", {}).items():
            h.edit[k], h.edit_right[k] = n, r
        h.n = int(d.get("candidates", sum(h.gen.values())))
        h.right = sum(h.gen_right.values())
        return h


def rows(o: Observation, habits: Habits) -> np.ndarray:
    """The chooser's feature rows of one query's candidates (:data:`NAMES`)."""
    lo = _logit(o.original_score)
    out = []
    for i, c in enumerate(o.candidates[:TOP]):
        g = c["generators"][-1] if c["generators"] else ""
        cols, rows_ = c.get("columns", 0), c.get("rows", 0.0)
        out.append([_logit(c["score"]), lo, c["score"] - o.original_score, float(o.flagged),
                    float(len(c["generators"]) > 1), habits.rate(g, "gen"), habits.rate(_error_type(g), "err"),
                    habits.rate(_kind(c), "kind"), habits.rate(_edit(o, c), "edit"), i / TOP, float(cols < 0),
                    float(cols > 0), float(rows_ is None), rows_ or 0.0])
    return np.asarray(out, dtype=np.float64).reshape(-1, len(NAMES))


def fit_logistic(X: np.ndarray, y: np.ndarray, prior: np.ndarray = PRIOR, shrink: float = SHRINK,
                 steps: int = 50) -> tuple[float, np.ndarray]:
    """Logistic regression by damped Newton steps: the intercept nearly free, the weights pulled toward
    ``prior`` by ``shrink / 2 * ||w - prior||^2``. Returns ``(intercept, weights)``."""
    n, d = X.shape
    Z = np.hstack([np.ones((n, 1)), X])
    target = np.concatenate([[0.0], prior])
    pen = np.full(d + 1, shrink)
    pen[0] = 1e-3

    def loss(w: np.ndarray) -> float:
        z = Z @ w
        return float(np.sum(np.logaddexp(0, z) - y * z) + 0.5 * np.sum(pen * (w - target) ** 2))

    w = np.concatenate([[_logit((y.sum() + 0.5) / (n + 1.0))], prior])
    current = loss(w)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(Z @ w, -30, 30)))
        grad = Z.T @ (p - y) + pen * (w - target)
        H = (Z * (p * (1 - p))[:, None]).T @ Z + np.diag(pen)
        step = np.linalg.solve(H, grad)
        t = 1.0
        while t > 1e-4 and loss(w - t * step) > current:  # halve until the loss falls
            t /= 2
        if t <= 1e-4:
            break
        w = w - t * step
        before, current = current, loss(w)
        if before - current < 1e-9:
            break
    return float(w[0]), w[1:]


@dataclass
class Adaptation:
    """A fitted adaptation (see the module doc); ``threshold`` and ``margin`` None: it replaces nothing."""

    name: str
    intercept: float
    weights: list[float]
    threshold: float | None
    suspect_below: float
    habits: dict[str, Any]
    history: dict[str, int]  # questions, searched, wrong, reachable (a right candidate exists)
    margin: float | None = None  # the system's own margin on the shipped verifier's gap (None: none)
    fit: dict[str, Any] = field(default_factory=dict)  # seconds, cross-validated net on the history
    observations: list[dict[str, Any]] = field(default_factory=list)  # the training rows, for refits
    version: int = VERSION

    def __post_init__(self) -> None:
        self._habits = Habits.from_dict(self.habits)

    @property
    def label(self) -> str:
        return f"{self.name} (history {self.history.get('questions', 0)})"

    def p_right(self, o: Observation) -> np.ndarray:
        """P(each candidate returns the right rows) under the chooser."""
        if not o.candidates:
            return np.zeros(0)
        z = self.intercept + rows(o, self._habits) @ np.asarray(self.weights)
        return 1 / (1 + np.exp(-z))

    def choose(self, o: Observation) -> tuple[int | None, float]:
        """The candidate the adaptation puts in place of the original (an index into ``o.candidates``,
        None: keep it) and its P(right)."""
        p = self.p_right(o)
        if not len(p):
            return None, 0.0
        if not o.failing and _over(o, self.margin):
            return 0, float(p[0])  # the shipped verifier's first choice, over the system's own margin
        best = int(np.argmax(p))
        if self.threshold is None or o.failing or p[best] <= self.threshold:
            return None, float(p[best])
        return best, float(p[best])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Adaptation":
        if int(d.get("version", 0)) != VERSION:
            raise ConfigError(f"adaptation format {d.get('version')} is not {VERSION}: run `sqlmend memory build`")
        keys = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in keys})


def _fold(o: Observation) -> int:
    return int(hashlib.sha1((o.group or o.question_id).encode()).hexdigest(), 16) % FOLDS


def _training(observations: list[Observation], habits: Habits) -> tuple[np.ndarray, np.ndarray]:
    X, y = [], []
    for o in observations:
        if o.failing or not o.candidates:
            continue
        X.append(rows(o, habits.without(o)))  # leave the question's own labels out of its habits
        y.extend(float(bool(c["right"])) for c in o.candidates[:TOP])
    if not X:
        return np.zeros((0, len(NAMES))), np.zeros(0)
    return np.vstack(X), np.asarray(y)


def _gain(o: Observation, pick: int | None, original_right: bool) -> float:
    if pick is None or o.shipped or o.failing:
        return 0.0
    if o.candidates[pick]["right"]:
        return 1.0
    return -BREAK_COST if original_right else 0.0


def _over(o: Observation, margin: float | None) -> bool:
    """The shipped verifier's first candidate stands above the original by more than ``margin``."""
    return margin is not None and o.candidates[0]["score"] - o.original_score > margin


def _margin_gain(obs: list[Observation], margin: float | None, original_right: dict[str, bool]) -> float:
    return sum(_gain(o, 0, original_right.get(o.question_id, False)) for o in obs if _over(o, margin))


def _pick_margin(obs: list[Observation], original_right: dict[str, bool], shipped: float) -> float | None:
    """The margin (below the shipped one, at least 0) with the best gain on ``obs``; None when none gains."""
    best, pick = 0.0, None
    gaps = sorted({round(o.candidates[0]["score"] - o.original_score, 6) for o in obs if o.candidates})
    for m in [g for g in gaps if 0 <= g < shipped]:
        net = _margin_gain(obs, m, original_right)
        if net > best + 1e-9:
            best, pick = net, m
    return pick


def fit(name: str, observations: list[Observation], original_right: dict[str, bool], shipped_below: float,
        questions: int, shipped_margin: float = 0.57) -> Adaptation:
    """Fit an adaptation on a history.

    Args:
        name: what the trace calls it (e.g. the prediction file's name).
        observations: every history query searched, whatever the scope (labels on the candidates).
        original_right: question id -> the history confirms the prediction correct.
        shipped_below: the shipped ``suspect_below``.
        shipped_margin: the shipped margin on the verifier's gap (the system's own margin stays below it).
        questions: history questions (searched or not).

    Returns:
        The adaptation (``threshold`` None when no decision gains on the history).
    """
    start = time.perf_counter()
    obs = [o for o in observations if o.candidates and not o.failing]
    habits = Habits(obs)
    X, y = _training(obs, habits)
    intercept, weights = fit_logistic(X, y) if len(y) else (0.0, PRIOR.copy())
    # cross-validated P(right) for every query: the decision is picked on predictions of held-out folds
    cv: dict[str, np.ndarray] = {}
    for k in range(FOLDS):
        train = [o for o in obs if _fold(o) != k]
        test = [o for o in obs if _fold(o) == k]
        h = Habits(train)
        Xk, yk = _training(train, h)
        b, w = fit_logistic(Xk, yk) if len(yk) else (0.0, PRIOR.copy())
        for o in test:
            cv[o.question_id] = 1 / (1 + np.exp(-(b + rows(o, h) @ w)))
    best = (0.0, None, shipped_below, None)  # net gain, threshold, suspect_below, margin
    for below in sorted({shipped_below, *SUSPECT_GRID}):
        scope = [o for o in obs if o.flagged or o.original_score < below]
        # the system's own margin on the shipped gap, cross-validated: each fold's margin picked on the others
        margin_net = sum(_margin_gain([o for o in scope if _fold(o) == k], _pick_margin(
            [o for o in scope if _fold(o) != k], original_right, shipped_margin), original_right)
            for k in range(FOLDS))
        margin = _pick_margin(scope, original_right, shipped_margin) if margin_net >= 2 else None
        rest = [o for o in scope if not _over(o, margin)]
        picks = [(o, int(np.argmax(cv[o.question_id]))) for o in rest]
        for tau in [None] + sorted({round(float(cv[o.question_id][i]), 6) for o, i in picks}):
            net = sum(_gain(o, i, original_right.get(o.question_id, False))
                      for o, i in picks if tau is not None and cv[o.question_id][i] > tau)
            if net < 2:
                net, tau = 0.0, None
            total = net + (margin_net if margin is not None else 0.0)
            if total > best[0] + 1e-9:
                best = (total, tau, below, margin)
    threshold, below, margin = best[1], best[2], best[3]
    right = {o.question_id for o in obs if any(c["right"] for c in o.candidates[:TOP])}
    return Adaptation(
        name=name, intercept=intercept, weights=[float(v) for v in weights], threshold=threshold,
        suspect_below=float(below), habits=habits.to_dict(), margin=margin,
        history={"questions": questions, "searched": len(obs),
                 "wrong": sum(not original_right.get(o.question_id, False) for o in obs), "reachable": len(right)},
        fit={"seconds": round(time.perf_counter() - start, 3), "cv_net": best[0], "break_cost": BREAK_COST,
             "shrink": SHRINK, "shipped_below": shipped_below, "shipped_margin": shipped_margin,
             "candidates": int(len(y)),
             "right_candidates": int(y.sum()) if len(y) else 0},
        observations=[asdict(o) | {"original_right": original_right.get(o.question_id, False)}
                      for o in observations])


def refit(adaptation: Adaptation, added: list[tuple[Observation, bool]]) -> Adaptation:
    """The adaptation refitted with more confirmed queries (``(observation, original_right)``; a
    question already in its history is replaced)."""
    new = {o.question_id for o, _ in added}
    old = [d for d in adaptation.observations if d["question_id"] not in new]
    rights = {d["question_id"]: bool(d.get("original_right")) for d in old} | {o.question_id: r for o, r in added}
    fields_ = set(Observation.__dataclass_fields__)
    obs = [Observation(**{k: v for k, v in d.items() if k in fields_}) for d in old] + [o for o, _ in added]
    questions = adaptation.history.get("questions", 0) + len(new - {d["question_id"] for d in adaptation.observations})
    return fit(adaptation.name, obs, rights, float(adaptation.fit.get("shipped_below", 0.4)), questions,
               float(adaptation.fit.get("shipped_margin", 0.57)))


def save(adaptation: Adaptation, location: str | Path, namespace: str = "default") -> Path | str:
    """Store the adaptation with a memory: a store folder (:data:`FILENAME`) or a PostgreSQL store
    (one row per namespace). Returns where it went."""
    if is_url(location):
        from sqlmend.memory.pgstore import save_adaptation

        save_adaptation(str(location), namespace, adaptation.to_dict())
        return str(location)
    path = Path(location) / FILENAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(adaptation.to_dict()))
    return path


def load(location: str | Path, namespace: str = "default") -> Adaptation | None:
    """The adaptation of a store folder, a JSON file or a PostgreSQL store (its ``namespace``); None when
    it holds none."""
    if is_url(location):
        from sqlmend.memory.pgstore import load_adaptation

        body = load_adaptation(str(location), namespace)
        return Adaptation.from_dict(body) if body is not None else None
    path = Path(location)
    if path.is_dir():
        path = path / FILENAME
    if not path.is_file():
        return None
    try:
        return Adaptation.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"cannot read the adaptation {path}: {e}") from e

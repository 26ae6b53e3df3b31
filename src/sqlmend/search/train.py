"""Train the feature verifier on Spider *train* only, calibrate its decision margins, export the trees.

Training data (:func:`build`): for each training question, its gold SQL is an
"original correct" case (every candidate the search makes from it is wrong:
the decision must learn to keep it); wrong originals built to look like real
errors (:func:`_cases`: a perturbation drawn by the real error mix, two in a
row, and a *neighbour gold* — the gold of a similar question on the database
with another result) are "original wrong" cases, and a candidate the search
makes from them is positive when it returns the gold's rows. Each case is one
JSON line (resumable: a rerun skips the questions done).

Training (:func:`fit`): gradient-boosted trees (scikit-learn's
HistGradientBoostingClassifier) on every row; the databases are split so that
the held-out questions are on databases never seen in training. For each
search scope the decision margin is the smallest one whose held-out
replacements reach the target precision *and* whose replacement rate on
correct originals stays under ``max_false_rate`` (for ``suspect`` also the
threshold on the original's score). :func:`evaluate` scores any verifier file
on the held-out cases (for comparisons).
"""

from __future__ import annotations

import json
import random
import re
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from sqlmend import rules
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.search.engine import SearchSettings, execute_original, result_key, search
from sqlmend.search.features import DECIDER_NAMES, FEATURE_NAMES, Featurizer, decider_row
from sqlmend.search.generators import SearchInput
from sqlmend.synth import OPERATORS, differs, perturb
from sqlmend.synth.build import weighted_order
from sqlmend.synth.failing import failing
from sqlmend.types import Task


#: How often each perturbation operator starts a training error: the mix of edits between real wrong
#: predictions and their gold (issue 16, measured with ``sql.diff`` on three systems' wrong predictions
#: within two edits: projection column dropped 99 / added 61, WHERE condition replaced 88 / added 18,
#: ORDER BY 39, projected expression 37, join table added 22 / dropped 17, GROUP BY 28), spread over the
#: operators of each kind; the rest weigh 3.
REAL_MIX: dict[str, float] = {
    "attribute_drop": 80, "attribute_add": 80,
    "condition_column_swap": 30, "value_variant": 18, "number_shift": 18, "operator_flip": 17,
    "connective_flip": 5, "condition_drop": 18,
    "order_by_swap": 18, "sort_direction_flip": 12, "limit_change": 9,
    "attribute_swap": 17, "aggregate_swap": 12, "aggregate_drop": 8,
    "join_add": 22, "join_drop": 17, "join_key_swap": 4, "table_swap": 4,
    "group_by_drop": 18, "having_drop": 10,
}

#: The kinds of wrong original a training question gets (besides its gold, the correct original).
KINDS = ("rule1", "rule2", "neighbour")

#: Every kind of original :func:`_cases` makes: the wrong ones above, ``rule`` (uniform single
#: perturbations), ``equiv`` (a correct original that is not the gold) and ``failing`` (one the
#: engine refuses).
ALL_KINDS = ("rule", *KINDS, "equiv", "failing")


def weighted_operators(rng: random.Random, mix: dict[str, float] | None = None) -> list[Any]:
    """Every perturbation operator once, in a random order drawn by weight (``REAL_MIX``)."""
    mix = REAL_MIX if mix is None else mix
    return weighted_order(rng, list(OPERATORS.values()), lambda op: mix.get(op.name, 3.0))


_WORD = re.compile(r"[a-z0-9_]+")
_SQL_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+(\.\d+)?\b")


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _similarity(a: tuple[set[str], set[str]], b: tuple[set[str], set[str]]) -> float:
    """Mean Jaccard similarity of question tokens and SQL skeleton tokens (literals removed)."""
    def jac(x: set[str], y: set[str]) -> float:
        return len(x & y) / len(x | y) if x or y else 0.0

    return 0.5 * jac(a[0], b[0]) + 0.5 * jac(a[1], b[1])


class Neighbours:
    """Gold SQL of other training questions on the same database, most similar first.

    A neighbour gold whose result differs from a question's gold is a plausible, human-written wrong
    query for that question (the right SQL of a similar question).
    """

    def __init__(self, tasks: Iterable[Task]):
        self.by_db: dict[str, list[tuple[str, str, tuple[set[str], set[str]]]]] = {}
        for t in tasks:
            if t.gold:
                self.by_db.setdefault(t.db_id, []).append((t.question_id, t.gold, self.key(t)))

    @staticmethod
    def key(task: Task) -> tuple[set[str], set[str]]:
        return _tokens(task.question), _tokens(_SQL_LITERAL.sub(" ", task.gold))

    def of(self, task: Task, n: int = 6) -> list[tuple[str, str]]:
        """``[(question_id, gold)]`` of the ``n`` most similar other questions with another gold SQL."""
        me = self.key(task)
        norm = " ".join(task.gold.lower().split())
        pool = [(qid, gold, _similarity(me, k)) for qid, gold, k in self.by_db.get(task.db_id, [])
                if qid != task.question_id and " ".join(gold.lower().split()) != norm]
        pool.sort(key=lambda x: (-x[2], x[0]))
        return [(qid, gold) for qid, gold, _ in pool[:n]]


def _cases(task: Task, db: Any, gold_res: Any, rng: random.Random, per_question: int,
           timeout: float, kinds: Iterable[str] = ("rule",),
           neighbours: Neighbours | None = None) -> list[tuple[str, str]]:
    """``[(kind, sql)]``: the gold (its result ``gold_res``), then wrong originals of the ``kinds``.

    * ``rule`` — ``per_question`` perturbations of the gold from different operators (uniform order);
    * ``rule1`` — one perturbation, its operator drawn by the real error mix (``REAL_MIX``);
    * ``rule2`` — two perturbations in a row (operators drawn by the mix), still wrong;
    * ``neighbour`` — the gold of the most similar other question on the database whose result differs;
    * ``equiv`` — a *correct* original that is not the gold: one perturbation (operators drawn by the
      mix) that returns the gold's very rows, e.g. a redundant join, condition or DISTINCT, as real
      systems' right answers often differ from the gold (DISTINCT toggled, which keeps the rows of
      most golds, only when no other edit does and in one question of three). None when the gold's
      result is empty (every edit that keeps an empty result would count);
    * ``failing`` — the gold broken the way real systems' SQL fails to run (:mod:`sqlmend.synth.failing`:
      columns unqualified, a join dropped, a wrong qualifier), one drawn among those the engine refuses;
      none for a gold without a join.
    """
    gold = task.gold
    out = [("gold", gold)]
    schema = db.schema()
    kinds = list(kinds)
    if "rule" in kinds:
        ops = list(OPERATORS.values())
        rng.shuffle(ops)
        for text, op, _ in perturb(gold, schema, db, gold_res, rng, ops, timeout):
            out.append((f"rule:{op.name}", text))
            if len(out) > per_question:
                break
    if "rule1" in kinds:
        first = next(perturb(gold, schema, db, gold_res, rng, weighted_operators(rng), timeout), None)
        if first is not None:
            out.append((f"rule1:{first[1].name}", first[0]))
    if "rule2" in kinds:
        first = next(perturb(gold, schema, db, gold_res, rng, weighted_operators(rng), timeout), None)
        if first is not None:
            text, op, _ = first
            second = [o for o in weighted_operators(rng) if o.name != op.name]
            two = next(perturb(text, schema, db, gold_res, rng, second, timeout), None)
            if two is not None:
                out.append((f"rule2:{op.name}+{two[1].name}", two[0]))
    if "equiv" in kinds and gold_res.rows:
        key = result_key(gold_res)
        # DISTINCT toggled keeps the rows of most golds: it comes last, and in one question of three
        ops = sorted(weighted_operators(rng), key=lambda op: op.name == "distinct_toggle")
        ops = ops if rng.random() < 1 / 3 else [op for op in ops if op.name != "distinct_toggle"]
        for text, op, res in perturb(gold, schema, db, gold_res, rng, ops, timeout, same=True):
            if result_key(res) == key:
                out.append((f"equiv:{op.name}", text))
                break
    if "failing" in kinds:
        broken = failing(gold, db, rng, timeout)
        if broken:
            how, text = rng.choice(broken)
            out.append((f"failing:{how}", text))
    if "neighbour" in kinds and neighbours is not None:
        for qid, other in neighbours.of(task):
            try:
                res = db.execute(other, timeout=timeout, max_rows=2000)
            except (SqlmendError, OSError):
                continue
            if differs(res, gold_res):
                out.append((f"neighbour:{qid}", other))
                break
    return out


def done_questions(out: Path) -> set[str]:
    """The ``qid`` of every line of a resumable JSONL file (a last line cut short by a kill is dropped
    first: its question is redone)."""
    done: set[str] = set()
    if out.exists() and out.stat().st_size:
        data = out.read_bytes()
        if not data.endswith(b"\n"):
            with out.open("r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)
        for line in out.read_text().splitlines():
            try:
                done.add(json.loads(line)["qid"])
            except (ValueError, KeyError):
                continue
    return done


@dataclass
class Prepared:
    """One training question, ready to search: its database, the gold's result key, its originals
    (:func:`_cases`, the gold first) and the search's input."""

    task: Task
    db: Any
    gold_key: tuple
    cases: list[tuple[str, str]]
    inp: SearchInput


def prepared(tasks: Iterable[Task], db_path: Callable[[str], str], out: Path, seed: int = 0,
             per_question: int = 2, timeout: float = 5.0, kinds: Iterable[str] = KINDS,
             neighbours: Neighbours | None = None,
             progress: Callable[[int], None] | None = None) -> Iterator[Prepared | str]:
    """The questions of ``tasks`` not yet in the resumable JSONL ``out`` (:func:`done_questions`), each
    :class:`Prepared` (``progress`` counts the skipped ones; the caller counts the others), or a message
    when its database or gold fails. The databases are closed at the end."""
    done = done_questions(out)
    conns: dict[str, Any] = {}
    try:
        for task in tasks:
            if task.question_id in done:
                if progress:
                    progress(1)
                continue
            rng = random.Random(f"{seed}:{task.question_id}")
            try:
                if task.db_id not in conns:
                    conns[task.db_id] = connect(db_path(task.db_id))
                db = conns[task.db_id]
                gold_res = db.execute(task.gold, timeout=timeout, max_rows=2000)
                cases = _cases(task, db, gold_res, rng, per_question, timeout, kinds, neighbours)
                inp = SearchInput(task.question, db.schema(), db.value_index(), task.evidence)
            except (SqlmendError, OSError) as exc:
                if progress:
                    progress(1)
                yield f"{task.question_id}: skipped ({exc})"
                continue
            yield Prepared(task, db, result_key(gold_res), cases, inp)
    finally:
        for db in conns.values():
            db.close()


def run_original(q: Prepared, text: str, settings: SearchSettings, timeout: float = 5.0) -> tuple[Any, list[Any]]:
    """One original of a prepared question run as the search runs it, and the static rules' findings
    on it (none when it does not parse)."""
    orig = execute_original(q.db, text, settings.timeout, settings.max_rows)
    return orig, rules.check(q.db, text, q.task.question, timeout=timeout) if orig.tree is not None else []


def flagged(orig: Any, findings: list[Any]) -> bool:
    """Whether earlier evidence flags an original (the search stage's ``scope=flagged``): a finding, an
    execution error, or an empty result."""
    return bool(findings or orig.error or orig.result is None or not orig.result.rows)


def build(tasks: Iterable[Task], db_path: Callable[[str], str], out: Path, per_question: int = 2,
          seed: int = 0, settings: SearchSettings | None = None, timeout: float = 5.0,
          progress: Callable[[int], None] | None = None, kinds: Iterable[str] = KINDS,
          neighbours: Neighbours | None = None, gold: bool = True) -> Iterator[str]:
    """Append one JSON line per case to ``out`` (skipping questions already there).

    ``gold``: also the gold's own case (off to add another kind to a case file that has it).

    Each line: ``{"qid", "db_id", "kind", "labels": [original, candidates...], "X": [[...], ...],
    "gens": [...]}``; a label is 1 when that query returns the gold's rows.

    Yields:
        A message per skipped question.
    """
    settings = settings or SearchSettings(budget=0.4)
    with out.open("a", encoding="utf-8") as fh:
        for q in prepared(tasks, db_path, out, seed, per_question, timeout, kinds, neighbours, progress):
            if isinstance(q, str):
                yield q
                continue
            task, db, gold_key, inp = q.task, q.db, q.gold_key, q.inp
            lines = []
            for kind, text in q.cases if gold else q.cases[1:]:
                orig, findings = run_original(q, text, settings, timeout)
                found = search(db, orig, inp, findings, settings)
                X = Featurizer(inp, db.dialect, findings).rows(orig, found.candidates)
                labels = [int(orig.result is not None and result_key(orig.result) == gold_key)]
                labels += [int(result_key(c.result) == gold_key) for c in found.candidates]
                gens = [""] + ["+".join(c.generators) for c in found.candidates]
                lines.append(json.dumps({"qid": task.question_id, "db_id": task.db_id, "kind": kind,
                                         "flagged": flagged(orig, findings),
                                         "labels": labels, "gens": gens,
                                         "X": [[round(v, 4) for v in row] for row in X]}))
            if lines:  # (without its gold a question may have no case: redone, cheaply, on a resume)
                fh.write("\n".join(lines) + "\n")
                fh.flush()
            if progress:
                progress(1)


def load(path: Path) -> list[dict[str, Any]]:
    """The cases of a training file (those whose features match :data:`FEATURE_NAMES` in length).

    Raises:
        ConfigError: every case has another number of features (built before the generator
            catalogue or the features changed: build the cases again).
    """
    out, other = [], set()
    for line in path.read_text().splitlines():
        try:
            case = json.loads(line)
        except ValueError:
            continue
        if case["X"] and len(case["X"][0]) == len(FEATURE_NAMES):
            out.append(case)
        elif case["X"]:
            other.add(len(case["X"][0]))
    if other and not out:
        from sqlmend.errors import ConfigError

        raise ConfigError(f"{path}: its cases have {sorted(other)} features, these generators make "
                          f"{len(FEATURE_NAMES)}; build the cases again (train-verifier --build-only)")
    return out


def held_out(db_id: str, fraction: float) -> bool:
    """Whether a database belongs to the held-out part (a stable hash of its id)."""
    return (zlib.crc32(db_id.encode()) % 1000) < fraction * 1000


def training_questions(tasks: list[Task], has_db: Callable[[str], bool], questions: int, skip: int = 0,
                       seed: int = 0) -> list[Task]:
    """The questions ``sqlmend train-verifier`` trains on: those with a database and a gold, in a
    seeded shuffle, ``[skip:skip + questions]``."""
    pool = [t for t in tasks if has_db(t.db_id) and t.gold]
    random.Random(seed).shuffle(pool)
    return pool[skip:skip + questions]


def seen_questions(tasks: list[Task], has_db: Callable[[str], bool], selection: dict[str, Any]) -> set[str]:
    """Ids of the questions a verifier's trees were fitted on, from its recorded ``selection``
    (``questions``, ``skip``, ``seed``; with ``refit`` false the held-out databases' questions,
    used only to calibrate the margins, are not among them)."""
    chosen = training_questions(tasks, has_db, selection["questions"], selection.get("skip", 0),
                                selection.get("seed", 0))
    holdout = 0.0 if selection.get("refit", True) else selection.get("holdout", 0.2)
    return {t.question_id for t in chosen if not held_out(t.db_id, holdout)}


def correct_weight(cases: list[dict[str, Any]]) -> float:
    """How much a correct original weighs (wrong / correct originals): the two weigh the same in
    training and in the stated precision."""
    n_gold = sum(c["labels"][0] == 1 for c in cases)
    return (len(cases) - n_gold) / n_gold if n_gold else 1.0


def auroc(p_none: list[float], is_error: list[bool]) -> float | None:
    """Area under the ROC curve of ``1 - P(no_error)`` as a score for "has an error" (here for the
    verifiers; the detectors of :mod:`sqlmend.detect` use it too).

    Args:
        p_none: P(no_error) per item.
        is_error: the truth per item.

    Returns:
        The AUROC (ties count half), or None when one class is absent.
    """
    pos = [1 - p for p, e in zip(p_none, is_error) if e]
    neg = [1 - p for p, e in zip(p_none, is_error) if not e]
    if not pos or not neg:
        return None
    ranked = sorted([(s, 1) for s in pos] + [(s, 0) for s in neg])
    rank_sum, i = 0.0, 0
    while i < len(ranked):  # average ranks over ties
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        rank_sum += sum(lab for _, lab in ranked[i:j]) * (i + j + 1) / 2
        i = j
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def export(clf: Any, names: list[str] | None = None) -> dict[str, Any]:
    """The trees of a fitted binary HistGradientBoostingClassifier as plain arrays (``names``: its
    feature names, default :data:`FEATURE_NAMES`)."""
    trees = []
    for iteration in clf._predictors:
        nodes = iteration[0].nodes
        trees.append({"feature": nodes["feature_idx"].tolist(), "threshold": nodes["num_threshold"].tolist(),
                      "left": nodes["left"].tolist(), "right": nodes["right"].tolist(),
                      "missing_left": nodes["missing_go_to_left"].astype(int).tolist(),
                      "is_leaf": nodes["is_leaf"].astype(int).tolist(),
                      "value": [round(float(v), 6) for v in nodes["value"]]})
    return {"kind": "hist-gradient-boosting", "baseline": float(np.ravel(clf._baseline_prediction)[0]),
            "features": list(names or FEATURE_NAMES), "trees": trees}


def fails(case: dict[str, Any]) -> bool:
    """Whether a case's original fails to run (its ``r_error`` feature; cases without features: no)."""
    return bool(case.get("X") and case["X"][0][FEATURE_NAMES.index("r_error")])


def decisions(cases: list[dict[str, Any]], scores: list[np.ndarray]) -> list[dict[str, Any]]:
    """Per case: original label, the best candidate's label, the score gap (best - original), the
    original's score, whether earlier evidence flags the original and whether it fails to run (the
    stage replaces such an original by its best candidate without a margin: no margin counts it)."""
    out = []
    for case, s in zip(cases, scores):
        base = {"kind": case["kind"], "flagged": bool(case.get("flagged")), "s0": float(s[0]) if len(s) else 1.0,
                "reachable": int(any(case["labels"][1:])), "orig": case["labels"][0],
                "fails": fails(case)}
        if len(s) < 2:
            out.append({**base, "best": 0, "gap": -1.0})
            continue
        best = 1 + int(np.argmax(s[1:]))
        out.append({**base, "best": case["labels"][best], "gap": float(s[best] - s[0])})
    return out


def searched(d: dict[str, Any], scope: str, suspect_below: float = 0.0) -> bool:
    """Whether a query of the decided list is searched under ``scope`` (the stage's rule)."""
    return scope == "all" or d["flagged"] or (scope == "suspect" and d["s0"] < suspect_below)


def outcome(decided: list[dict[str, Any]], margin: float, correct_weight: float = 1.0,
            scope: str = "all", suspect_below: float = 0.0) -> dict[str, Any]:
    """Fixed / broken / replacements at one margin, the queries of ``scope`` searched.

    ``precision`` counts each correct original ``correct_weight`` times (the mix of
    correct and wrong originals the precision is stated for); ``false_rate`` is over
    every correct original, searched or not. Originals that fail to run are left out (no
    margin decides them: :func:`first_choice` counts them).
    """
    decided = [d for d in decided if not d.get("fails")]
    rep = [d for d in decided if d["gap"] > margin and searched(d, scope, suspect_below)]
    fixed = sum(1 for d in rep if not d["orig"] and d["best"])
    broken = sum(1 for d in rep if d["orig"] and not d["best"])
    correct_orig = sum(d["orig"] for d in decided)
    wrong_orig = len(decided) - correct_orig
    weighted = sum(correct_weight if d["orig"] else 1.0 for d in rep)
    out = {"margin": margin, "scope": scope, "replaced": len(rep), "fixed": fixed, "broken": broken,
           "precision": fixed / weighted if rep else None,
           "fix_rate": fixed / wrong_orig if wrong_orig else 0.0,
           "false_rate": broken / correct_orig if correct_orig else 0.0,
           "wrong_originals": wrong_orig, "correct_originals": correct_orig}
    if scope == "suspect":
        out["suspect_below"] = suspect_below
        out["searched"] = sum(bool(searched(d, scope, suspect_below)) for d in decided)
    return out


def first_choice(decided: list[dict[str, Any]]) -> dict[str, Any]:
    """Originals that fail to run, each replaced by its best candidate whatever the margin (the
    stage's ``failed_original=replace``): how many, how many have a candidate returning the gold's
    rows, and how many the first choice fixes."""
    refused = [d for d in decided if d.get("fails")]
    return {"originals": len(refused), "reachable": sum(d["reachable"] for d in refused),
            "fixed": sum(d["best"] for d in refused if d["gap"] > -1.0)}


def _meets(o: dict[str, Any], precision: float, max_false_rate: float) -> bool:
    return (o["precision"] is None or o["precision"] >= precision) and o["false_rate"] <= max_false_rate


def calibrate(decided: list[dict[str, Any]], precision: float, max_false_rate: float,
              correct_weight: float = 1.0, scope: str = "all", suspect_below: float = 0.0) -> dict[str, Any]:
    """The smallest margin on a grid meeting both targets (the largest grid value when none does)."""
    grid = [round(float(x), 3) for x in np.arange(0.0, 1.0, 0.01)]
    for m in grid:
        o = outcome(decided, m, correct_weight, scope, suspect_below)
        if _meets(o, precision, max_false_rate):
            return o
    return outcome(decided, grid[-1], correct_weight, scope, suspect_below)


def calibrate_suspect(decided: list[dict[str, Any]], precision: float, max_false_rate: float,
                      correct_weight: float = 1.0) -> dict[str, Any]:
    """``scope=suspect``: the threshold on the original's score (an unflagged query is searched below
    it) and the margin that fix the most held-out wrong originals within both targets (ties: the
    lower threshold, fewer queries searched)."""
    best = None
    for t in [round(float(x), 2) for x in np.arange(0.0, 1.0001, 0.05)]:
        o = calibrate(decided, precision, max_false_rate, correct_weight, "suspect", t)
        if _meets(o, precision, max_false_rate) and (best is None or o["fixed"] > best["fixed"]):
            best = o
    return best or calibrate(decided, precision, max_false_rate, correct_weight, "suspect", 0.0)


def frontier(decided: list[dict[str, Any]], correct_weight: float = 1.0) -> dict[str, Any]:
    """Per scope (flagged, all): the most fixes on a 0.02 margin grid with at most 0, 1, 2 correct
    originals broken, and with at most one broken at a precision of at least 0.6 / 0.7 / 0.8 / 0.9."""
    out: dict[str, Any] = {}
    for scope in ("flagged", "all"):
        grid = [outcome(decided, round(float(m), 2), correct_weight, scope) for m in np.arange(0.0, 1.0, 0.02)]

        def best(ok):
            ok = [o for o in grid if ok(o)]
            o = max(ok, key=lambda o: (o["fixed"], o["margin"])) if ok else None
            return None if o is None else {k: o[k] for k in ("margin", "fixed", "broken", "replaced", "precision")}

        out[scope] = {f"broken<={b}": best(lambda o, b=b: o["broken"] <= b) for b in (0, 1, 2)}
        out[scope].update({f"precision>={p},broken<=1": best(lambda o, p=p: o["broken"] <= 1 and
                                                             (o["precision"] or 0.0) >= p)
                           for p in (0.6, 0.7, 0.8, 0.9)})
    return out


def evaluate(cases: list[dict[str, Any]], spec: dict[str, Any], holdout: float = 0.2) -> dict[str, Any]:
    """A verifier file on the held-out cases of ``cases``: its frontier (:func:`frontier`) and the
    outcome at its own margins."""
    from sqlmend.search.verifier import TreeEnsemble

    test = [c for c in cases if held_out(c["db_id"], holdout)]
    w_gold = correct_weight(cases)
    model = TreeEnsemble(spec["model"], names=FEATURE_NAMES)  # an older catalogue's trees read theirs by name
    scores = [model.proba(np.asarray(c["X"], dtype=np.float64)) for c in test]
    decided = decisions(test, scores)
    if "decider" in spec:
        decided = _decided_by(decided, _decider_rows(test, scores), TreeEnsemble(spec["decider"]).proba)
    d = spec.get("decision", {})
    own = {"flagged": outcome(decided, float(d.get("margin", 0.5)), w_gold, "flagged"),
           "all": outcome(decided, float(d.get("all_margin", d.get("margin", 0.5))), w_gold, "all")}
    if "suspect_below" in d:
        own["suspect"] = outcome(decided, float(d["suspect_margin"]), w_gold, "suspect", float(d["suspect_below"]))
    return {"cases": len(test), "questions": len({c["qid"] for c in test}),
            "databases": len({c["db_id"] for c in test}), "correct_weight": w_gold,
            "at_own_margins": own, "frontier": frontier(decided, w_gold),
            "failing_first_choice": first_choice(decided)}


def held_out_report(test: list[dict[str, Any]], scores: list[np.ndarray], precision: float,
                    max_false_rate: float, correct_weight: float,
                    decided: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Recall, selection and the calibrated decision of every scope on held-out cases (``scores``:
    one array per case, the original first; ``decided``: the decisions when another rule than the
    score gap makes them)."""
    decided = decided if decided is not None else decisions(test, scores)
    reach = [d for d in decided if not d["orig"]]
    chosen = {scope: calibrate(decided, precision, max_false_rate, correct_weight, scope)
              for scope in ("flagged", "all")}
    chosen["suspect"] = calibrate_suspect(decided, precision, max_false_rate, correct_weight)
    kinds = sorted({d["kind"].split(":")[0] for d in decided})
    per_kind = {}
    for k in kinds:
        part = [d for d in decided if d["kind"].split(":")[0] == k]
        per_kind[k] = {scope: outcome(part, c["margin"], correct_weight, scope, c.get("suspect_below", 0.0))
                       for scope, c in chosen.items()}
        wrong = [d for d in part if not d["orig"]]
        per_kind[k]["cases"] = len(part)
        per_kind[k]["recall"] = sum(d["reachable"] for d in wrong) / len(wrong) if wrong else None
    return {"cases": len(test), "questions": len({c["qid"] for c in test}),
            "databases": len({c["db_id"] for c in test}),
            "candidate_recall": sum(d["reachable"] for d in reach) / len(reach) if reach else 0.0,
            "selection_accuracy": (sum(d["best"] for d in reach if d["reachable"]) /
                                   max(1, sum(d["reachable"] for d in reach))),
            "chosen": chosen, "per_kind": per_kind, "correct_weight": correct_weight,
            "failing_first_choice": first_choice(decided),
            "curve": [outcome(decided, m, correct_weight) for m in (0.0, 0.2, 0.4, 0.6, 0.8)],
            "curve_flagged": [outcome(decided, m, correct_weight, "flagged") for m in (0.0, 0.2, 0.4, 0.6, 0.8)]}


def _decider_rows(cases: list[dict[str, Any]], scores: list[np.ndarray]) -> list[np.ndarray | None]:
    out = []
    for c, s in zip(cases, scores):
        if len(s) < 2:
            out.append(None)
            continue
        best = 1 + int(np.argmax(s[1:]))
        out.append(decider_row(s, c["X"][0], c["X"][best], bool(c.get("flagged"))))
    return out


def _decided_by(decided: list[dict[str, Any]], rows: list[np.ndarray | None],
                proba: Callable[[np.ndarray], np.ndarray]) -> list[dict[str, Any]]:
    """``decided`` with the decider's P(fix) (``proba`` of the :func:`_decider_rows`) as the gap."""
    some = [r for r in rows if r is not None]
    probs = iter(proba(np.asarray(some)).tolist() if some else [])
    return [dict(d, gap=next(probs) if r is not None else -1.0) for d, r in zip(decided, rows)]


def database_folds(cases: list[dict[str, Any]], folds: int) -> list[int]:
    """The fold of each case for out-of-fold calibration (a stable hash of its database)."""
    return [zlib.crc32(f"{c['db_id']}#k".encode()) % folds for c in cases]


def out_of_fold(cases: list[dict[str, Any]], folds: int,
                fitted: Callable[[list[dict[str, Any]]], Any], fold: list[int] | None = None) -> list[np.ndarray]:
    """Every case's scores (original first) by a model ``fitted`` on the other folds (``fold``: each
    case's fold in ``range(folds)``, default :func:`database_folds`)."""
    fold = database_folds(cases, folds) if fold is None else fold
    out: list[np.ndarray | None] = [None] * len(cases)
    for k in range(folds):
        model = fitted([c for c, f in zip(cases, fold) if f != k])
        for i, (c, f) in enumerate(zip(cases, fold)):
            if f == k:
                out[i] = model.predict_proba(np.asarray(c["X"], dtype=np.float64))[:, 1]
    return out  # type: ignore[return-value]


def fit(cases: list[dict[str, Any]], holdout: float = 0.2, precision: float = 0.93,
        max_false_rate: float = 0.01, max_iter: int = 300, seed: int = 0,
        baseline: dict[str, Any] | None = None, refit: bool = True, decider: bool = False,
        oof_folds: int = 0) -> dict[str, Any]:
    """Train on the training databases, calibrate on the held-out ones, refit on all (``refit``; else
    ship the calibrated model itself), return the spec.

    ``oof_folds``: calibrate the margins instead on out-of-fold scores of every case
    (:func:`out_of_fold`, that many database folds, each model trained as the shipped one on the
    rest): every training gold then counts as a correct original, not only the held-out ones —
    a false-rate target of 0.1% needs that many. The held-out report stays beside it.

    ``decider``: also train a replace-or-keep model (:data:`DECIDER_NAMES`) on out-of-fold scores of
    two database folds of the training part; its P(the best candidate fixes a wrong original) then
    takes the place of the score gap, with thresholds calibrated per scope in the same way.

    The decision stores one margin per scope (``flagged``, ``all``, and for ``suspect`` the threshold
    on the original's score too), each the calibrated one for that scope. ``baseline``: an earlier
    verifier file, scored and calibrated on the same held-out cases for comparison.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sqlmend.search.verifier import TreeEnsemble

    if decider and refit:
        raise ValueError("the decider is trained on out-of-fold scores of the calibrated model: use refit=False")
    w_gold = correct_weight(cases)

    def matrix(part):
        X = np.asarray([row for c in part for row in c["X"]], dtype=np.float64)
        y = np.asarray([lab for c in part for lab in c["labels"]], dtype=np.int64)
        w = np.asarray([w_gold if c["labels"][0] == 1 else 1.0 for c in part for _ in c["labels"]])
        return X, y, w

    def fitted(part):
        X, y, w = matrix(part)
        return model().fit(X, y, sample_weight=w)

    def model():
        return HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=0.08, max_leaf_nodes=31,
                                              min_samples_leaf=40, l2_regularization=1.0, random_state=seed)

    train = [c for c in cases if not held_out(c["db_id"], holdout)]
    test = [c for c in cases if held_out(c["db_id"], holdout)]
    start = time.perf_counter()
    clf = fitted(train)
    scores = [clf.predict_proba(np.asarray(c["X"], dtype=np.float64))[:, 1] for c in test]
    held = held_out_report(test, scores, precision, max_false_rate, w_gold)
    dec_spec = None
    if decider:
        halves = [int(held_out(c["db_id"] + "#fold", 0.5)) for c in train]
        oof_scores = out_of_fold(train, 2, fitted, halves)
        rows = _decider_rows(train, oof_scores)
        keep = [(r, d) for r, d in zip(rows, decisions(train, oof_scores)) if r is not None]
        y = [int(not d["orig"] and d["best"]) for _, d in keep]  # the best candidate fixes a wrong original
        w = [w_gold if d["orig"] else 1.0 for _, d in keep]
        dec = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=30,
                                             l2_regularization=1.0, random_state=seed)
        dec.fit(np.asarray([r for r, _ in keep]), np.asarray(y), sample_weight=np.asarray(w))
        decided = _decided_by(decisions(test, scores), _decider_rows(test, scores),
                              lambda X: dec.predict_proba(X)[:, 1])
        gap_rule = {k: v for k, v in held.items() if k in ("chosen", "per_kind")}
        held = held_out_report(test, scores, precision, max_false_rate, w_gold, decided)
        held["gap_rule"] = gap_rule
        dec_spec = export(dec, DECIDER_NAMES)
    if baseline is not None:
        old = TreeEnsemble(baseline["model"], names=FEATURE_NAMES)
        old_scores = [old.proba(np.asarray(c["X"], dtype=np.float64)) for c in test]
        old_decided = decisions(test, old_scores)
        held["baseline"] = held_out_report(test, old_scores, precision, max_false_rate, w_gold, old_decided)
        old_margin = float(baseline.get("decision", {}).get("margin", 0.5))
        held["baseline"]["shipped_margin"] = {
            scope: outcome(old_decided, old_margin, w_gold, scope) for scope in ("flagged", "all")}
    spec = export(fitted(cases) if refit else clf)
    chosen = held["chosen"]
    calibration: dict[str, Any] = {"method": "held-out databases", "holdout": holdout}
    if oof_folds:
        if dec_spec is not None:
            raise ValueError("out-of-fold calibration is for the score gap, not the decider")
        oof = held_out_report(cases, out_of_fold(cases, oof_folds, fitted), precision, max_false_rate, w_gold)
        chosen = oof["chosen"]
        calibration = {"method": "out-of-fold", "folds": oof_folds,
                       **{k: oof[k] for k in ("cases", "questions", "databases", "candidate_recall",
                                              "selection_accuracy", "chosen", "per_kind", "curve")}}
    out_spec: dict[str, Any] = {"model": spec}
    if dec_spec is not None:
        out_spec["decider"] = dec_spec
    return {**out_spec, "decision": {"rule": "decider" if dec_spec is not None else "gap",
                                        "margin": chosen["flagged"]["margin"],
                                        "all_margin": chosen["all"]["margin"],
                                        "suspect_below": chosen["suspect"]["suspect_below"],
                                        "suspect_margin": chosen["suspect"]["margin"],
                                        "precision_target": precision, "max_false_rate": max_false_rate},
            "training": {"cases": len(cases), "questions": len({c["qid"] for c in cases}),
                         "rows": sum(len(c["labels"]) for c in cases), "held_out": held,
                         "calibration": calibration,
                         "seconds": round(time.perf_counter() - start, 1), "max_iter": max_iter,
                         "refit": refit, "decider": decider}}


def fit_failing(cases: list[dict[str, Any]], main: dict[str, Any], holdout: float = 0.2, max_iter: int = 200,
                seed: int = 0) -> dict[str, Any]:
    """A ranker for originals that fail to run, trained on those cases of the training databases.

    Such an original is replaced by its best candidate whatever the margin (the stage's
    ``failed_original=replace``), so only the ranking of its candidates matters: the ranker
    learns P(correct) of a candidate from those cases alone (``labels[1:]``; the original itself,
    always wrong, is left out). The held-out report compares its first choice with that of the
    verifier ``main`` (a weights file) on the held-out databases' failing originals.

    Returns:
        ``{"model": trees, "training": report}`` (the ``failing`` entry of a weights file).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sqlmend.search.verifier import TreeEnsemble

    failing_cases = [c for c in cases if len(c["X"]) > 1 and fails(c)]
    train = [c for c in failing_cases if not held_out(c["db_id"], holdout)]
    test = [c for c in failing_cases if held_out(c["db_id"], holdout)]
    if not train:
        raise ValueError("no case of an original that fails to run: build them with --kinds failing")
    start = time.perf_counter()
    X = np.asarray([row for c in train for row in c["X"][1:]], dtype=np.float64)
    y = np.asarray([lab for c in train for lab in c["labels"][1:]], dtype=np.int64)
    clf = HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=0.08, max_leaf_nodes=31,
                                         min_samples_leaf=20, l2_regularization=1.0, random_state=seed).fit(X, y)
    old = TreeEnsemble(main["model"], names=FEATURE_NAMES)

    def first_fixes(score) -> int:
        return sum(c["labels"][1 + int(np.argmax(score(np.asarray(c["X"][1:], dtype=np.float64))))] for c in test)

    report = {"cases": len(train), "candidates": int(len(y)), "held_out": {
        "originals": len(test), "reachable": sum(int(any(c["labels"][1:])) for c in test),
        "first_choice_fixes": first_fixes(lambda M: clf.predict_proba(M)[:, 1]),
        "main_model_first_choice_fixes": first_fixes(old.proba), "databases": len({c["db_id"] for c in test})},
        "holdout": holdout, "max_iter": max_iter, "seconds": round(time.perf_counter() - start, 1)}
    return {"model": export(clf), "training": report}

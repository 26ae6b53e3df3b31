"""``sqlmend bench alternatives``: other answers as evidence of error and as repairs, measured.

One prediction file is corrected three ways on the same questions, each paired with no correction
and with the default correction (:func:`sqlmend.evaluation.compare.compare`):

* ``default``: the default stages, no alternatives (the reference of "Δ vs default");
* ``strict``: the default stages with the alternatives (``--alt``), the consensus stage deciding by
  its strict rule;
* ``self-consistency``: the baseline every team knows: the rows most of the answers (the
  prediction and its alternatives) return, ties to the prediction (no sqlmend stage);

and, with ``risk``, on MIRA's split of the questions (:mod:`sqlmend.data.split`): the risk rule's
threshold calibrated on the *history* part (conformal risk control over its correct queries,
:mod:`sqlmend.consensus.risk`), then every row above measured on the *test* part only, the risk rule
among them. A row gives fixed / regressed (also without the gold-suspect questions) / ΔEX against no
correction and against the default, and, for the consensus rows, the detection of the vote:
flagged (the finding ``consensus``), its precision, and the AUROC of sqlmend's P(error) of the
prediction as given for "the prediction is wrong" (the vote's; when an earlier stage rewrote the
prediction before the vote, the vote on the prediction itself with that rewrite as one more voter:
:func:`given_p_error`). The curve: fixes and breaks of the consensus candidate alone (against no
correction) over the risk rule's threshold, from the strict run's traces.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlmend.types import Correction, Task

#: The thresholds of the curve: the risk score lies in [-1, 3], the candidates mostly in [0, 1], the strict
#: rule's replacements in [2, 3] (:func:`sqlmend.consensus.risk.rank`).
CURVE = tuple(round(-0.2 + 0.1 * i, 2) for i in range(13)) + tuple(round(2.0 + 0.25 * i, 2) for i in range(5))
#: The run folder of the strict rule (bumped when the consensus stage's traces change).
STRICT_RUN = "strict-v5"
#: The version of the risk rule's family of decisions (bumped when it changes: its runs are not reused).
RISK_RULE = "v3"


@dataclass
class AltRow:
    """One way of correcting one file, paired with no correction and with the default correction."""

    pred: str
    alternatives: list[str]
    rule: str  # default | strict | self-consistency | risk ALPHA
    part: str  # all | test
    n: int
    fixed: int
    regressed: int
    regressed_clean: int  # without the gold-suspect questions
    delta_ex: float
    delta_vs_default: float
    flagged: int | None = None  # the consensus finding (the vote goes against the prediction)
    precision: float | None = None  # of the flags: the prediction is wrong
    auroc: float | None = None  # of P(error) of the prediction as given (given_p_error) for "it is wrong"
    changed: int = 0
    seconds_per_query: float | None = None  # the pipeline's, all stages
    consensus_seconds: float | None = None  # the consensus stage's, per query with alternatives
    consensus_work: float | None = None  # the work its queries did per query (seconds of work, SQLite: counted)
    threshold: float | None = None  # risk: the calibrated threshold
    history: int | None = None  # risk: the correct history queries it was calibrated on

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AltReport:
    """The rows of one file and its curve."""

    rows: list[AltRow]
    curve: dict[str, Any] = field(default_factory=dict)  # pred, thresholds, fixes, breaks, breaks_clean

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.rows], "curve": self.curve}


def self_consistency(ds: Any, tasks: list[Task], timeout: float = 30.0, max_rows: int = 10_000) -> dict[str, str]:
    """The self-consistency baseline: per task, the SQL of the rows most answers return (the task's SQL
    and its alternatives, each one vote; by the evaluator's set rule), ties to the task's SQL, then to
    the first alternative in order. An answer that fails to run or is not one read-only query has no vote.

    Returns:
        ``{question_id: the SQL chosen}``.
    """
    from sqlmend import guard
    from sqlmend.errors import DatabaseError
    from sqlmend.matching import set_key

    out: dict[str, str] = {}
    with ds.databases() as opened:
        for t in tasks:
            db = opened(t.db_id)
            keys: list[Any] = []
            for text in [t.sql, *t.alternatives]:
                key = None
                if db is not None and text.strip() and not guard.read_only_problem(text, db.dialect):
                    try:
                        key = set_key(db.execute(text, timeout=timeout, max_rows=max_rows).rows)
                    except DatabaseError:
                        key = None
                keys.append(key)
            votes = Counter(k for k in keys if k is not None)
            if not votes:
                out[t.question_id] = t.sql
                continue
            best = max(votes.values())
            if keys[0] is not None and votes[keys[0]] == best:
                out[t.question_id] = t.sql
                continue
            pick = next(i for i, k in enumerate(keys) if k is not None and votes[k] == best)
            out[t.question_id] = [t.sql, *t.alternatives][pick]
    return out


def _consensus(c: Correction) -> dict[str, Any] | None:
    return next((s.detail.get("consensus") for s in c.stages if s.stage == "consensus"), None)


def given_p_error(vote: dict[str, Any]) -> float:
    """P(error) of the query as the caller gave it (what is labelled right or wrong): the vote on it when an
    earlier stage rewrote it before the vote (:func:`sqlmend.consensus.vote.given_vote`), else the vote's.

    >>> given_p_error({"p_error": 0.1}), given_p_error({"p_error": 0.1, "given": {"p_error": 0.8}})
    (0.1, 0.8)
    """
    return float(vote["given"]["p_error"] if vote.get("given") else vote["p_error"])


def _seconds(cs: dict[str, Correction], ids: list[str], stage: str | None = None) -> float:
    total = sum(s.seconds for q in ids for s in cs[q].stages if stage is None or s.stage == stage)
    return round(total / len(ids), 4) if ids else 0.0


def _run(tasks: list[Task], config: Any, db_root: Any, checkpoint: Path, progress: bool) -> dict[str, Correction]:
    from sqlmend.pipeline import correct_batch

    if not tasks:
        return {}
    return {c.question_id: c for c in correct_batch(tasks, config, checkpoint=checkpoint, progress=progress,
                                                    db_root=db_root)}


def _signature(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:10]


def bench_alternatives(pred: Path, alternatives: list[Path], out: Path, *, dataset: str = "spider-dev",
                       db_root: str | None = None, risk: float | None = None, seed: int = 0, fraction: float = 0.25, workers: int = 2,
                       timeout: float = 30.0, sample: int | None = None, history_out: Path | None = None,
                       progress: bool = True, on_row: Callable[[AltRow], None] | None = None) -> AltReport:
    """Measure the consensus stage on one file (see the module doc).

    Args:
        pred: the prediction file corrected.
        alternatives: prediction files of other answers to the same questions (aligned with ``pred``).
        out: the folder of the run folders (a rerun resumes from their checkpoints).
        dataset: the benchmark the files answer (a name or a task file).
        db_root: the databases folder ``<db_id>/<db_id>.sqlite`` (a task file's; default: the dataset's).
        risk: also calibrate the risk rule at this risk on the history part and measure on the test part.
        seed: the split's seed.
        fraction: the history part's share per database.
        workers: questions corrected in parallel, and evaluator processes.
        timeout: seconds per execution (the pipeline's and the evaluator's).
        sample: a seeded sample of N questions (None: all).
        history_out: also write the labelled history (the whole file's, or the history part's with
            ``risk``) here, for ``sqlmend correct --risk ALPHA --risk-history FILE``.
        progress: show progress bars.
        on_row: told of each row as it is made.

    Returns:
        The rows and the curve.
    """
    from sqlmend.batch.runner import with_alternatives
    from sqlmend.evaluation.compare import compare
    from sqlmend.evaluation.evaluate import CachedEvaluator
    from sqlmend.evaluation.suspects import gold_suspects
    from sqlmend.consensus.risk import History, Labelled
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions
    from sqlmend.data.sampling import choose
    from sqlmend.data.split import split_tasks
    from sqlmend.pipeline import PipelineConfig
    from sqlmend.search.train import auroc

    pred, alternatives = Path(pred), [Path(a) for a in alternatives]
    ds = load_dataset(dataset, db_root=db_root)
    preds = load_predictions(pred, ds)
    tasks = [t for t in choose(ds.with_sql(preds), None, sample, seed) if ds.db_path(t.db_id) is not None]
    with_alts = with_alternatives(tasks, ds, alternatives)
    ids = [t.question_id for t in tasks]
    names = [a.stem for a in alternatives]
    folder = out / pred.stem
    alt_folder = folder / f"alt-{_signature(alternatives)}"
    alt_folder.mkdir(parents=True, exist_ok=True)
    (alt_folder / "alternatives.json").write_text(json.dumps([str(a) for a in alternatives], indent=1) + "\n",
                                                  encoding="utf-8")
    config = PipelineConfig(workers=workers, timeout=timeout)
    default = _run(tasks, config, ds.db_root, folder / "default" / "corrections.jsonl", progress)
    strict = _run(with_alts, config, ds.db_root, alt_folder / STRICT_RUN / "corrections.jsonl", progress)
    sc = self_consistency(ds, with_alts, timeout)
    suspects = set(gold_suspects(ds, ids, 10.0))
    evaluator = CachedEvaluator(ds, timeout, workers)
    before_all = evaluator({q: preds[q] for q in ids}, pred.stem)
    # each consensus candidate on its own, for the curve and the history's labels
    votes = {q: _consensus(strict[q]) for q in ids}
    cand = {q: v["alternatives"][v["candidate"]]["sql"] for q, v in votes.items() if v and v["candidate"] is not None}
    cand_eval = evaluator(cand, f"{pred.stem}+candidates")

    def row(rule: str, part: str, scope: list[str], after: dict[str, str], runs: dict[str, Correction] | None,
            **extra: Any) -> AltRow:
        before = evaluator({q: preds[q] for q in scope}, pred.stem)
        dflt = evaluator({q: default[q].sql for q in scope}, f"{pred.stem}+default")
        got = evaluator({q: after[q] for q in scope}, f"{pred.stem}+{rule}")
        vs_input, vs_default = compare(before, got, suspects), compare(dflt, got, suspects)
        r = AltRow(pred=pred.stem, alternatives=[] if rule == "default" else names, rule=rule, part=part,
                   n=vs_input.all.n, fixed=len(vs_input.all.fixed), regressed=len(vs_input.all.regressed),
                   regressed_clean=len(vs_input.clean.regressed), delta_ex=round(vs_input.all.delta_ex, 2),
                   delta_vs_default=round(vs_default.all.delta_ex, 2), changed=len(vs_input.all.changed), **extra)
        scored = [q for q in scope if before.result(q).scored]
        if runs is not None:
            r.seconds_per_query = _seconds(runs, scope)
            with_vote = [q for q in scored if votes.get(q)]
            if rule != "default" and with_vote:
                flags = [q for q in with_vote if any(f.code == "consensus" for f in runs[q].findings)]
                wrong = {q for q in with_vote if not before.result(q).correct}
                r.flagged = len(flags)
                r.precision = round(sum(q in wrong for q in flags) / len(flags), 4) if flags else None
                a = auroc([1 - given_p_error(votes[q]) for q in with_vote], [q in wrong for q in with_vote])
                r.auroc = None if a is None else round(a, 4)
                r.consensus_seconds = _seconds(runs, with_vote, "consensus")
                work = [s.detail["work"] for q in with_vote for s in runs[q].stages
                        if s.stage == "consensus" and "work" in s.detail]
                r.consensus_work = round(sum(work) / len(work), 6) if work else None
        if on_row is not None:
            on_row(r)
        return r

    rows = [row("default", "all", ids, {q: default[q].sql for q in ids}, default),
            row("strict", "all", ids, {q: strict[q].sql for q in ids}, strict),
            row("self-consistency", "all", ids, sc, None)]
    labelled = [Labelled(q, before_all.result(q).correct, votes[q]["decision"]["score"] if votes.get(q) else None,
                         cand_eval.result(q).correct if q in cand else None)
                for q in ids if before_all.result(q).scored]
    curve = _curve(labelled, {q for q in ids if q in suspects}, votes, pred.stem)
    history = History(labelled, source=f"{pred.name} (all questions)", alternatives=names)
    if risk is not None:
        split = split_tasks(ds.tasks, fraction=fraction, seed=seed)
        part = set(split.history)
        history = History([x for x in labelled if x.question_id in part],
                          source=f"{pred.name}, history part (fraction {fraction:g}, seed {seed})", alternatives=names)
        threshold = history.threshold(risk)
        test = [q for q in ids if q in set(split.test)]
        risk_config = PipelineConfig(workers=workers, timeout=timeout,
                                     options={"consensus": {"threshold": 2.0 if threshold is None else threshold}})
        tag = f"risk-{risk:g}-seed{seed}-{'none' if threshold is None else f'{threshold:.6f}'}-{RISK_RULE}"
        by_id = {t.question_id: t for t in with_alts}
        risky = _run([by_id[q] for q in test], risk_config, ds.db_root, alt_folder / tag / "corrections.jsonl",
                     progress)
        rows += [row("default", "test", test, {q: default[q].sql for q in test}, default),
                 row("strict", "test", test, {q: strict[q].sql for q in test}, strict),
                 row("self-consistency", "test", test, sc, None),
                 row(f"risk {risk:g}", "test", test, {q: risky[q].sql for q in test}, risky,
                     threshold=threshold, history=history.correct)]
        curve["calibrated"] = threshold
    if history_out is not None:
        history.save(history_out)
    return AltReport(rows, curve)


def _curve(labelled: list[Any], suspects: set[str], votes: dict[str, Any], pred: str) -> dict[str, Any]:
    """Fixes and breaks of the consensus candidate alone (against no correction) at each threshold of
    :data:`CURVE`; an original that fails to run is replaced at every threshold."""
    fails = {q for q, v in votes.items() if v and v["decision"].get("tier") == "fails"}
    pts: dict[str, list[int]] = {"fixes": [], "breaks": [], "breaks_clean": []}
    for t in CURVE:
        taken = [x for x in labelled if x.fixes is not None and (x.question_id in fails
                                                                  or (x.score is not None and x.score >= t))]
        pts["fixes"].append(sum(1 for x in taken if not x.correct and x.fixes))
        pts["breaks"].append(sum(1 for x in taken if x.correct and not x.fixes))
        pts["breaks_clean"].append(sum(1 for x in taken if x.correct and not x.fixes and x.question_id not in suspects))
    return {"pred": pred, "thresholds": list(CURVE), **pts}


def markdown(rows: list[AltRow]) -> str:
    """The rows as a Markdown table."""
    head = ("| predictions | alternatives | rule | part | n | fixed | regressed | regressed (gold-clean) | ΔEX "
            "| Δ vs default | flagged | precision | AUROC | s/query | consensus s/query |\n" + "|---" * 15 + "|\n")

    def num(v: Any, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    return head + "".join(
        f"| {r.pred} | {', '.join(r.alternatives) or '-'} | {r.rule}"
        f"{f' (threshold {r.threshold:.3f}, {r.history} correct history queries)' if r.threshold is not None else ''}"
        f" | {r.part} | {r.n} | {r.fixed} | {r.regressed} | {r.regressed_clean} | {r.delta_ex:+.2f} "
        f"| {r.delta_vs_default:+.2f} | {num(r.flagged, 'd')} | {num(r.precision, '.2f')} | {num(r.auroc, '.3f')} "
        f"| {num(r.seconds_per_query, '.3f')} | {num(r.consensus_seconds, '.3f')} |\n" for r in rows)


def curve_chart(curve: dict[str, Any]) -> Any:
    """The curve as an inline SVG line chart."""
    from sqlmend.review import svg

    return svg.lines(curve["thresholds"], {"fixes": [float(v) for v in curve["fixes"]],
                                           "breaks": [float(v) for v in curve["breaks"]],
                                           "breaks (gold-clean)": [float(v) for v in curve["breaks_clean"]]},
                     f"{curve['pred']}: the consensus candidate alone, fixes and breaks", "risk rule's threshold",
                     width=760)


def write_svgs(folder: Path, reports: list[AltReport]) -> list[Path]:
    """Each file's curve as ``alternatives-<pred>.svg``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for rep in reports:
        path = folder / f"alternatives-{rep.curve['pred']}.svg"
        path.write_text(str(curve_chart(rep.curve)) + "\n", encoding="utf-8")
        out.append(path)
    return out


def write_html(path: Path, reports: list[AltReport]) -> Path:
    """A self-contained HTML report: per file, the curve of fixes and breaks over the threshold; then every row."""
    from sqlmend.review.report import write_page

    rows = [r for rep in reports for r in rep.rows]
    head = ["predictions", "alternatives", "rule", "part", "n", "fixed", "regressed", "gold-clean", "ΔEX",
            "Δ vs default", "flagged", "precision", "AUROC", "s/query", "consensus s/query"]
    table = [[r.pred, ", ".join(r.alternatives) or "-", r.rule, r.part, r.n, r.fixed, r.regressed, r.regressed_clean,
              f"{r.delta_ex:+.2f}", f"{r.delta_vs_default:+.2f}", "-" if r.flagged is None else r.flagged,
              "-" if r.precision is None else f"{r.precision:.2f}", "-" if r.auroc is None else f"{r.auroc:.3f}",
              "-" if r.seconds_per_query is None else f"{r.seconds_per_query:.3f}",
              "-" if r.consensus_seconds is None else f"{r.consensus_seconds:.3f}"] for r in rows]
    charts = {rep.curve["pred"]: {"chart": curve_chart(rep.curve), "calibrated": rep.curve.get("calibrated")}
              for rep in reports}
    return write_page(path, "alternatives.html", charts=charts, head=head, rows=table)

"""``sqlmend bench model-sim``: the model strategies with a simulated model of known quality.

For each prediction file, each strategy and each model quality q, the file is corrected
with the strategy's model stages answered by :class:`~sqlmend.bench.simmodel.SimulatedModel`
at fix rate q and judge accuracy q (in process, or over the OpenAI protocol with
``http=True``), and paired with no correction and with the default correction without a
model. A row says what it fixed, what it broke (also without the gold-suspect questions),
ΔEX, ΔEX against the default, model calls per query, how many correct queries the model was
asked to touch, and which gate admitted each model rewrite.

The strategies (:data:`STRATEGIES`): sqlmend's own (``errorllm``: ErrorLLM's refinement after
the default stages; ``mira``: MIRA's memory built from the file's history part by the model
judge, then used online by the model, measured on the test part; ``listwise``: the search's
candidates chosen by the model) and the baselines (``self-correction``, ``din-sql``,
``self-debug``, ``mac-sql``: refinement alone, as published, no detection before it).

Cost: the default correction runs once per file; a strategy runs every task at its first
quality and, at the others, only the tasks where the model was called (a task where it was not
never reached the model, so its correction is the same at every quality). A changed SQL is
executed against the gold by the evaluator; an unchanged one keeps its verdict.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlmend.bench.evaluate import CachedEvaluator
from sqlmend.bench.simmodel import Oracle, Rates, SimulatedModel, wrong_pool
from sqlmend.types import Correction

#: Strategy -> (pipeline strategy, the llm stages the simulated model answers).
STRATEGIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "errorllm": ("errorllm", ("refiner", "localizer")),
    "mira": ("errorllm", ("judge", "recovery", "solver")),
    "listwise": ("errorllm", ("verifier",)),
    "self-correction": ("self-correction", ("baseline",)),
    "din-sql": ("din-sql", ("baseline",)),
    "self-debug": ("self-debug", ("baseline",)),
    "mac-sql": ("mac-sql", ("baseline",)),
}
#: sqlmend's own model strategies (the first law is asked of these); the rest are baselines.
OURS = ("errorllm", "mira", "listwise")
QUALITIES = (0.2, 0.4, 0.6, 0.8)


@dataclass
class SimRow:
    """One strategy on one file at one model quality."""

    pred: str
    strategy: str
    quality: float
    n: int
    fixed: int
    regressed: int
    regressed_clean: int
    delta_ex: float
    delta_vs_default: float
    calls_per_query: float
    touched_correct: int  # correct originals the model was asked about (a call made)
    broken_by_model: int  # of those, made wrong by a model rewrite the guard let through
    delta_vs_default_clean: float = 0.0  # Δ vs default without the gold-suspect questions
    admitted_by: dict[str, int] = field(default_factory=dict)  # the gate that admitted each model rewrite
    rates: str = ""
    transport: str = "in-process"
    part: str = "all"  # mira: the test part
    gate: str = "default"  # the model gate: default (on for sqlmend's strategies), on or off

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def calls(c: Correction) -> int:
    """Model calls one correction made, over its stages."""
    return sum(s.calls for s in c.stages)


def admitted_by(c: Correction) -> str | None:
    """Which check admitted the model rewrite a correction kept (None: it kept none)."""
    for s in c.stages:
        if s.calls and s.candidate and s.verdict is not None and s.verdict.accepted and s.verdict.sql == c.sql:
            return str(s.detail.get("admitted_by") or "guard")
    return None


def row(pred: str, strategy: str, quality: float, before: Any, after: Any, default: Any,
        corrections: dict[str, Correction], suspects: set[str], rates: Rates, transport: str, part: str) -> SimRow:
    """Pair one run's evaluation with no correction's and the default correction's (same questions)."""
    from sqlmend.bench.compare import compare

    vs_input, vs_default = compare(before, after, suspects), compare(default, after, suspects)
    n = vs_input.all.n
    ids = [r.question_id for r in after.results if r.scored]
    touched = [q for q in ids if before.result(q).correct and calls(corrections[q])]
    broken = [q for q in touched if not after.result(q).correct and admitted_by(corrections[q])]
    gates = Counter(gate for q in ids if (gate := admitted_by(corrections[q])))
    return SimRow(pred=pred, strategy=strategy, quality=quality, n=n, fixed=len(vs_input.all.fixed),
                  regressed=len(vs_input.all.regressed), regressed_clean=len(vs_input.clean.regressed),
                  delta_ex=round(vs_input.all.delta_ex, 2), delta_vs_default=round(vs_default.all.delta_ex, 2),
                  calls_per_query=round(sum(calls(corrections[q]) for q in ids) / n, 3) if n else 0.0,
                  delta_vs_default_clean=round(vs_default.clean.delta_ex, 2),
                  touched_correct=len(touched), broken_by_model=len(broken), admitted_by=dict(gates),
                  rates=rates.describe(), transport=transport, part=part)


class _Serve:
    """The simulated model behind the OpenAI protocol (:mod:`sqlmend.llm.server`) on loopback."""

    def __init__(self, sim: SimulatedModel):
        from sqlmend.llm.openai_compat import OpenAIBackend
        from sqlmend.llm.server import ServerThread, create_app

        self.thread = ServerThread(create_app(sim)).start()
        self.client = OpenAIBackend(sim.model, base_url=self.thread.url, api_key_env="", json_mode="auto",
                                    name=f"http:{sim.model}", timeout=120.0)

    def close(self) -> None:
        self.thread.stop()


def _resolver(backend: Any, stages: tuple[str, ...]) -> Callable[[str], Any]:
    return lambda stage: backend if stage in stages else None


def _run(tasks: list[Any], config: Any, resolve: Callable[[str], Any], db_root: Any, checkpoint: Path,
         progress: bool) -> dict[str, Correction]:
    from sqlmend.pipeline import correct_batch

    if not tasks:
        return {}
    done = correct_batch(tasks, config, checkpoint=checkpoint, progress=progress, resolve=resolve, db_root=db_root)
    return {c.question_id: c for c in done}


def _config(strategy: str, workers: int, memory_store: str | None = None, model_gate: bool | None = None) -> Any:
    from sqlmend.pipeline import PipelineConfig

    options = {"memory": {"store": memory_store}} if memory_store else {}
    return PipelineConfig(strategy=STRATEGIES[strategy][0], workers=workers, options=options, model_gate=model_gate)


def _tag(rates: Rates, transport: str, model_gate: bool | None = None) -> str:
    gate = "" if model_gate is None else f"|gate={model_gate}"
    return hashlib.sha256(f"{rates}|{transport}{gate}".encode()).hexdigest()[:8]


def bench_model_sim(preds: list[Path], qualities: list[float], strategies: list[str], out: Path,
                    dataset: str = "spider-dev", pool_files: list[Path] | None = None, http: bool = False,
                    seed: int = 0, echo_rate: float = 0.1, judge_accuracy: float | None = None,
                    workers: int = 2, timeout: float = 30.0, sample: int | None = None,
                    mira_fraction: float = 0.25, model_gate: bool | None = None, progress: bool = True,
                    on_row: Callable[[SimRow], None] | None = None) -> list[SimRow]:
    """Run every strategy at every quality on every file (see the module doc).

    Args:
        preds: prediction files (any format :func:`sqlmend.data.predictions.load_predictions` reads).
        qualities: model qualities, each a fix rate and a judge accuracy.
        strategies: keys of :data:`STRATEGIES`.
        out: the folder of the run folders (resumable: a rerun reuses the finished corrections).
        dataset: the benchmark.
        pool_files: the files the wrong answers are drawn from (default: the shared files).
        http: answer over the OpenAI protocol from a loopback server, not in process.
        seed: the simulated model's seed (and the MIRA split's).
        echo_rate: share of non-right rewrites that leave the SQL unchanged.
        judge_accuracy: fixed judge accuracy (default: the quality).
        workers: tasks corrected in parallel, and evaluator processes.
        timeout: seconds per execution of the evaluator.
        sample: a seeded sample of N tasks per file (None: all).
        mira_fraction: the history share of MIRA's split.
        model_gate: the pipeline's model gate for every strategy (None: each strategy's default:
            on for sqlmend's, off for the baselines; :mod:`sqlmend.search.gate`).
        progress: show progress bars.
        on_row: told of each row as it is made.

    Returns:
        The rows, file by file, strategy by strategy, quality by quality.
    """
    from sqlmend.bench.memory import build_all, history_cases, split_for
    from sqlmend.bench.suspects import gold_suspects
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions, shared_prediction_files
    from sqlmend.data.sampling import choose

    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}; known: {', '.join(STRATEGIES)}")
    ds = load_dataset(dataset)
    pool = wrong_pool(ds, list(pool_files or shared_prediction_files(dataset)), workers, progress)
    oracle = Oracle(ds)
    evaluator = CachedEvaluator(ds, timeout, workers)
    transport = "http" if http else "in-process"
    rows: list[SimRow] = []
    for path in preds:
        path = Path(path)
        pred = load_predictions(path, ds)
        tasks = [t for t in choose(ds.with_sql(pred), None, sample, seed) if ds.db_path(t.db_id) is not None]
        by_id = {t.question_id: t for t in tasks}
        folder = out / path.stem
        suspects = set(gold_suspects(ds, list(by_id), 10.0))
        default = _run(tasks, _config("errorllm", workers), lambda s: None, ds.db_root,
                       folder / "default" / "corrections.jsonl", progress)
        split = split_for(ds, None, mira_fraction, seed) if "mira" in strategies else None
        history = history_cases(ds, pred, split, workers, False) if split is not None else {}
        for strategy in strategies:
            stages = STRATEGIES[strategy][1]
            first: dict[str, Correction] | None = None
            for quality in qualities:
                rates = Rates.of_quality(quality, echo_rate, judge_accuracy, seed)
                sim = SimulatedModel(f"sim-q{quality:g}", oracle=oracle, pool=pool, rates=rates,
                                     exclude={t.question_id: t.sql for t in tasks})
                run_dir = folder / strategy / f"q{quality:g}-{_tag(rates, transport, model_gate)}"
                with ExitStack() as stack:
                    backend: Any = sim
                    if http:
                        served = _Serve(sim)
                        stack.callback(served.close)
                        backend = served.client
                    resolve = _resolver(backend, stages)
                    if strategy == "mira":
                        assert split is not None
                        part = [q for q in split.test if q in by_id]
                        store = run_dir / "memory"
                        build_all(ds, history, store, _Stages(resolve), fresh=True, progress=False)
                        got = _run([by_id[q] for q in part], _config(strategy, workers, str(store), model_gate), resolve,
                                   ds.db_root, run_dir / "corrections.jsonl", progress)
                        scope = part
                    else:
                        todo = list(by_id) if first is None else [q for q, c in first.items() if calls(c)]
                        got = dict(first or {})
                        got.update(_run([by_id[q] for q in todo], _config(strategy, workers, model_gate=model_gate), resolve,
                                        ds.db_root, run_dir / "corrections.jsonl", progress))
                        if first is None:
                            first = got
                        scope = list(by_id)
                before = evaluator({q: by_id[q].sql for q in scope}, path.stem)
                default_run = evaluator({q: default[q].sql for q in scope}, f"{path.stem}+default")
                after = evaluator({q: got[q].sql for q in scope}, f"{path.stem}+{strategy}@{quality:g}")
                r = row(path.stem, strategy, quality, before, after, default_run, got, suspects, rates,
                        transport, "test" if strategy == "mira" else "all")
                r.gate = "default" if model_gate is None else ("on" if model_gate else "off")
                (run_dir / "row.json").write_text(json.dumps(r.to_dict(), indent=1) + "\n", encoding="utf-8")
                rows.append(r)
                if on_row is not None:
                    on_row(r)
    return rows


class _Stages:
    """What :func:`sqlmend.bench.memory.build_all` asks of an llm config: ``resolve(stage)``."""

    def __init__(self, resolve: Callable[[str], Any]):
        self.resolve = resolve


def markdown(rows: list[SimRow]) -> str:
    """The rows as a Markdown table."""
    head = ("| predictions | strategy | q | n | fixed | regressed | regressed (gold-clean) | ΔEX | Δ vs default "
            "| Δ vs default (gold-clean) | calls/q | correct touched | broken by model | admitted by |\n"
            + "|---" * 14 + "|\n")
    return head + "".join(
        f"| {r.pred} | {r.strategy}{' (test part)' if r.part == 'test' else ''} | {r.quality:g} | {r.n} | {r.fixed} "
        f"| {r.regressed} | {r.regressed_clean} | {r.delta_ex:+.2f} | {r.delta_vs_default:+.2f} "
        f"| {r.delta_vs_default_clean:+.2f} | {r.calls_per_query:.2f} | {r.touched_correct} | {r.broken_by_model} "
        f"| {', '.join(f'{k} {v}' for k, v in sorted(r.admitted_by.items())) or '-'} |\n" for r in rows)


def pays_from(rows: list[SimRow]) -> dict[str, float | None]:
    """Per strategy, the lowest quality from which it beats the default on every file (None: never)."""
    out: dict[str, float | None] = {}
    for strategy in dict.fromkeys(r.strategy for r in rows):
        mine = [r for r in rows if r.strategy == strategy]
        qs = sorted({r.quality for r in mine})
        out[strategy] = next((q for q in qs if all(r.delta_vs_default > 0 for r in mine if r.quality >= q)), None)
    return out


def summary_charts(rows: list[SimRow]) -> dict[str, Any]:
    """Curves over model quality across the files, sqlmend's strategies and the baselines apart (their
    scales differ by two orders): the mean Δ against the default (pp) and the most gold-clean
    regressions on one file (the first law's measure)."""
    from sqlmend.review import svg

    qs = sorted({r.quality for r in rows})
    out: dict[str, Any] = {}
    for group, names in (("ours", [s for s in OURS if any(r.strategy == s for r in rows)]),
                         ("baselines", [s for s in dict.fromkeys(r.strategy for r in rows) if s not in OURS])):
        if not names:
            continue

        def over(strategy: str, q: float, how: Callable[[list[SimRow]], float]) -> float | None:
            mine = [r for r in rows if r.strategy == strategy and r.quality == q]
            return how(mine) if mine else None

        label = "sqlmend's strategies" if group == "ours" else "baselines (no gate, as published)"
        out[f"delta-{group}"] = svg.lines(
            qs, {s: [over(s, q, lambda rs: sum(r.delta_vs_default for r in rs) / len(rs)) for q in qs] for s in names},
            f"{label}: mean Δ vs default over the files (pp)", "model quality", width=720)
        out[f"regressed-{group}"] = svg.lines(
            qs, {s: [over(s, q, lambda rs: float(max(r.regressed_clean for r in rs))) for q in qs] for s in names},
            f"{label}: most gold-clean regressions on one file", "model quality", width=720)
    return out


def write_svgs(folder: Path, rows: list[SimRow]) -> list[Path]:
    """:func:`summary_charts` as SVG files (``model-sim-delta-ours.svg``, ``model-sim-regressed-ours.svg``,
    and the baselines' two)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, chart in summary_charts(rows).items():
        path = folder / f"model-sim-{name}.svg"
        path.write_text(str(chart) + "\n", encoding="utf-8")
        out.append(path)
    return out


def write_html(path: Path, rows: list[SimRow]) -> Path:
    """A self-contained HTML report of the rows: per file, the curves of Δ vs default and of the
    gold-clean regressions over quality, one per strategy; then every row."""
    from sqlmend.review import svg
    from sqlmend.review.report import write_page

    charts: dict[str, dict[str, Any]] = {}
    for pred in dict.fromkeys(r.pred for r in rows):
        mine = [r for r in rows if r.pred == pred]
        qs = sorted({r.quality for r in mine})
        by = {s: {r.quality: r for r in mine if r.strategy == s} for s in dict.fromkeys(r.strategy for r in mine)}
        charts[pred] = {
            "delta": svg.lines(qs, {s: [v[q].delta_vs_default if q in v else None for q in qs] for s, v in by.items()},
                               "Δ vs default (pp)", "model quality"),
            "regressed": svg.lines(qs, {s: [float(v[q].regressed_clean) if q in v else None for q in qs]
                                        for s, v in by.items()}, "regressed (gold-clean)", "model quality")}
    head = ["predictions", "strategy", "q", "n", "fixed", "regressed", "gold-clean", "ΔEX", "Δ vs default", "calls/q",
            "correct touched", "broken", "admitted by"]
    table = [[r.pred, r.strategy + (" (test part)" if r.part == "test" else ""), f"{r.quality:g}", r.n, r.fixed,
              r.regressed, r.regressed_clean, f"{r.delta_ex:+.2f}", f"{r.delta_vs_default:+.2f}",
              f"{r.calls_per_query:.2f}", r.touched_correct, r.broken_by_model,
              ", ".join(f"{k} {v}" for k, v in sorted(r.admitted_by.items())) or "-"] for r in rows]
    return write_page(path, "modelsim.html", charts=charts, summary=summary_charts(rows), head=head, rows=table,
                      rates="; ".join(sorted({r.rates for r in rows})))

"""``sqlmend bench model-sim``: the model strategies with a stand-in model whose answers are known.

For each prediction file, each strategy and each model, the file is corrected with the
strategy's model stages answered by a stand-in model (:mod:`sqlmend.bench.simmodel`; in process,
or over the OpenAI protocol with ``http=True``) and paired with no correction and with the
default correction without a model. The models (:class:`ModelSpec`):

* ``replay``: one or more real prediction files replayed (``--replay FILE``); a file is never
  the model of itself (that pair is skipped);
* ``difficulty`` (the default): the difficulty-aware simulated model of quality q, right on each
  question with a probability that follows how hard it is for real systems (an item-response
  model over the shared files' verdicts, the file under correction left out);
* ``independent``: the older simulated model, right on q of every question alike.

A row says what the strategy fixed, what it broke (also without the gold-suspect questions), ΔEX,
ΔEX against the default, model calls per query, how many correct queries the model was asked to
touch, which gate admitted each model rewrite, and what the model is: its own EX, P(right |
original wrong), P(wrong | original right) and its judge's accuracy, measured on the same questions.

The strategies (:data:`STRATEGIES`): sqlmend's own (``errorllm``: ErrorLLM's refinement after
the default stages; ``mira``: MIRA's memory built from the file's history part by the model
judge, then used online by the model, measured on the test part; ``listwise``: the search's
candidates chosen by the model; ``errorllm+listwise``: both, what an endpoint named as every
stage's ``default`` turns on; ``consensus``: the model's samples as the consensus stage's
alternatives, ``consensus.samples`` = the number of replayed files, so that sample i is file i and
the rows are those of ``sqlmend bench alternatives`` with the same files; a simulated model gives
one sample; ``errorllm+listwise+consensus``: an endpoint as every stage's ``default`` with
``consensus.samples`` on, so the samples' vote, as a finding, also puts a query to ErrorLLM's
refinement, whose rewrite passes the model gate) and the baselines (``self-correction``,
``din-sql``, ``self-debug``, ``mac-sql``: refinement alone, as published, no detection before it).

Cost: the default correction runs once per file; a strategy runs every task with its first
model (its *base* run, remembered in the run folder) and, with the others, only the tasks where
the base run called the model (a task where it did not never reached the model, so its
correction is the same with any model). A changed SQL is executed against the gold by the
evaluator; an unchanged one keeps its verdict.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlmend.evaluation.evaluate import CachedEvaluator
from sqlmend.bench.simmodel import Oracle, Rates, ReplayedModel, SimulatedModel, SqlSource, evaluated, pool_of
from sqlmend.types import Correction

#: Strategy -> (pipeline strategy, the llm stages the simulated model answers).
STRATEGIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "errorllm": ("errorllm", ("refiner", "localizer")),
    "mira": ("errorllm", ("judge", "recovery", "solver")),
    "listwise": ("errorllm", ("verifier",)),
    "errorllm+listwise": ("errorllm", ("refiner", "localizer", "verifier")),
    "consensus": ("errorllm", ("sampler",)),
    "errorllm+listwise+consensus": ("errorllm", ("refiner", "localizer", "verifier", "sampler")),
    "self-correction": ("self-correction", ("baseline",)),
    "din-sql": ("din-sql", ("baseline",)),
    "self-debug": ("self-debug", ("baseline",)),
    "mac-sql": ("mac-sql", ("baseline",)),
}
#: sqlmend's own model strategies (the first law is asked of these); the rest are baselines.
OURS = ("errorllm", "mira", "listwise", "errorllm+listwise", "consensus", "errorllm+listwise+consensus")
QUALITIES = (0.2, 0.4, 0.6, 0.8)
#: The kinds of stand-in model (:class:`ModelSpec`).
KINDS = ("difficulty", "independent", "replay")


@dataclass(frozen=True)
class ModelSpec:
    """One stand-in model of a run.

    Attributes:
        kind: ``difficulty`` or ``independent`` (a simulated model of quality ``quality``), or
            ``replay`` (the prediction files ``files``, call i of a question drawing file i).
        quality: the simulated model's quality q.
        files: the replayed prediction files.
    """

    kind: str
    quality: float | None = None
    files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown model kind {self.kind!r}; known: {', '.join(KINDS)}")
        if self.kind == "replay" and not self.files:
            raise ValueError("a replayed model needs at least one prediction file")
        if self.kind != "replay" and self.quality is None:
            raise ValueError(f"a {self.kind} simulated model needs a quality")

    @property
    def stems(self) -> list[str]:
        return [Path(f).stem for f in self.files]

    @property
    def label(self) -> str:
        """The model in a row: ``replay din-sql_gpt-4``, ``sim q=0.6``, ``independent q=0.6``."""
        if self.kind == "replay":
            return "replay " + " + ".join(self.stems)
        return f"{'sim' if self.kind == 'difficulty' else 'independent'} q={self.quality:g}"

    def slug(self) -> str:
        """The model's part of a run folder's name."""
        if self.kind == "replay":
            return "replay-" + "+".join(self.stems)
        return f"{'d' if self.kind == 'difficulty' else ''}q{self.quality:g}"

    def models_itself(self, pred: Path) -> bool:
        """Whether ``pred`` is one of the replayed files (a file is not the model of itself)."""
        return self.kind == "replay" and Path(pred).stem in self.stems


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
    model: str = ""  # the stand-in model (ModelSpec.label)
    kind: str = "independent"  # its kind (ModelSpec.kind)
    model_ex: float = 0.0  # its own answers' EX on these questions (%; several replayed files: their mean)
    p_right_if_wrong: float = 0.0  # P(its answer is right | the original is wrong)
    p_wrong_if_right: float = 0.0  # P(its answer is wrong | the original is right)
    judge_accuracy: float = 0.0  # its judge's accuracy about the originals

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
        corrections: dict[str, Correction], suspects: set[str], rates: str, transport: str, part: str) -> SimRow:
    """Pair one run's evaluation with no correction's and the default correction's (same questions)."""
    from sqlmend.evaluation.compare import compare

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
                  rates=rates, transport=transport, part=part)


class _Serve:
    """The simulated model behind the OpenAI protocol (:mod:`sqlmend.llm.server`) on loopback."""

    def __init__(self, sim: Any):
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


def _config(strategy: str, workers: int, memory_store: str | None = None, model_gate: bool | None = None,
            samples: int = 0) -> Any:
    from sqlmend.pipeline import PipelineConfig

    options: dict[str, Any] = {"memory": {"store": memory_store}} if memory_store else {}
    if samples:
        options["consensus"] = {"samples": samples}
    return PipelineConfig(strategy=STRATEGIES[strategy][0], workers=workers, options=options, model_gate=model_gate)


def samples_of(strategy: str, spec: ModelSpec) -> int:
    """The samples a strategy asks of a model: one whose stages include ``sampler`` (``consensus``,
    ``errorllm+listwise+consensus``), one per replayed file (one of a simulated model, whose answer to a
    question is the same at every call); the others none."""
    if "sampler" not in STRATEGIES[strategy][1]:
        return 0
    return len(spec.files) if spec.kind == "replay" else 1


def _tag(spec: "ModelSpec", rates: Rates, transport: str, model_gate: bool | None = None) -> str:
    gate = "" if model_gate is None else f"|gate={model_gate}"
    if spec.kind == "independent":  # the older runs' folders keep their names
        return hashlib.sha256(f"{rates}|{transport}{gate}".encode()).hexdigest()[:8]
    files = "|".join(str(Path(f).resolve()) for f in spec.files)
    return hashlib.sha256(f"{spec}|{files}|{rates.seed}|{transport}{gate}".encode()).hexdigest()[:8]


def _base(strategy_dir: Path, model_gate: bool | None, ids: list[str], run_dir: Path | None = None
          ) -> dict[str, Correction] | None:
    """A strategy's base run on a file: every task corrected with its first model (the record of
    which run that was is ``base-<gate>.json``). With ``run_dir``: record that run as the base.
    Returns the base's corrections when they cover ``ids``, else None."""
    from sqlmend.pipeline import read_checkpoint

    record = strategy_dir / f"base-{'default' if model_gate is None else model_gate}.json"
    if run_dir is not None:
        record.write_text(json.dumps({"run": run_dir.name}) + "\n", encoding="utf-8")
        return None
    if not record.exists():
        return None
    done = read_checkpoint(strategy_dir / json.loads(record.read_text(encoding="utf-8"))["run"] / "corrections.jsonl")
    if not all(q in done and not done[q].error for q in ids):
        return None
    return {q: done[q] for q in ids}


class _Models:
    """What the stand-in models of one benchmark need: the golds, the shared files' verdicts and
    wrong answers, and (for the difficulty-aware model) the item-response fit per file under
    correction."""

    def __init__(self, ds: Any, pool_files: list[Path], workers: int, progress: bool, seed: int,
                 echo_rate: float, judge_accuracy: float | None):
        self.ds, self.seed, self.echo_rate, self.judge_accuracy = ds, seed, echo_rate, judge_accuracy
        self.oracle = Oracle(ds)
        self.reports = evaluated(ds, pool_files, workers, progress)
        self.pool = pool_of(self.reports)
        self.scored = [r.question_id for r in next(iter(self.reports.values())).results if r.scored]
        self._fits: dict[str, Any] = {}

    def difficulty(self, pred: str, questions: list[str]) -> Any:
        """The item-response fit of the shared files but ``pred`` (:mod:`sqlmend.bench.difficulty`)."""
        from sqlmend.bench.difficulty import fit, verdicts_of

        if pred not in self._fits:
            others = {k: v for k, v in self.reports.items() if k != pred}
            self._fits[pred] = fit(verdicts_of(others), questions)
        return self._fits[pred]

    def build(self, spec: ModelSpec, pred: str, originals: dict[str, str], scored: list[str]
              ) -> tuple[Any, Rates, str, list[Any]]:
        """``(backend, rates, description, books)`` of one model for one file under correction."""
        from sqlmend.bench.books import DifficultyBook, FileBook
        from sqlmend.data.predictions import load_predictions

        if spec.kind == "independent":
            rates = Rates.of_quality(float(spec.quality or 0.0), self.echo_rate, self.judge_accuracy, self.seed)
            sim = SimulatedModel(f"sim-q{spec.quality:g}", oracle=self.oracle, pool=self.pool, rates=rates,
                                 exclude=originals)
            return sim, rates, "independent: " + rates.describe(), []
        rates = Rates(0.0, 0.0, seed=self.seed)
        if spec.kind == "replay":
            books = [FileBook(Path(f).stem, load_predictions(Path(f), self.ds)) for f in spec.files]
            what = (f"replay of {', '.join(spec.stems)}" + (" (call i of a question draws file i)" if len(books) > 1
                                                             else "") + "; its judge trusts its answer")
        else:
            fit = self.difficulty(pred, scored)
            theta = fit.theta_for(float(spec.quality or 0.0))
            source = SqlSource(self.oracle, self.pool, originals, self.seed, operators=None)
            books = [DifficultyBook(f"sim-d-q{spec.quality:g}", source, fit.p_right(theta), self.seed)]
            what = (f"difficulty-aware: q {spec.quality:g}, ability {theta:.3f} on {fit.describe()}; "
                    f"right answer re-written gold, else another system's wrong answer; judge trusts its "
                    f"answer; seed {self.seed}")
        model = ReplayedModel(books[0].name if len(books) == 1 else "+".join(b.name for b in books), books,
                              oracle=self.oracle)
        return model, rates, what, books


def bench_model_sim(preds: list[Path], models: list[ModelSpec], strategies: list[str], out: Path,
                    dataset: str = "spider-dev", pool_files: list[Path] | None = None, http: bool = False,
                    seed: int = 0, echo_rate: float = 0.1, judge_accuracy: float | None = None,
                    workers: int = 2, timeout: float = 30.0, sample: int | None = None,
                    mira_fraction: float = 0.25, model_gate: bool | None = None, progress: bool = True,
                    on_row: Callable[[SimRow], None] | None = None,
                    on_skip: Callable[[str], None] | None = None) -> list[SimRow]:
    """Run every strategy with every model on every file (see the module doc).

    Args:
        preds: prediction files (any format :func:`sqlmend.data.predictions.load_predictions` reads).
        models: the stand-in models (:class:`ModelSpec`); a replayed file is not the model of itself.
        strategies: keys of :data:`STRATEGIES`.
        out: the folder of the run folders (resumable: a rerun reuses the finished corrections).
        dataset: the benchmark.
        pool_files: the real systems' files: the simulated models' wrong answers and the
            difficulty fit (default: the shared files).
        http: answer over the OpenAI protocol from a loopback server, not in process.
        seed: the simulated models' seed (and the MIRA split's).
        echo_rate: the independent model's share of rewrites that leave the SQL unchanged.
        judge_accuracy: the independent model's fixed judge accuracy (default: the quality).
        workers: tasks corrected in parallel, and evaluator processes.
        timeout: seconds per execution of the evaluator.
        sample: a seeded sample of N tasks per file (None: all).
        mira_fraction: the history share of MIRA's split.
        model_gate: the pipeline's model gate for every strategy (None: each strategy's default:
            on for sqlmend's, off for the baselines; :mod:`sqlmend.search.gate`).
        progress: show progress bars.
        on_row: told of each row as it is made.
        on_skip: told of each (file, model) pair skipped (a file replayed as its own model).

    Returns:
        The rows, file by file, strategy by strategy, model by model.
    """
    from sqlmend.bench.books import answer_stats
    from sqlmend.bench.memory import build_all, history_cases, split_for
    from sqlmend.evaluation.suspects import gold_suspects
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions, shared_prediction_files
    from sqlmend.data.sampling import choose

    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}; known: {', '.join(STRATEGIES)}")
    if not models:
        raise ValueError("no model to run")
    ds = load_dataset(dataset)
    stand_ins = _Models(ds, list(pool_files or shared_prediction_files(dataset)), workers, progress, seed,
                        echo_rate, judge_accuracy)
    evaluator = CachedEvaluator(ds, timeout, workers)
    transport = "http" if http else "in-process"
    rows: list[SimRow] = []
    for path in preds:
        path = Path(path)
        mine = [m for m in models if not m.models_itself(path)]
        for m in models:
            if m.models_itself(path) and on_skip is not None:
                on_skip(f"{path.stem} is not corrected by {m.label}: a file is not the model of itself")
        if not mine:
            continue
        pred = load_predictions(path, ds)
        tasks = [t for t in choose(ds.with_sql(pred), None, sample, seed) if ds.db_path(t.db_id) is not None]
        by_id = {t.question_id: t for t in tasks}
        originals = {t.question_id: t.sql for t in tasks}
        folder = out / path.stem
        suspects = set(gold_suspects(ds, list(by_id), 10.0))
        default = _run(tasks, _config("errorllm", workers), lambda s: None, ds.db_root,
                       folder / "default" / "corrections.jsonl", progress)
        split = split_for(ds, None, mira_fraction, seed) if "mira" in strategies else None
        history = history_cases(ds, pred, split, workers, False) if split is not None else {}
        everyone = evaluator(originals, path.stem)
        correct = {r.question_id: r.correct for r in everyone.results if r.scored}
        scored_all = stand_ins.scored  # the difficulty-aware model's mean q is over all of them
        for strategy in strategies:
            stages = STRATEGIES[strategy][1]
            first: dict[str, Correction] | None = None
            if strategy != "mira":
                first = _base(folder / strategy, model_gate, list(by_id))
            for spec in mine:
                backend_model, rates, what, books = stand_ins.build(spec, path.stem, originals, scored_all)
                run_dir = folder / strategy / f"{spec.slug()}-{_tag(spec, rates, transport, model_gate)}"
                with ExitStack() as stack:
                    backend: Any = backend_model
                    if http:
                        served = _Serve(backend_model)
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
                        samples = samples_of(strategy, spec)
                        got.update(_run([by_id[q] for q in todo], _config(strategy, workers, model_gate=model_gate,
                                                                          samples=samples), resolve,
                                        ds.db_root, run_dir / "corrections.jsonl", progress))
                        if first is None:
                            first = got
                            _base(folder / strategy, model_gate, list(by_id), run_dir)
                        scope = list(by_id)
                before = evaluator({q: by_id[q].sql for q in scope}, path.stem)
                default_run = evaluator({q: default[q].sql for q in scope}, f"{path.stem}+default")
                after = evaluator({q: got[q].sql for q in scope}, f"{path.stem}+{strategy}@{spec.slug()}")
                r = row(path.stem, strategy, float(spec.quality or 0.0), before, after, default_run, got, suspects,
                        what, transport, "test" if strategy == "mira" else "all")
                r.gate = "default" if model_gate is None else ("on" if model_gate else "off")
                r.model, r.kind = spec.label, spec.kind
                scored = [q for q in scope if q in correct]
                if books:  # several replayed files (k samples): the mean of each file's own stats
                    each = [answer_stats(b, stand_ins.oracle, originals, correct, scored) for b in books]
                    mean = lambda f: round(sum(f(s) for s in each) / len(each), 4)  # noqa: E731
                    r.model_ex, r.p_right_if_wrong, r.p_wrong_if_right, r.judge_accuracy = (
                        round(100 * mean(lambda s: s.ex), 2), mean(lambda s: s.right_if_wrong),
                        mean(lambda s: s.wrong_if_right), mean(lambda s: s.judge))
                    if spec.kind == "replay":
                        r.quality = mean(lambda s: s.ex)
                else:  # the independent model's rates (an echo is right where the original is)
                    share = sum(correct[q] for q in scored) / len(scored) if scored else 0.0
                    r.model_ex = round(100 * (rates.fix_rate + rates.echo_rate * share), 2)
                    r.p_right_if_wrong = rates.fix_rate
                    r.p_wrong_if_right = round(1 - rates.fix_rate - rates.echo_rate, 4)
                    r.judge_accuracy = rates.judge
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
    head = ("| predictions | strategy | model | model EX | P(right ∣ orig. wrong) | P(wrong ∣ orig. right) | judge "
            "| n | fixed | regressed | regressed (gold-clean) | ΔEX | Δ vs default | Δ vs default (gold-clean) "
            "| calls/q | correct touched | broken by model | admitted by |\n" + "|---" * 18 + "|\n")
    return head + "".join(
        f"| {r.pred} | {r.strategy}{' (test part)' if r.part == 'test' else ''} | {r.model or f'q={r.quality:g}'} "
        f"| {r.model_ex:.2f} | {r.p_right_if_wrong:.2f} | {r.p_wrong_if_right:.2f} | {r.judge_accuracy:.2f} "
        f"| {r.n} | {r.fixed} | {r.regressed} | {r.regressed_clean} | {r.delta_ex:+.2f} | {r.delta_vs_default:+.2f} "
        f"| {r.delta_vs_default_clean:+.2f} | {r.calls_per_query:.2f} | {r.touched_correct} | {r.broken_by_model} "
        f"| {', '.join(f'{k} {v}' for k, v in sorted(r.admitted_by.items())) or '-'} |\n" for r in rows)


def curve_rows(rows: list[SimRow]) -> list[SimRow]:
    """The rows that make curves over quality: the simulated models' (the difficulty-aware ones when
    both kinds are there); a replayed model is a point, not a curve."""
    kinds = {r.kind for r in rows}
    kind = "difficulty" if "difficulty" in kinds else "independent"
    return [r for r in rows if r.kind == kind]


def pays_from(rows: list[SimRow]) -> dict[str, float | None]:
    """Per strategy, the lowest quality from which it beats the default on every file (None: never),
    over :func:`curve_rows`."""
    rows = curve_rows(rows)
    out: dict[str, float | None] = {}
    for strategy in dict.fromkeys(r.strategy for r in rows):
        mine = [r for r in rows if r.strategy == strategy]
        qs = sorted({r.quality for r in mine})
        out[strategy] = next((q for q in qs if all(r.delta_vs_default > 0 for r in mine if r.quality >= q)), None)
    return out


def by_model(rows: list[SimRow]) -> list[dict[str, Any]]:
    """Per strategy and model (a replayed file, or a quality), over the files it corrected: the mean,
    least and most Δ against the default (pp), the most gold-clean regressions on one file, the
    files, and the model's mean P(right | original wrong) and P(wrong | original right)."""
    out = []
    for strategy in dict.fromkeys(r.strategy for r in rows):
        for model in dict.fromkeys(r.model for r in rows if r.strategy == strategy):
            mine = [r for r in rows if r.strategy == strategy and r.model == model]
            deltas = [r.delta_vs_default for r in mine]
            out.append({"strategy": strategy, "model": model, "files": len(mine),
                        "mean_delta": round(sum(deltas) / len(deltas), 2), "min_delta": min(deltas),
                        "max_delta": max(deltas), "max_regressed_clean": max(r.regressed_clean for r in mine),
                        "model_ex": round(sum(r.model_ex for r in mine) / len(mine), 2),
                        "p_right_if_wrong": round(sum(r.p_right_if_wrong for r in mine) / len(mine), 3),
                        "p_wrong_if_right": round(sum(r.p_wrong_if_right for r in mine) / len(mine), 3)})
    return out


def summary_charts(rows: list[SimRow]) -> dict[str, Any]:
    """Curves over model quality across the files (:func:`curve_rows`), sqlmend's strategies and the
    baselines apart (their scales differ by two orders): the mean Δ against the default (pp) and the
    most gold-clean regressions on one file (the first law's measure)."""
    from sqlmend.review import svg

    rows = curve_rows(rows)
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
    curves = curve_rows(rows)
    for pred in dict.fromkeys(r.pred for r in curves):
        mine = [r for r in curves if r.pred == pred]
        qs = sorted({r.quality for r in mine})
        by = {s: {r.quality: r for r in mine if r.strategy == s} for s in dict.fromkeys(r.strategy for r in mine)}
        charts[pred] = {
            "delta": svg.lines(qs, {s: [v[q].delta_vs_default if q in v else None for q in qs] for s, v in by.items()},
                               "Δ vs default (pp)", "model quality"),
            "regressed": svg.lines(qs, {s: [float(v[q].regressed_clean) if q in v else None for q in qs]
                                        for s, v in by.items()}, "regressed (gold-clean)", "model quality")}
    head = ["predictions", "strategy", "model", "model EX", "P(right | orig. wrong)", "P(wrong | orig. right)",
            "judge", "n", "fixed", "regressed", "gold-clean", "ΔEX", "Δ vs default", "calls/q", "correct touched",
            "broken", "admitted by"]
    table = [[r.pred, r.strategy + (" (test part)" if r.part == "test" else ""), r.model or f"q={r.quality:g}",
              f"{r.model_ex:.2f}", f"{r.p_right_if_wrong:.2f}", f"{r.p_wrong_if_right:.2f}", f"{r.judge_accuracy:.2f}",
              r.n, r.fixed,
              r.regressed, r.regressed_clean, f"{r.delta_ex:+.2f}", f"{r.delta_vs_default:+.2f}",
              f"{r.calls_per_query:.2f}", r.touched_correct, r.broken_by_model,
              ", ".join(f"{k} {v}" for k, v in sorted(r.admitted_by.items())) or "-"] for r in rows]
    return write_page(path, "modelsim.html", charts=charts, summary=summary_charts(rows), head=head, rows=table,
                      rates="; ".join(sorted({r.rates for r in rows})))

"""``sqlmend train-verifier``, ``sqlmend train-asked`` and ``sqlmend bench search``: the repair search, its
verifier and the model gate's reading of asked columns."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import typer

from sqlmend.cli.output import refuse_dev
from sqlmend.errors import SqlmendError
from sqlmend.progress import bar as progress_bar, write as progress_write

KINDS = "rule1,rule2,neighbour"


def train_verifier(
    dataset: str = typer.Option("spider-train", help="Training questions (never dev/test)."),
    questions: int = typer.Option(4000, help="Training questions used (a seeded sample)."),
    seed: int = typer.Option(0, help="Sampling and perturbation seed."),
    skip: int = typer.Option(0, help="Skip the first N questions of the seeded order (e.g. those an "
                                     "earlier verifier trained on, to compare on questions new to both)."),
    kinds: str = typer.Option(KINDS, help="Wrong originals per question, comma-separated: rule "
                              "(uniform single perturbations), rule1 / rule2 (one / two perturbations drawn "
                              "by the real error mix), neighbour (the gold of a similar question on the "
                              "database with another result), equiv (a correct original that is not the "
                              "gold: an edit that keeps the gold's rows), failing (the gold broken so that the "
                              "engine refuses it: columns unqualified, a join dropped, a wrong qualifier)."),
    gold: bool = typer.Option(True, "--gold/--no-gold", help="Build each question's gold case too (--no-gold: "
                              "only the --kinds, e.g. to add a kind to a case file, then concatenate)."),
    data: Path = typer.Option(None, help="The training-case file (JSONL; resumed when it exists). "
                                         "Default: <cache>/search/verifier-train.jsonl."),
    out: Path = typer.Option(None, "--out", "-o", help="Where to write the weights (default: the shipped "
                                        "src/sqlmend/search/verifier.json)."),
    precision: float = typer.Option(0.93, help="Held-out precision the decision margin must reach (correct and wrong originals weighed equally)."),
    max_false_rate: float = typer.Option(0.01, help="Held-out share of correct originals it may replace."),
    holdout: float = typer.Option(0.2, help="Share of training databases held out for calibration."),
    max_iter: int = typer.Option(300, help="Boosting rounds."),
    refit: bool = typer.Option(True, "--refit/--no-refit", help="Refit on every database after calibrating "
                                                               "(else ship the calibrated model itself)."),
    decider: bool = typer.Option(False, "--decider", help="Also train a replace-or-keep decider on out-of-fold "
                                 "scores (needs --no-refit); its P(fix) replaces the score gap in the decision."),
    oof_folds: int = typer.Option(0, "--oof-folds", min=0, help="Calibrate the margins on out-of-fold scores "
                                  "of every training case (this many database folds, each model trained like "
                                  "the shipped one on the rest) instead of the held-out databases alone: every "
                                  "gold counts as a correct original (0: held-out only)."),
    compare: Path = typer.Option(None, help="An earlier verifier file to score and calibrate on the same "
                                            "held-out cases (reported beside the new one)."),
    build_only: bool = typer.Option(False, "--build-only", help="Only build (or resume) the training cases."),
    evaluate: list[Path] = typer.Option(None, "--evaluate", help="Only score these verifier files on the "
                                        "held-out cases (repeatable; no training): fixes at 0/1/2 broken "
                                        "correct originals and at their own margins."),
    failing_ranker: bool = typer.Option(False, "--failing-ranker", help="Only train the ranker of originals that "
                                        "fail to run (cases of --kinds failing, training databases) and add it to "
                                        "the weights file --out (default: the shipped one), keeping its model and "
                                        "margins; the held-out report compares its first choice with the model's."),
) -> None:
    """Build the verifier's training cases from Spider TRAIN (gold = correct original, execution-verified
    perturbations = wrong originals, every search candidate labelled by the gold's rows), train the
    gradient-boosted verifier, calibrate the decision margin on held-out training databases, and write
    the weights. Rerunning resumes the case file.

    Example: sqlmend train-verifier --questions 4000
    """
    from sqlmend.data import load_dataset
    from sqlmend.paths import cache_dir
    from sqlmend.search import train as training
    from sqlmend.search.verifier import WEIGHTS

    refuse_dev(dataset, "the verifier trains")
    ds = load_dataset(dataset)
    pool = list(ds.tasks)
    tasks = training.training_questions(pool, lambda d: ds.db_path(d) is not None, questions, skip, seed)
    kind_list = [k.strip() for k in kinds.split(",") if k.strip()]
    unknown = set(kind_list) - set(training.ALL_KINDS)
    if unknown:
        typer.secho(f"unknown --kinds {sorted(unknown)}", err=True, fg="red")
        raise typer.Exit(2)
    # read the verifier files to compare with before the (long) build: a bad one fails now
    evaluated = {str(p): _verifier_file(p) for p in evaluate or []}
    baseline = _verifier_file(compare) if compare else None
    data = data or cache_dir("search") / "verifier-train.jsonl"
    bar = progress_bar(total=len(tasks), desc="cases", unit="q")
    for msg in training.build(tasks, lambda d: str(ds.db_path(d)), data, seed=seed, progress=bar.update,
                              kinds=kind_list, neighbours=training.Neighbours(pool), gold=gold):
        progress_write(msg)
    bar.close()
    if build_only:
        typer.echo(f"cases in {data}")
        return
    cases = [c for c in training.load(data) if c["qid"] in {t.question_id for t in tasks}]
    if failing_ranker:
        target = out or WEIGHTS
        weights = _verifier_file(target)
        try:
            weights["failing"] = training.fit_failing(cases, weights, holdout=holdout, seed=seed)
        except ValueError as exc:
            typer.secho(f"{data}: {exc}", err=True, fg="red")
            raise typer.Exit(2)
        weights["failing"]["training"].update({
            "date": _dt.date.today().isoformat(), "dataset": dataset,
            "command": f"sqlmend train-verifier --questions {questions} --skip {skip} --seed {seed} "
                       f"--kinds {','.join(kind_list)} --failing-ranker"})
        target.write_text(json.dumps(weights, separators=(",", ":")) + "\n")
        typer.echo(json.dumps(weights["failing"]["training"], indent=1))
        typer.echo(f"wrote the failing-original ranker into {target} ({target.stat().st_size // 1024} KiB)")
        return
    if evaluate:
        report = {name: training.evaluate(cases, spec, holdout) for name, spec in evaluated.items()}
        typer.echo(json.dumps(report, indent=1))
        return
    spec = training.fit(cases, holdout=holdout, precision=precision, max_false_rate=max_false_rate,
                        max_iter=max_iter, seed=seed, refit=refit, decider=decider, oof_folds=oof_folds,
                        baseline=baseline)
    spec["training"].update({"date": _dt.date.today().isoformat(), "dataset": dataset,
                             "selection": {"questions": questions, "skip": skip, "seed": seed,
                                           "holdout": holdout, "refit": refit},
                             "command": f"sqlmend train-verifier --questions {questions} --skip {skip} --seed {seed} "
                                        f"--kinds {','.join(kind_list)} "
                                        f"--precision {precision} --max-false-rate {max_false_rate}"
                                        + ("" if refit else " --no-refit") + (" --decider" if decider else "")
                                        + (f" --oof-folds {oof_folds}" if oof_folds else "")})
    target = out or WEIGHTS
    target.write_text(json.dumps(spec, separators=(",", ":")) + "\n")
    held = spec["training"]["held_out"]
    typer.echo(json.dumps({"held_out": held, "decision": spec["decision"]}, indent=1))
    typer.echo(f"wrote {target} ({target.stat().st_size // 1024} KiB)")


def train_asked(
    dataset: str = typer.Option("spider-train", help="Training questions (never dev/test): their golds."),
    seed: int = typer.Option(0, help="Seed of the extra columns drawn from a gold's tables."),
    alpha: float = typer.Option(None, help="Share of held-out asked columns (multi-column answers) the threshold "
                                           "may read as \"not asked\" (default: sqlmend.search.asked.ALPHA)."),
    holdout: float = typer.Option(0.2, help="Share of training databases held out to fix the threshold."),
    out: Path = typer.Option(None, "--out", "-o", help="Where to write the weights (default: the shipped "
                                                       "src/sqlmend/search/asked.json)."),
) -> None:
    """Fit the reading of which columns a question asks for, which the model gate uses to admit a model's
    rewrite that returns the original's rows with columns dropped (docs/pipeline.md, "The model gate").

    Each SELECT item of a gold is asked for; a column the gold filters, orders or groups by without
    returning it, an aggregate it orders by, the COUNT(*) of a grouping, a key and two other columns of its
    tables are not. A logistic regression is fitted on the databases not held out; the threshold is the
    ALPHA quantile of the held-out asked columns' P(asked). Takes about a minute.

    Example: sqlmend train-asked
    """
    from sqlmend.data import load_dataset
    from sqlmend.search.asked import ALPHA, WEIGHTS
    from sqlmend.search.asked_train import fit, training_rows

    refuse_dev(dataset, "the reading of asked columns trains")
    ds = load_dataset(dataset)
    alpha = ALPHA if alpha is None else alpha
    tasks = [t for t in ds.tasks if t.gold]
    with ds.databases() as open_db:
        schemas: dict[str, object] = {}

        def schema_of(db_id: str):
            if db_id not in schemas:
                db = open_db(db_id)
                schemas[db_id] = db.schema() if db is not None else None
            return schemas[db_id]

        rows = training_rows(progress_bar(tasks, desc="golds", unit="q"), schema_of, seed=seed)
    spec = fit(rows, alpha=alpha, holdout=holdout)
    spec["training"] = {"date": _dt.date.today().isoformat(), "dataset": dataset, "questions": len(tasks),
                        "seed": seed,
                        "command": f"sqlmend train-asked --dataset {dataset} --seed {seed} --alpha {alpha} "
                                   f"--holdout {holdout}"}
    target = out or WEIGHTS
    target.write_text(json.dumps(spec, indent=1) + "\n")
    typer.echo(json.dumps({"threshold": spec["threshold"], **spec["measured"]}, indent=1))
    typer.echo(f"wrote {target}")


def _verifier_file(path: Path) -> dict:
    """A verifier weight file (``--compare``, ``--evaluate``), or a clear error and exit 2."""
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        typer.secho(f"cannot read the verifier file {path}: {exc}", err=True, fg="red")
        raise typer.Exit(2)
    if not isinstance(spec, dict) or "model" not in spec:
        typer.secho(f"{path} is not a verifier file (no \"model\"; see `sqlmend train-verifier`)", err=True, fg="red")
        raise typer.Exit(2)
    return spec


def bench_search_cmd(
    pred: list[Path] = typer.Option(..., "--pred", help="Prediction file(s); repeat the option."),
    dataset: str = typer.Option("spider-dev", "--dataset", help="Dataset name or task file."),
    sample: int = typer.Option(0, help="A seeded sample of N questions (0: all)."),
    seed: int = typer.Option(0, help="Seed of --sample."),
    limit: int = typer.Option(0, help="Only the first N questions (0: all)."),
    scope: str = typer.Option("suspect", help="Which queries are searched: flagged | suspect (the default) | all."),
    option: list[str] = typer.Option(None, "--option", help="search.KEY=VALUE, repeatable "
                                                            "(beam, expand, budget, margin, ...)."),
    timeout: float = typer.Option(10.0, help="Seconds each static probe and guard execution may run."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the full report as JSON here."),
) -> None:
    """Static alone vs static + search, per prediction file: candidate recall, selection accuracy,
    fixed / regressed / ΔEX (all and gold-clean questions), rewrites proposed and accepted, ms per
    searched query, model calls; then the verifier's score gaps over the original (the best right
    candidate's for the wrong predictions reached, the best wrong candidate's for the correct ones
    searched), which say whether any margin could fix more without breaking.

    Example: sqlmend bench search --pred ../shared/data/predictions/spider-dev/codes-1b.sql --sample 200
    """
    from sqlmend.bench.search import bench_search, markdown, subset
    from sqlmend.cli.correct_cmd import parse_options
    from sqlmend.data import load_dataset
    from sqlmend.search.stage import SearchStage
    from sqlmend.stage import RunSettings

    options = parse_options(option).get("search", {})
    options.setdefault("scope", scope)
    stage = SearchStage.from_config(options, RunSettings(timeout=timeout))
    full = load_dataset(dataset)
    ds = subset(full, sample=sample, seed=seed, limit=limit)

    def progress(name: str):
        bar = progress_bar(total=len(ds.tasks), desc=f"search {name}", unit="q", leave=False)
        return lambda: bar.update(1)

    report = bench_search(ds, pred, stage, timeout=timeout, progress=progress, full=full)
    typer.echo(markdown(report))
    if out:
        report.update({"date": _dt.date.today().isoformat(), "dataset": dataset, "sample": sample,
                       "seed": seed, "limit": limit, "options": stage.settings.model_dump()})
        out.write_text(json.dumps(report, indent=1, default=str))


def train_cross_verifier(
    data: Path = typer.Option(..., help="Folder of the groups (train.jsonl, held-out.jsonl; resumed) and the adapter."),
    questions: int = typer.Option(1400, help="Questions on the feature verifier's training databases to train on."),
    held_out_questions: int = typer.Option(700, help="Questions on its held-out databases to compare on."),
    shard: str = typer.Option("0/1", help="Build only shard K/N of the questions (run N at once, then cat the files)."),
    build_only: bool = typer.Option(False, "--build-only", help="Only build (or resume) the groups."),
    epochs: float = typer.Option(0.5, help="Passes over the training pairs."),
    negatives: int = typer.Option(2, help="Best-scored wrong candidates per group trained on."),
    top: int = typer.Option(4, help="Candidates per original compared (the original and its top N)."),
    threads: int = typer.Option(2, help="Torch threads."),
    frozen_layers: int = typer.Option(0, help="Lower layers kept frozen; their output is computed once, so a "
                                              "step costs only the layers above (4 of 6: about 4x the pairs per second here)."),
    listwise: float = typer.Option(0.0, help="Weight of a listwise term (softmax over each group) added to the "
                                             "pointwise loss."),
    lr: float = typer.Option(3e-4, help="Peak learning rate (linear warm-up over 100 steps, then linear decay)."),
    equiv: bool = typer.Option(False, "--equiv", help="Also build, for the same questions, a correct original "
                                                      "that is not the gold (train-verifier's equiv kind) into "
                                                      "train-equiv / held-out-equiv files: more correct originals "
                                                      "to train on and to calibrate the margins against."),
    weights: str = typer.Option("0.5", help="Weights of the feature score in the mean with the cross-encoder's "
                                            "to choose among (comma-separated; the one whose suspect-scope "
                                            "margins fix the most on one half of the held-out databases when "
                                            "calibrated on the other). 0.5: the plain mean, as shipped; "
                                            "0.7, which held-out train chose, did worse on real predictions."),
    evaluate_adapter: Path = typer.Option(None, "--evaluate", help="Do not train: compare this trained adapter "
                                                                   "folder on the held-out groups (every held-out "
                                                                   "file of --data, the equiv ones included) and "
                                                                   "write its report.json and decision.json there."),
) -> None:
    """The cross-encoder verifier (issue 16): build its groups from Spider TRAIN, fine-tune MiniLM
    (LoRA + head; the models extra) on them, and compare it with the feature verifier and with their
    mean on the held-out databases (fixes at 0/1/2 broken correct originals, selection accuracy, AUROC).

    Example: sqlmend train-cross-verifier --data runs/cross --questions 1400 --held-out-questions 700

    The shipped adapter: --epochs 2 --negatives 3 --frozen-layers 4, trained on a folder of the groups
    without the equiv ones; its decision.json was then calibrated on the held-out groups with the
    held-out-equiv ones (--equiv --build-only) beside them, as --evaluate does (docs/benchmarks.md):

      sqlmend train-cross-verifier --data runs/cross --equiv --evaluate runs/cross/adapter
    """
    from sqlmend.data import load_dataset
    from sqlmend.search import cross
    from sqlmend.search import train as training

    chosen = _weights(weights)
    k, n = (int(x) for x in shard.split("/"))
    ds = load_dataset("spider-train")
    pool = list(ds.tasks)
    data.mkdir(parents=True, exist_ok=True)
    suffix = "" if n == 1 else f"-{k}"
    builds = [(part, count, "") for part, count in (("train", questions), ("held-out", held_out_questions))]
    builds += [(part, count, "-equiv") for part, count, _ in builds] if equiv else []
    if evaluate_adapter is not None:  # only what the comparison reads is built (or resumed)
        builds = [b for b in builds if b[0] == "held-out"]
    for part, count, kind in builds:
        target = data / f"{part}{kind}{suffix}.jsonl"
        # questions another shard's file of the same kind already holds are not built again
        elsewhere = {qid for f in _group_files(data, part, kind) if f != target
                     for qid in training.done_questions(f)}
        tasks = [t for t in cross.questions(pool, lambda d: ds.db_path(d) is not None, part, count)[k::n]
                 if t.question_id not in elsewhere]
        bar = progress_bar(total=len(tasks), desc=f"groups {part}{kind}", unit="q")
        for msg in cross.build_groups(tasks, lambda d: str(ds.db_path(d)), target,
                                      neighbours=training.Neighbours(pool), progress=bar.update,
                                      **({"kinds": ("equiv",), "gold": False} if kind else {})):
            progress_write(msg)
        bar.close()
    if build_only:
        typer.echo(f"groups in {data}")
        return
    train_files = sorted(data.glob("train*.jsonl"))  # with the equiv files, when built
    held_files = sorted(data.glob("held-out*.jsonl"))
    if evaluate_adapter is not None:
        _evaluate_adapter(held_files, evaluate_adapter, top, threads, chosen)
        return
    meta = cross.train(cross.load_groups(train_files), data / "adapter", epochs=epochs, negatives=negatives,
                       threads=threads, frozen=frozen_layers, listwise=listwise, lr=lr, progress=progress_write)
    report = _calibrate(held_files, data / "adapter", top, threads, chosen)
    report["training"] = meta
    (data / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    typer.echo(json.dumps(report, indent=1))


def _weights(text: str) -> tuple[float, ...]:
    """``--weights``: each in [0, 1]."""
    try:
        out = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        out = ()
    if not out or not all(0.0 <= w <= 1.0 for w in out):
        raise typer.BadParameter(f"expected comma-separated numbers in [0, 1], got {text!r}", param_hint="--weights")
    return out


def _calibrate(held_files: list[Path], adapter: Path, top: int, threads: int,
               weights: tuple[float, ...]) -> dict:
    """The adapter compared on the held-out groups (:func:`cross.evaluate`); its calibrated decision is
    written beside it as ``decision.json``. Returns the report."""
    from sqlmend.search import cross

    report = cross.evaluate(cross.load_groups(held_files), cross.CrossEncoder(adapter, threads), top=top,
                            weights=weights)
    (adapter / "decision.json").write_text(json.dumps(report["decision"], indent=1) + "\n")
    return report


def _evaluate_adapter(held_files: list[Path], adapter: Path, top: int, threads: int,
                      weights: tuple[float, ...]) -> None:
    """``--evaluate``: an adapter trained before, compared and calibrated on these held-out groups."""
    if not held_files:
        raise typer.BadParameter("no held-out groups in --data (build them with --build-only)", param_hint="--data")
    report = _calibrate(held_files, adapter, top, threads, weights)
    report["held_out_files"] = [f.name for f in held_files]
    (adapter / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    d = report["decision"]["at_margins"]
    typer.echo(f"{adapter}: " + ", ".join(f"{scope} margin {v['margin']} fixes {v['fixed']} breaks {v['broken']}"
                                          for scope, v in d.items()))


def _group_files(data: Path, part: str, kind: str) -> list[Path]:
    """The group files of ``part`` (train, held-out) of one kind ("" or "-equiv"), every shard."""
    return [f for f in data.glob(f"{part}*.jsonl") if ("-equiv" in f.stem) == bool(kind)]


def bench_failing_cmd(
    questions: int = typer.Option(300, help="Join questions of the training set's held-out databases (a seeded sample)."),
    seed: int = typer.Option(7, help="Seed of the sample."),
    dataset: str = typer.Option("spider-train", "--dataset", help="A training set (never dev/test)."),
    option: list[str] = typer.Option(None, "--option", help="search.KEY=VALUE, repeatable (e.g. "
                                                            "search.expand_failing=0)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the report as JSON here."),
) -> None:
    """How the search repairs originals the engine refuses: golds of training questions broken the way
    real systems' SQL fails (columns unqualified, a join dropped, a wrong qualifier), the static stage
    first as in the pipeline, then the search stage once per failed_choice (ranker, verifier, minimal);
    a repair counts when it returns the gold's rows.

    Example: sqlmend bench failing --questions 300
    """
    from sqlmend.bench.failing import bench_failing, markdown
    from sqlmend.cli.correct_cmd import parse_options
    from sqlmend.data import load_dataset

    refuse_dev(dataset)
    options = parse_options(option).get("search", {})
    ds = load_dataset(dataset)
    bar = progress_bar(total=questions, desc="failing", unit="q", leave=False)
    report = bench_failing(ds, questions=questions, seed=seed, options=options, progress=lambda: bar.update(1))
    bar.close()
    typer.echo(markdown(report))
    if out:
        report.update({"date": _dt.date.today().isoformat(), "dataset": dataset, "options": options})
        out.write_text(json.dumps(report, indent=1))


def bench_search_cost_cmd(
    questions: int = typer.Option(400, help="Training questions whose golds are searched (a seeded sample)."),
    seed: int = typer.Option(0, help="Seed of the sample."),
    dataset: str = typer.Option("spider-train", "--dataset", help="A training set (never dev/test)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the fit and every search's counts as JSON here."),
) -> None:
    """What a unit of search work costs in seconds on this machine: the search's budget is counted in
    work (search.engine.COST), so that a busy machine finds the same candidates; this fits those
    costs by least squares on unbounded searches from training golds and prints them beside the
    shipped ones.

    Example: sqlmend bench search-cost --questions 400
    """
    from sqlmend.bench.search_cost import fit, markdown, measure
    from sqlmend.data import load_dataset
    from sqlmend.search.engine import COST

    refuse_dev(dataset)
    bar = progress_bar(total=questions, desc="search-cost", unit="q", leave=False)
    rows = measure(load_dataset(dataset), questions, seed, progress=lambda: bar.update(1))
    bar.close()
    try:
        report = fit(rows)
    except SqlmendError as e:
        typer.secho(f"error: {e}", err=True, fg="red")
        raise typer.Exit(1)
    typer.echo(markdown(report, COST))
    if out:
        report.update({"date": _dt.date.today().isoformat(), "dataset": dataset, "questions": questions,
                       "seed": seed, "rows": rows})
        out.write_text(json.dumps(report, indent=1))


def register(app: typer.Typer) -> None:
    """Add ``train-verifier``, ``train-asked``, ``train-cross-verifier``, ``bench search`` and ``bench failing`` to the
    command line."""
    from sqlmend.cli import bench_app

    app.command("train-verifier")(train_verifier)
    app.command("train-asked")(train_asked)
    app.command("train-cross-verifier")(train_cross_verifier)
    bench_app.command("search")(bench_search_cmd)
    bench_app.command("failing")(bench_failing_cmd)
    bench_app.command("search-cost")(bench_search_cost_cmd)

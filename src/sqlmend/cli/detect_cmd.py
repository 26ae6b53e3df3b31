"""``sqlmend synth``, ``sqlmend train-detector``, ``sqlmend detect`` and ``sqlmend bench detect``.

Thin wrappers over :mod:`sqlmend.synth` and :mod:`sqlmend.detect` (ErrorLLM §3.1-3.2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from sqlmend.cli.output import QUIET
from sqlmend.data import load_dataset, write_jsonl
from sqlmend.data.datasets import read_jsonl
from sqlmend.db import benchmark_db
from sqlmend.errors import SqlmendError
from sqlmend.progress import bar as progress_bar, write as progress_write

_DATASET_HELP = "A named dataset (spider-train, spider-dev, ...) or a task file."


def _fail(error: Exception) -> None:
    typer.secho(f"error: {error}", err=True, fg=typer.colors.RED)
    raise typer.Exit(2)


def _threads(n: int) -> None:
    """Set torch's CPU threads (oversubscribed threads make a busy machine many times slower)."""
    import torch

    torch.set_num_threads(max(1, n))


def default_detector_dir() -> Path:
    """Where ``train-detector`` writes by default (the cache)."""
    from sqlmend.detect.stage import default_dir

    return default_dir()


def _reading_dir(folder: Path | None) -> Path:
    """The detector ``detect`` and ``bench detect`` read: ``--detector``, else the packaged one, else the cache."""
    from sqlmend.detect.stage import trained_dir

    return folder or trained_dir()


_DETECTOR_HELP = "Detector folder (default: the adapter shipped with sqlmend, else the cache)."


def synth(
    out: Path = typer.Option(..., "--out", "-o", help="Training JSONL to write."),
    dataset: str = typer.Option("spider-train", help=_DATASET_HELP + " Use TRAINING questions only."),
    limit: Optional[int] = typer.Option(None, help="Use at most this many questions (sampled evenly)."),
    per_question: int = typer.Option(1, help="Single-error examples per question."),
    compose_rate: float = typer.Option(0.3, help="Probability of an extra two-error example per question."),
    seed: int = typer.Option(0, help="Random seed."),
    value_links: bool = typer.Option(True, help="Link question values through the value index."),
    asillm_predictions: Optional[Path] = typer.Option(
        None, help="Predictions of a system on the SAME training questions: its wrong ones are labelled "
                   "by the model of the 'synth' stage (AsiLLM); skipped with a message when none is configured."),
    hard_negatives: int = typer.Option(0, help="Per question, up to N near-miss repair-search candidates of the "
                                               "gold returning its rows (no_error) and N that do not (errors)."),
    type_weights: Optional[Path] = typer.Option(
        None, help="JSON {error kind or type: weight}, or a `bench detect --json` report (the kinds of the real "
                   "wrong predictions): draw the error types to perturb with these weights."),
    data_root: Optional[Path] = typer.Option(None, help="Folder holding spider/ (default: auto)."),
    quiet: bool = QUIET,
) -> None:
    """Synthesize detector training data from gold SQL: execution-verified perturbations + gold as no_error.

    \b
    Example (hard negatives, error types weighed like the real wrong predictions):
      sqlmend synth --limit 2500 --hard-negatives 1 --type-weights runs/detector/bench.json --out runs/detector/synth-hard.jsonl
    """
    from sqlmend.search.hard import near_misses
    from sqlmend.synth import label_distribution, synthesize
    from sqlmend.synth.build import sample_questions

    if "dev" in dataset or "test" in dataset:
        typer.secho(f"warning: {dataset} looks like evaluation data; train only on training questions",
                    err=True, fg=typer.colors.YELLOW)
    weights = None
    try:
        ds = load_dataset(dataset, data_root=data_root)
        if type_weights is not None:
            from sqlmend.bench.errorkind import type_weights as read_weights

            weights = read_weights(json.loads(type_weights.read_text()))
    except (SqlmendError, ValueError, OSError) as e:
        _fail(e)
    tasks = sample_questions(ds.tasks, limit, seed)
    examples, skipped = [], []
    bar = progress_bar(total=len(tasks), desc="synth", unit="question", disable=quiet)
    last = None
    for item in synthesize(tasks, lambda db_id: ds.db_path(db_id) or f"<missing database {db_id}>",
                           per_question=per_question, compose_rate=compose_rate, seed=seed,
                           value_links=value_links, hard_negatives=hard_negatives, type_weights=weights,
                           near_misses=near_misses):
        if isinstance(item, str):
            skipped.append(item)
            bar.update(1)
            continue
        if item.question_id != last:
            bar.update(1)
            last = item.question_id
        examples.append(item.to_dict())
    bar.close()
    if asillm_predictions is not None:
        examples += _asillm(ds, tasks, asillm_predictions, skipped, quiet)
    write_jsonl(out, examples)
    dist = label_distribution(examples)
    typer.echo(f"wrote {len(examples)} examples from {len(tasks)} questions to {out} ({len(skipped)} skipped)")
    for line in skipped[:5]:
        typer.echo(f"  {line}")
    typer.echo(json.dumps(dict(sorted(dist.items())), indent=1))


def _asillm(ds, tasks, predictions: Path, skipped: list[str], quiet: bool = False) -> list[dict]:
    from dataclasses import replace

    from sqlmend.data import load_predictions
    from sqlmend.detect.asillm import label_predictions
    from sqlmend.llm.config import resolve

    preds = load_predictions(predictions, ds)
    wrong = [replace(t, sql=preds[t.question_id]) for t in tasks if preds.get(t.question_id)]
    try:
        items = list(progress_bar(label_predictions(wrong, lambda d: ds.db_path(d) or d, resolve("synth")),
                                  desc="asillm", unit="prediction", disable=quiet))
    except SqlmendError as e:
        typer.secho(str(e), err=True, fg=typer.colors.YELLOW)
        return []
    skipped += [x for x in items if isinstance(x, str)]
    return [x.to_dict() for x in items if not isinstance(x, str)]


def train_detector(
    data: Path = typer.Option(..., "--data", help="Training JSONL from `sqlmend synth`."),
    out: Path = typer.Option(None, "--out", "-o", help="Detector folder (default: the cache)."),
    backbone: Optional[str] = typer.Option(None, help="Checkpoint folder or GGUF (default SmolLM2-135M)."),
    epochs: float = typer.Option(1.0, help="Passes over the data."),
    max_steps: Optional[int] = typer.Option(None, help="Optimizer steps (overrides --epochs)."),
    lr: float = typer.Option(3e-4, help="Learning rate."),
    grad_accum: int = typer.Option(2, help="Forward passes (batches) per optimizer step."),
    batch_size: int = typer.Option(4, help="Examples per forward pass, of similar length (first_step objective)."),
    max_length: int = typer.Option(256, help="Most tokens per example (the input is cut from the left)."),
    max_chars: int = typer.Option(1000, help="Character budget of the detector input (the QSS is cut first)."),
    lora_r: int = typer.Option(8, help="LoRA rank."),
    top_layers: int = typer.Option(8, help="LoRA on the top N decoder layers only, no backward pass below "
                                           "them (0: every layer)."),
    objective: str = typer.Option("first_step", help="first_step (what one-pass detection reads; batched) | "
                                                     "sequence (the whole answer; needed by --mode decode)."),
    loss: str = typer.Option("constrained", help="constrained (over error tokens) | full (whole vocabulary); "
                                                 "sequence objective."),
    retrain: bool = typer.Option(False, "--retrain", help="Start from scratch instead of continuing the packaged "
                                                          "detector's checkpoint (when --out has none)."),
    time_budget: Optional[float] = typer.Option(None, help="Stop (with a checkpoint) after this many minutes."),
    holdout: float = typer.Option(0.1, help="Share of databases held out for calibration."),
    target_precision: float = typer.Option(0.8, help="Calibrate P(no_error) threshold for this precision."),
    calibrate_limit: int = typer.Option(150, help="Held-out examples scored for calibration."),
    threads: int = typer.Option(1, help="CPU threads (1 is fastest on a busy 2-core machine)."),
    device: str = typer.Option("cpu", help="cpu | cuda | auto."),
    quiet: bool = QUIET,
) -> None:
    """Train the error-token detector (LoRA + token rows); resumable: rerun the same command to continue."""
    from sqlmend.detect import calibrate, model as dmodel
    from sqlmend.detect.train import TrainConfig, train

    out = out or default_detector_dir()
    rows = read_jsonl(data)
    train_rows, held = calibrate.split_by_db(rows, holdout, seed=0)
    from sqlmend.detect.stage import packaged_dir

    init = None if retrain or backbone else packaged_dir()
    cfg = TrainConfig(out_dir=str(out), backbone=backbone, epochs=epochs, max_steps=max_steps, lr=lr,
                      grad_accum=grad_accum, batch_size=batch_size, max_length=max_length, max_chars=max_chars,
                      objective=objective, loss=loss, init_from=str(init) if init else None,
                      time_budget=time_budget * 60 if time_budget else None, threads=threads, device=device,
                      lora=dmodel.LoraSettings(r=lora_r, alpha=2 * lora_r, top_layers=top_layers or None))
    typer.echo(f"training on {len(train_rows)} examples ({len(held)} held out for calibration) -> {out}")
    report = train(train_rows, cfg, progress=not quiet)
    typer.echo(f"steps {report.steps}/{report.total_steps}, examples seen {report.examples_seen}, "
               f"loss {report.mean_loss:.4f}, {report.seconds / 60:.1f} min, finished={report.finished}")
    if held:
        result = calibrate.calibrate_folder(out, held[:calibrate_limit], target_precision, backbone=backbone,
                                            device=device, progress=not quiet)
        typer.echo(f"calibrated threshold P(no_error) < {result['threshold']:.4f} "
                   f"(held-out precision {result['precision']:.3f}, recall {result['recall']:.3f}, "
                   f"n={result['n']})")


def train_combiner(
    questions: int = typer.Option(250, help="Unseen Spider-train questions used (a seeded sample)."),
    seed: int = typer.Option(0, help="Seed of the sample, the perturbations and the folds."),
    cases: Path = typer.Option(Path("runs/detector/combine-cases.jsonl"), help="The scored cases (JSONL; "
                                                                              "reused when it exists)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write the weights (default: the shipped "
                                                  "src/sqlmend/detect/combine.json)."),
    detector_dir: Optional[Path] = typer.Option(None, "--detector", help=_DETECTOR_HELP),
    near: int = typer.Option(1, help="Near-miss search candidates of the gold per kind (same rows / other rows)."),
    threads: int = typer.Option(1, help="CPU threads."),
    quiet: bool = QUIET,
) -> None:
    """Fit the detector + verifier + static-rules + repair-search combinations on Spider TRAIN (never dev).

    Cases: for each sampled training question that neither the shipped detector nor the
    shipped verifier trained on, its gold (correct), two rule perturbations (wrong) and
    near-miss search candidates of the gold (same rows: correct; other rows: wrong). Each is
    scored by the detector, the verifier, the static rules and a repair search run from it (the
    search stage's bounds); balanced logistic regressions combine them (with and without the
    detector, with and without the search; the best cross-validated AUROC is the default);
    thresholds (each combination's and the verifier's alone) maximize F1 on cross-validated scores.

    Example: sqlmend train-combiner --questions 250 --cases runs/detector/combine-cases.jsonl
    """
    from sqlmend.bench.detect import combiner_cases, fit_combiner
    from sqlmend.detect import combine
    from sqlmend.detect.detector import ErrorTokenDetector
    from sqlmend.search.verifier import WEIGHTS, FeatureVerifier

    _threads(threads)
    try:
        if not cases.exists():
            det = ErrorTokenDetector.from_dir(_reading_dir(detector_dir), mode="one_pass")
            rows = combiner_cases(load_dataset("spider-train"), det, FeatureVerifier(), questions, seed, near,
                                  progress=not quiet, skipped=progress_write)
            cases.parent.mkdir(parents=True, exist_ok=True)
            write_jsonl(cases, rows)
        spec = fit_combiner(read_jsonl(cases), WEIGHTS, seed,
                            f"sqlmend train-combiner --questions {questions} --seed {seed} --near {near}")
    except SqlmendError as e:
        _fail(e)
    target = out or combine.WEIGHTS
    target.write_text(json.dumps(spec, indent=1) + "\n")
    typer.echo(json.dumps(spec, indent=1))
    typer.echo(f"wrote {target}")


def train_original_detector(
    cases: Path = typer.Option(..., exists=True, dir_okay=False,
                               help="The verifier's training cases (the JSONL of `sqlmend train-verifier`, "
                                    "Spider train); only each case's original is read."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write the model (default: the shipped "
                                                  "src/sqlmend/detect/original.json)."),
    holdout: float = typer.Option(0.2, help="Share of databases held out for the AUROC and the threshold."),
    max_iter: int = typer.Option(200, help="Boosting iterations."),
    seed: int = typer.Option(0, help="Random state of the boosting."),
    cases_from: str = typer.Option("", help="How the cases file was made (recorded in the model's training)."),
    hard_negatives: int = typer.Option(0, min=0, help="Near misses per gold question (its wrong repair "
                                                      "candidates) added as wrong originals."),
) -> None:
    """Fit the detection model (P(correct) of a query alone, over the verifier's features) on Spider TRAIN.

    \b
    Example (one CPU thread on a busy machine):
      OMP_NUM_THREADS=1 sqlmend train-original-detector --cases runs/verifier/cases.jsonl
    """
    from sqlmend.detect import original

    try:
        spec = original.fit(cases, holdout, max_iter, seed=seed, hard_negatives=hard_negatives,
                            command=f"sqlmend train-original-detector --cases {cases} --holdout {holdout} "
                                    f"--max-iter {max_iter} --seed {seed} --hard-negatives {hard_negatives}")
    except SqlmendError as e:
        _fail(e)
    if cases_from:
        spec["training"]["cases_from"] = cases_from
    target = out or original.WEIGHTS
    target.write_text(json.dumps(spec, separators=(",", ":")) + "\n")
    typer.echo(json.dumps({"threshold": spec["threshold"], "training": spec["training"]}, indent=1))
    typer.echo(f"wrote {target}")


def detect(
    sql: str = typer.Option(None, "--sql", help="The SQL to check."),
    question: str = typer.Option(None, "--question", help="The question it answers."),
    db: str = typer.Option(None, "--db", help="Database path or URL."),
    tasks: Optional[Path] = typer.Option(None, "--tasks", help="JSONL tasks (question_id, db_id, question, sql)."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help=_DATASET_HELP + " With --pred and --out DIR."),
    pred: Optional[Path] = typer.Option(None, "--pred", help="Prediction file of --dataset (.sql or .jsonl)."),
    limit: Optional[int] = typer.Option(None, help="With --dataset: only the first N predictions."),
    sample: Optional[int] = typer.Option(None, help="With --dataset: a seeded random sample of N predictions."),
    seed: int = typer.Option(0, help="Seed of --sample."),
    batch_size: int = typer.Option(8, help="Queries per forward pass of the detector."),
    data_root: Optional[Path] = typer.Option(None, help="Folder holding spider/ (default: auto)."),
    db_root: Optional[Path] = typer.Option(None, help="Databases folder <root>/<db_id>/<db_id>.sqlite "
                                                      "(with --tasks; with --dataset it wins over the dataset's)."),
    detector_dir: Optional[Path] = typer.Option(None, "--detector", help=_DETECTOR_HELP),
    mode: str = typer.Option("one_pass", help="one_pass (calibrated threshold) | decode (constrained decoding)."),
    kind: str = typer.Option("error-token", help="error-token: ErrorLLM's error-token model (types from its "
                                                 "tokens) | features: the detection model, trees over the "
                                                 "repair verifier's features, about 0.01 s a query and better "
                                                 "measured on real predictions (types from the static rules)."),
    static: bool = typer.Option(False, help="Also run the static rules."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="With --dataset: the output folder "
                                                                 "(detections.jsonl, run.json); else a JSONL "
                                                                 "file (default: stdout)."),
    threads: int = typer.Option(1, help="CPU threads (1 is fastest on a busy 2-core machine)."),
    quiet: bool = QUIET,
) -> None:
    """Detect the error types of SQL with the trained error-token model (per-query types with scores).

    \b
    Examples:
      sqlmend detect --db pets_1.sqlite --question "How many female students?" --sql "SELECT count(*) FROM Student"
      sqlmend detect --dataset spider-dev --pred gpt-4_zero-shot.sql --out runs/det --sample 100 --seed 0
      sqlmend detect --dataset spider-dev --pred gpt-4_zero-shot.sql --out runs/det --kind features

    With --dataset, detections.jsonl has one line per prediction: question_id, error (flagged),
    types, score (P(error)). The findings are advisory: on the real predictions of
    docs/benchmarks.md the shipped error-token model ranks at AUROC 0.63 (a seeded 1,000), the
    detection model (--kind features) at 0.71 (all 4,860).
    """
    from sqlmend.data import read_tasks
    from sqlmend.detect.batch import Item, judge
    from sqlmend.detect.detector import ErrorTokenDetector
    from sqlmend.detect.original import OriginalDetector

    if kind not in ("error-token", "features"):
        raise typer.BadParameter(f"--kind must be error-token or features, not {kind!r}")
    folder = _reading_dir(detector_dir)
    _threads(threads)

    def load() -> Any:
        return OriginalDetector() if kind == "features" else ErrorTokenDetector.from_dir(folder, mode=mode)

    if dataset is not None:
        from sqlmend.bench.detect import detect_file

        if pred is None or out is None:
            raise typer.BadParameter("--dataset needs --pred and --out DIR")
        try:
            det = load()
            r = detect_file(det, dataset, pred, out, limit=limit, sample=sample, seed=seed, data_root=data_root,
                            db_root=db_root, progress=not quiet, batch_size=batch_size)
        except SqlmendError as e:
            _fail(e)
        typer.echo(f"{r['n']} predictions: {r['flagged']} flagged, {r['failed']} not judged -> "
                   f"{out / 'detections.jsonl'} ({det.version if kind == 'features' else f'detector {folder}, {det.version}'})")
        return
    try:
        if tasks is not None:
            task_list, _ = read_tasks(tasks)
            items = [Item(t.question_id, t.question_id, t.db_id, t.question, t.sql, t.evidence) for t in task_list]
            root = db_root

            def path_of(db_id: str) -> str:
                if root is None:
                    raise SqlmendError("--db-root is needed with --tasks")
                return str(benchmark_db(root, db_id))
        elif sql and question and db:
            items = [Item("1", "1", "db", question, sql)]

            def path_of(db_id: str) -> str:
                return db
        else:
            raise SqlmendError("give --sql, --question and --db, or --tasks, or --dataset with --pred and --out")
        det = load()
    except SqlmendError as e:
        _fail(e)
    if kind == "features":
        results = judge(items, path_of, None, static=True, verifier=det.verifier,
                        progress=len(items) > 1 and not quiet)
        lines = [json.dumps({**r.to_dict(), "flagged": det.flags(r.p_correct),
                             "score": None if r.p_correct is None else round(1 - r.p_correct, 4)})
                 for r in results]
    else:
        results = judge(items, path_of, det, static=static, progress=len(items) > 1 and not quiet,
                        batch_size=batch_size)
        lines = [json.dumps(r.to_dict()) for r in results]
    if out:
        out.write_text("\n".join(lines) + "\n")
        typer.echo(f"wrote {len(lines)} results to {out}")
    else:
        typer.echo("\n".join(lines))


def bench_detect(
    detector_dir: Optional[Path] = typer.Option(None, "--detector", help=_DETECTOR_HELP),
    predictions: Optional[list[Path]] = typer.Option(None, "--pred", help="Prediction files (default: the five shared Spider-dev files)."),
    limit: Optional[int] = typer.Option(None, help="Score a seeded sample of this many dev questions (all when "
                                                   "omitted); sampled questions without a database are left out."),
    sample_predictions: Optional[int] = typer.Option(
        None, "--predictions", help="Score a seeded sample of this many predictions among all those of the files "
                                    "(e.g. 1000 of the 4,860)."),
    seed: int = typer.Option(0, help="Seed of the question and prediction samples."),
    mode: str = typer.Option("one_pass", help="one_pass | decode."),
    model: bool = typer.Option(True, help="Run the error-token detector (--no-model: only the other detectors)."),
    static: bool = typer.Option(True, help="Also score the static rules and static-or-model."),
    verifier: bool = typer.Option(True, help="Also score the repair-search verifier used as a detector, "
                                             "static-or-verifier and, with --static, the combinations "
                                             "(detect/combine.py VARIANTS; thresholds from --combine)."),
    combine: Optional[Path] = typer.Option(None, help="Combination weights and thresholds (default: the shipped "
                                                      "detect/combine.json, fitted on Spider train)."),
    verifier_weights: Optional[Path] = typer.Option(None, help="Verifier weights (default: the shipped "
                                                               "search/verifier.json; e.g. an earlier one, "
                                                               "`git show REV:src/sqlmend/search/verifier.json`)."),
    original: bool = typer.Option(True, help="Also score the detection model trained for detection "
                                             "(detect/original.json; its threshold from Spider train)."),
    original_weights: Optional[Path] = typer.Option(None, help="The detection model's weights (default: the "
                                                               "shipped detect/original.json)."),
    search: bool = typer.Option(True, help="With the verifier: also run the repair search from each prediction "
                                           "(the search stage's bounds) for the combinations that read it."),
    prompted: int = typer.Option(0, help="Also run the prompted SmolLM2 baseline (JSON answer under constrained "
                                         "decoding) on a seeded sample of this many of the scored predictions "
                                         "(0: not run; slow on a CPU)."),
    data_root: Optional[Path] = typer.Option(None, help="Folder holding spider/ (default: auto)."),
    out: Optional[Path] = typer.Option(None, "--json", help="Write all figures and per-item results as JSON."),
    threads: int = typer.Option(1, help="CPU threads (1 is fastest on a busy 2-core machine)."),
    quiet: bool = QUIET,
) -> None:
    """Detectors side by side on Spider-dev predictions vs execution correctness: D-Precision/Recall/Accuracy/F1,
    AUROC, recall per judgeable error kind, seconds per query.

    \b
    Example (the measurement of docs/benchmarks.md):
      sqlmend bench detect --predictions 1000 --prompted 200 --json runs/detector/bench.json
    """
    from sqlmend.bench.detect import bench_detect as run
    from sqlmend.data.predictions import shared_prediction_files
    from sqlmend.detect.detector import ErrorTokenDetector

    _threads(threads)
    try:
        files = predictions or shared_prediction_files(data_root=data_root)
        det = ErrorTokenDetector.from_dir(_reading_dir(detector_dir), mode=mode) if model else None
        ver = comb = asker = orig = None
        if original:
            from sqlmend.detect.original import OriginalDetector

            orig = OriginalDetector(original_weights)
        if verifier:
            from sqlmend.detect.combine import Combiner, search_settings
            from sqlmend.search.verifier import WEIGHTS, FeatureVerifier

            ver, comb = FeatureVerifier(verifier_weights), Combiner.load(combine)
            if not comb.fitted_with(verifier_weights or WEIGHTS):
                typer.secho("warning: the combination was fitted with other verifier weights; its thresholds "
                            "may not fit (run `sqlmend train-combiner`)", err=True, fg=typer.colors.YELLOW)
        if prompted:
            from sqlmend.detect.prompted import PromptedDetector
            from sqlmend.llm.local import TransformersBackend

            asker = PromptedDetector(TransformersBackend(device="cpu", constrain=True), max_tokens=48)
        r = run(det, files, limit=limit, seed=seed, static=static, data_root=data_root, progress=not quiet,
                predictions=sample_predictions, verifier=ver, combiner=comb, prompted=asker,
                prompted_n=prompted or None, search=search_settings() if verifier and search else None, original=orig)
    except SqlmendError as e:
        _fail(e)
    typer.echo(f"{len(r['labels'])} predictions ({r['wrong']} wrong) of {r['questions']} questions, {len(files)} "
               f"systems; {len(r['suspects'])} gold-suspect questions"
               + (f"; mode={mode}, threshold={det.threshold:.4f}" if det is not None else ""))
    if "search" in r["seconds"]:
        typer.echo(f"repair search from each prediction: {r['seconds']['search']:.3f} s/query with the verifier "
                   f"(+{r['seconds']['search'] - r['seconds']['verifier']:.3f} over the verifier alone); "
                   f"the combination chosen on train: {comb.variant}")
    typer.echo("| detector / questions | n | D-Precision | D-Recall | D-Accuracy | D-F1 | AUROC | s / query |")
    typer.echo("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, m in r["table"].items():
        detector, subset = name.split(" / ")
        auc = r["auroc"].get(detector, {}).get(subset)
        secs = r["seconds"].get(detector, 0.0)
        typer.echo(f"| {name} | {m['tp'] + m['fp'] + m['fn'] + m['tn']} | {m['precision']} | {m['recall']} | "
                   f"{m['accuracy']} | {m['f1']} | {'n/a' if auc is None else f'{auc:.3f}'} | {secs:.3f} |")
    typer.echo("\nrecall (%) per judgeable error kind of the wrong predictions (the diff against the gold in one "
               "clause family):")
    names = list(dict.fromkeys(n for row in r["kinds"].values() for n in row if n != "n"))
    typer.echo("| kind | n | " + " | ".join(names) + " |")
    typer.echo("| --- | --- |" + " --- |" * len(names))
    for kind, row in r["kinds"].items():
        typer.echo(f"| {kind} | {row['n']} | " + " | ".join(str(row.get(n, "")) for n in names) + " |")
    if any(r["per_system"].values()):
        typer.echo("\nper system (all questions; P / R / Acc / F1):")
    for name, per in r["per_system"].items():
        if not per:
            continue
        typer.echo(f"| {name} | " + " | ".join(f"{d}: {m['precision']} / {m['recall']} / {m['accuracy']} / {m['f1']}"
                                               for d, m in per.items()) + " |")
    if out:
        out.write_text(json.dumps({k: v for k, v in r.items() if k != "wrong"}, indent=1))


def register(app: typer.Typer) -> None:
    """Add the detector commands to the ``sqlmend`` app."""
    app.command("synth")(synth)
    app.command("train-detector")(train_detector)
    app.command("detect")(detect)
    app.command("train-combiner")(train_combiner)
    app.command("train-original-detector")(train_original_detector)
    from sqlmend.cli import bench_app

    bench_app.command("detect")(bench_detect)

"""Reports as JSON and Markdown: evaluations, paired comparisons, detection and refinement metrics."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sqlmend.evaluation.compare import PairedReport, PairedSlice
from sqlmend.evaluation.evaluate import EvalReport, EvalSummary
from sqlmend.evaluation.metrics import DetectionMetrics, RefinementMetrics

#: Ids listed at most per class in Markdown (JSON has them all).
MAX_IDS = 60


def write_json(path: str | os.PathLike, report: Any) -> Path:
    """Write a report (anything with ``to_dict()``, or a JSON-ready value) as indented JSON.

    Args:
        path: the output file (parent folders are created).
        report: the report.

    Returns:
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = report.to_dict() if hasattr(report, "to_dict") else report
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_markdown(path: str | os.PathLike, text: str) -> Path:
    """Write Markdown text to a file (parent folders are created).

    Args:
        path: the output file.
        text: the Markdown.

    Returns:
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _ids(ids: list[str]) -> str:
    if not ids:
        return "—"
    shown = ", ".join(ids[:MAX_IDS])
    return shown + (f", … ({len(ids) - MAX_IDS} more)" if len(ids) > MAX_IDS else "")


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.2f}" if whole else "—"


def _summary_rows(label: str, s: EvalSummary) -> list[str]:
    return [f"| {label} | {s.n} | {s.correct} | {s.ex:.2f} | {s.correct_ordered} | {s.ex_ordered:.2f} |"]


def eval_markdown(report: EvalReport) -> str:
    """Render an evaluation: EX (set and ordered rules), verdict counts, difficulty breakdown.

    Args:
        report: the evaluation.

    Returns:
        Markdown text.
    """
    s = report.summary()
    lines = [f"### {report.predictions} on {report.dataset}", "",
             f"{s.n} questions scored, {s.excluded} excluded (gold error or no database); "
             f"timeout {report.timeout:g}s; {report.seconds:.1f}s "
             f"({report.gold_cached} gold results from cache).", "",
             "| questions | n | correct (set) | EX % | correct (ordered) | EX ordered % |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += _summary_rows("all", s)
    if report.suspect_ids:
        lines += _summary_rows(f"without {len(report.suspect_ids)} gold-suspect",
                               report.summary(report.suspect_ids))
    lines += ["", "| verdict | count |", "| --- | --- |"]
    lines += [f"| {v} | {c} |" for v, c in s.verdicts.items()]
    lines += ["", "| difficulty | n | correct | EX % | EX ordered % |", "| --- | --- | --- | --- | --- |"]
    for level, d in s.by_difficulty.items():
        lines.append(f"| {level} | {d['n']} | {d['correct']} | {_pct(d['correct'], d['n'])} | "
                     f"{_pct(d['correct_ordered'], d['n'])} |")
    if report.suspect_ids:
        lines += ["", f"Gold-suspect ids: {_ids(report.suspect_ids)}"]
    return "\n".join(lines) + "\n"


def _slice_rows(label: str, s: PairedSlice) -> str:
    return (f"| {label} | {s.n} | {s.before_correct} ({s.before_ex:.2f}%) | {s.after_correct} ({s.after_ex:.2f}%) "
            f"| {len(s.fixed)} | {len(s.regressed)} | {len(s.changed)} | {s.delta_ex:+.2f} | "
            f"{s.delta_ex_ordered:+.2f} |")


def paired_markdown(report: PairedReport) -> str:
    """Render a paired before/after report with the id lists.

    Args:
        report: the paired report.

    Returns:
        Markdown text.
    """
    lines = [f"### {report.before} → {report.after} on {report.dataset}", "",
             "| questions | n | before correct | after correct | fixed | regressed | changed | ΔEX pp "
             "| ΔEX ordered pp |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
             _slice_rows("all", report.all)]
    if report.suspect_ids:
        lines.append(_slice_rows(f"without {len(report.suspect_ids)} gold-suspect", report.clean))
    lines += ["", f"{report.excluded} questions excluded (gold error or no database).", "",
              f"- fixed: {_ids(report.all.fixed)}",
              f"- regressed: {_ids(report.all.regressed)}"]
    if report.suspect_ids:
        lines.append(f"- gold-suspect: {_ids(report.suspect_ids)}")
    return "\n".join(lines) + "\n"


def detection_markdown(metrics: DetectionMetrics, title: str = "Detection") -> str:
    """Render D-Precision / D-Recall / D-Accuracy / D-F1, overall and per error type.

    Args:
        metrics: the detection metrics.
        title: the heading.

    Returns:
        Markdown text.
    """
    head = ["| | TP | FP | FN | TN | D-Precision | D-Recall | D-Accuracy | D-F1 |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def row(name: str, c) -> str:
        return (f"| {name} | {c.tp} | {c.fp} | {c.fn} | {c.tn} | {100 * c.precision:.2f} | "
                f"{100 * c.recall:.2f} | {100 * c.accuracy:.2f} | {100 * c.f1:.2f} |")

    lines = [f"### {title}", "", *head, row("incorrect (any)", metrics.overall)]
    lines += [row(t, c) for t, c in metrics.per_type.items()]
    return "\n".join(lines) + "\n"


def refinement_markdown(metrics: RefinementMetrics, title: str = "Refinement") -> str:
    """Render FR, CR and the ΔEX decomposition beside the measured ΔEX, as Markdown under ``title``."""
    m = metrics
    return "\n".join([
        f"### {title}", "",
        "| n | TP | FP | fixed | corrupted | FR % | CR % | ΔEX = (TP·FR − FP·CR)/n | ΔEX measured | "
        "unflagged moved |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| {m.n} | {m.tp} | {m.fp} | {m.fixed} | {m.corrupted} | {100 * m.fr:.2f} | {100 * m.cr:.2f} | "
        f"{m.delta_ex:+.2f} | {m.delta_ex_measured:+.2f} | {m.unflagged_moved} |"]) + "\n"

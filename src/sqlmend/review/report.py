"""Reports of a correction run (or of an evaluation): Markdown for the terminal, self-contained HTML with plots.

The HTML file has its CSS and its plots (inline SVG, :mod:`sqlmend.review.svg`)
inside it: it opens without network. Sections: EX before/after by difficulty;
fixed / regressed by the stage that changed the SQL and by rule; findings by
error type; latency and model calls/tokens per query.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from sqlmend.review import svg


def _by_difficulty(before: Any, after: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    b = before.summary().by_difficulty
    a = after.summary().by_difficulty if after is not None else {}
    for level, d in b.items():
        n = d["n"]
        out[level] = {"n": n, "before": 100.0 * d["correct"] / n if n else 0.0,
                      "after": 100.0 * a[level]["correct"] / a[level]["n"] if level in a and a[level]["n"] else None}
    return out


def _overall(before: Any, after: Any) -> dict[str, Any]:
    sb = before.summary()
    out = {"n": sb.n, "before_ex": sb.ex, "verdicts_before": sb.verdicts}
    if after is not None:
        sa = after.summary()
        out.update(after_ex=sa.ex, verdicts_after=sa.verdicts)
    return out


def eval_report(before: Any, after: Any = None, title: str | None = None, paired: Any = None) -> dict[str, Any]:
    """Report data of an evaluation (``sqlmend eval``), optionally paired with a second file.

    Args:
        before: the :class:`~sqlmend.evaluation.EvalReport` of the prediction file.
        after: the report of the ``--against`` file, or None.
        title: the heading.
        paired: with ``after``, the :class:`~sqlmend.evaluation.PairedReport` of the two
            (``sqlmend.evaluation.compare(before, after)``, made by the caller).

    Returns:
        The report data (see :func:`html`).
    """
    data: dict[str, Any] = {"title": title or f"{before.predictions} on {before.dataset}",
                            "kind": "eval", "overall": _overall(before, after),
                            "difficulty": _by_difficulty(before, after),
                            "latency": [r.seconds for r in before.results if r.scored],
                            "latency_label": "execution time of each prediction, in ms"}
    if paired is not None:
        p = paired
        data["paired"] = {"fixed": len(p.all.fixed), "regressed": len(p.all.regressed),
                          "changed": len(p.all.changed), "delta_ex": p.all.delta_ex,
                          "fixed_ids": p.all.fixed, "regressed_ids": p.all.regressed}
    return data


def run_report(run: Any, before: Any = None, after: Any = None) -> dict[str, Any]:
    """Report data of a correction run (``sqlmend report RUN_DIR``).

    Args:
        run: the :class:`~sqlmend.review.run.Run` (evaluated when ``before``/``after`` are given).
        before: the original SQL's evaluation, or None (no gold).
        after: the corrected SQL's evaluation, or None.

    Returns:
        The report data (see :func:`html`).
    """
    items = run.items
    data: dict[str, Any] = {"title": f"correction run {run.folder.name}", "kind": "run",
                            "info": run.info, "stages": run.stages, "n_items": len(items),
                            "changed": sum(it.changed for it in items),
                            "flagged": sum(it.flagged for it in items),
                            "item_errors": sum(bool(it.correction.error) for it in items)}
    if before is not None:
        data.update(overall=_overall(before, after), difficulty=_by_difficulty(before, after))
        by_stage: dict[str, Counter] = defaultdict(Counter)
        by_rule: dict[str, Counter] = defaultdict(Counter)
        for it in items:
            if it.verdict in ("fixed", "regressed"):
                by_stage[it.stage or "unchanged"][it.verdict] += 1
                for r in it.rules or ["(no finding)"]:
                    by_rule[r][it.verdict] += 1
            if it.changed:
                by_stage[it.stage or "?"]["changed"] += 1
        data["by_stage"] = {k: dict(v) for k, v in sorted(by_stage.items())}
        data["by_rule"] = {k: dict(v) for k, v in sorted(by_rule.items())}
        fixed = [it.qid for it in items if it.verdict == "fixed"]
        regressed = [it.qid for it in items if it.verdict == "regressed"]
        n = data["overall"]["n"]
        data["paired"] = {"fixed": len(fixed), "regressed": len(regressed), "changed": data["changed"],
                          "delta_ex": 100.0 * (len(fixed) - len(regressed)) / n if n else 0.0,
                          "fixed_ids": fixed, "regressed_ids": regressed}
    types: dict[str, Counter] = defaultdict(Counter)
    for it in items:
        side = ("original wrong" if it.before not in (None, "correct") else "original correct") \
            if it.before is not None else "findings"
        for f in it.correction.findings:
            types[f.error_type][side] += 1
    data["findings"] = {k: dict(v) for k, v in sorted(types.items(), key=lambda kv: -sum(kv[1].values()))}
    stages: dict[str, dict[str, float]] = defaultdict(lambda: {"seconds": 0.0, "calls": 0, "tokens_in": 0,
                                                               "tokens_out": 0, "ran": 0})
    for it in items:
        for s in it.correction.stages:
            st = stages[s.stage]
            st["seconds"] += s.seconds
            st["calls"] += s.calls
            st["tokens_in"] += s.tokens_in
            st["tokens_out"] += s.tokens_out
            st["ran"] += s.status == "ran"
    q = max(len(items), 1)
    data["per_stage"] = {k: {"seconds": v["seconds"] / q, "calls": v["calls"] / q, "tokens_in": v["tokens_in"] / q,
                             "tokens_out": v["tokens_out"] / q, "ran": int(v["ran"])} for k, v in stages.items()}
    data["latency"] = [sum(s.seconds for s in it.correction.stages) for it in items]
    data["latency_label"] = "correction time per query (all stages), in ms"
    data["per_query"] = {"seconds": sum(data["latency"]) / q,
                         "calls": sum(v["calls"] for v in stages.values()) / q,
                         "tokens": sum(v["tokens_in"] + v["tokens_out"] for v in stages.values()) / q}
    return data


def _md_table(head: list[str], rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)] + \
        ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def run_markdown(data: dict[str, Any]) -> str:
    """The report as Markdown (the terminal output of ``sqlmend report``)."""
    lines = [f"### {data['title']}", ""]
    if data.get("kind") == "run":
        lines += [f"{data['n_items']} items, {data['changed']} changed, {data['flagged']} flagged, "
                  f"{data['item_errors']} item errors.", ""]
    if "overall" in data:
        o = data["overall"]
        lines += [f"EX {o['before_ex']:.2f}" + (f" → {o['after_ex']:.2f}" if "after_ex" in o else "")
                  + f" on {o['n']} scored questions.", ""]
        lines += _md_table(["difficulty", "n", "EX before", "EX after"],
                           [[k, v["n"], f"{v['before']:.2f}", "—" if v["after"] is None else f"{v['after']:.2f}"]
                            for k, v in data["difficulty"].items()]) + [""]
    if "paired" in data:
        p = data["paired"]
        lines += [f"fixed {p['fixed']}, regressed {p['regressed']}, changed {p['changed']}, "
                  f"ΔEX {p['delta_ex']:+.2f} pp", ""]
    if data.get("by_stage"):
        lines += _md_table(["stage", "changed", "fixed", "regressed"],
                           [[k, v.get("changed", 0), v.get("fixed", 0), v.get("regressed", 0)]
                            for k, v in data["by_stage"].items()]) + [""]
    if data.get("by_rule"):
        lines += _md_table(["rule", "fixed", "regressed"],
                           [[k, v.get("fixed", 0), v.get("regressed", 0)] for k, v in data["by_rule"].items()]) + [""]
    if data.get("findings"):
        lines += _md_table(["error type", "findings"],
                           [[k, ", ".join(f"{s}: {n}" for s, n in v.items())] for k, v in data["findings"].items()])
        lines.append("")
    if data.get("per_stage"):
        lines += _md_table(["stage", "ran", "s/query", "calls/query", "tokens in/query", "tokens out/query"],
                           [[k, v["ran"], f"{v['seconds']:.4f}", f"{v['calls']:.2f}", f"{v['tokens_in']:.0f}",
                             f"{v['tokens_out']:.0f}"] for k, v in data["per_stage"].items()]) + [""]
    return "\n".join(lines) + "\n"


def _env() -> Environment:
    return Environment(loader=PackageLoader("sqlmend.review", "templates"), autoescape=select_autoescape(["html"]))


def charts(data: dict[str, Any]) -> dict[str, Any]:
    """The report's plots as inline SVG, by section."""
    out: dict[str, Any] = {}
    if data.get("difficulty"):
        levels = list(data["difficulty"])
        series = {"before": [data["difficulty"][k]["before"] for k in levels]}
        if any(data["difficulty"][k]["after"] is not None for k in levels):
            series["after"] = [data["difficulty"][k]["after"] or 0.0 for k in levels]
        out["difficulty"] = svg.bars([f"{k} ({data['difficulty'][k]['n']})" for k in levels], series, "EX %",
                                     max_value=100.0)
    for key in ("by_stage", "by_rule"):
        rows = data.get(key) or {}
        rows = {k: v for k, v in rows.items() if v.get("fixed") or v.get("regressed")}
        if rows:
            out[key] = svg.hbars(list(rows), {"fixed": [float(v.get("fixed", 0)) for v in rows.values()],
                                              "regressed": [float(v.get("regressed", 0)) for v in rows.values()]})
    if data.get("findings"):
        sides = sorted({s for v in data["findings"].values() for s in v})
        out["findings"] = svg.hbars(list(data["findings"]),
                                    {s: [float(v.get(s, 0)) for v in data["findings"].values()] for s in sides})
    if data.get("latency"):
        out["latency"] = svg.histogram([1000.0 * v for v in data["latency"]], "ms", log=True)
    if data.get("per_stage"):
        names = list(data["per_stage"])
        out["stage_seconds"] = svg.bars(names, {"ms/query": [1000.0 * data["per_stage"][k]["seconds"] for k in names]},
                                        "ms per query")
        out["stage_calls"] = svg.bars(names, {"calls/query": [data["per_stage"][k]["calls"] for k in names],
                                              "tokens/query ÷ 100": [(data["per_stage"][k]["tokens_in"] +
                                                                      data["per_stage"][k]["tokens_out"]) / 100
                                                                     for k in names]},
                                      "model calls and tokens per query")
    return out


def write_page(path: str | os.PathLike, template: str, **values: Any) -> Path:
    """Render one of the report templates (``review/templates/``) with ``values`` and a
    ``generated`` time stamp into a file (parent folders created).

    Args:
        path: the output file.
        template: the template's file name.
        **values: what the template reads.

    Returns:
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    path.write_text(_env().get_template(template).render(generated=generated, **values), encoding="utf-8")
    return path


def html(data: dict[str, Any]) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG, no script, no network).

    Args:
        data: from :func:`run_report` or :func:`eval_report`.

    Returns:
        The HTML text.
    """
    return _env().get_template("report.html").render(
        d=data, charts=charts(data), generated=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def write_html(path: str | os.PathLike, data: dict[str, Any]) -> Path:
    """Write :func:`html` to a file (parent folders created).

    Args:
        path: the output file.
        data: the report data.

    Returns:
        The path written.
    """
    return write_page(path, "report.html", d=data, charts=charts(data))

"""``sqlmend bench search-cost``: what a unit of search work costs in seconds on this machine.

The repair search counts its budget in work (:data:`sqlmend.search.engine.COST`): candidates
generated, candidates executed, the engine's work units (thousands of SQLite VM instructions) and
candidates ranked. This benchmark runs the search without a bound (``budget`` and ``max_seconds``
far out of reach) from the golds of a seeded sample of training questions, as the search stage
runs it (the static findings first, the shipped verifier ranking which candidates get a second
edit), and fits seconds ≈ Σ count × cost by non-negative least squares. The fit is what
:data:`~sqlmend.search.engine.COST` holds; on another machine it says how far the budget's
seconds are from the clock's.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from sqlmend.data.sampling import seeded_sample

#: The counts a cost is fitted for, in :data:`sqlmend.search.engine.COST`'s order.
UNITS = ("generated", "executed", "work", "ranked")


def measure(ds: Any, questions: int = 400, seed: int = 0,
            progress: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """One row per searched gold: its counts (:data:`UNITS`) and the seconds the search took."""
    from sqlmend import rules
    from sqlmend.search.engine import SearchSettings, execute_original, search
    from sqlmend.search.generators import SearchInput
    from sqlmend.search.verifier import FeatureVerifier

    verifier = FeatureVerifier()
    unbounded = SearchSettings(budget=1e9, max_seconds=1e9)
    rows = []
    with ds.databases() as conn:
        for task in seeded_sample([t for t in ds.tasks if t.gold], questions, seed):
            if progress:
                progress()
            db = conn(task.db_id)
            if db is None:
                continue
            original = execute_original(db, task.gold, 5.0, unbounded.max_rows)
            if original.tree is None or original.result is None:
                continue  # a gold that does not run is not searched
            findings = rules.check(db, task.gold, task.question)
            query = verifier.for_query(SearchInput(task.question, db.schema(), db.value_index()), original, findings)
            ranked: list[int] = []

            def rank(orig: Any, cands: list) -> list[float]:
                ranked.append(len(cands))
                return query.scores(cands)

            start = time.perf_counter()
            found = search(db, query.original, query.inp, findings, unbounded, rank=rank)
            rows.append({"question_id": task.question_id, "generated": found.generated,
                         "executed": found.executed, "work": found.work, "ranked": sum(ranked),
                         "seconds": time.perf_counter() - start})
    return rows


def fit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The non-negative least-squares cost of each unit, R², and how the estimate compares with the clock."""
    import numpy as np
    from scipy.optimize import nnls

    from sqlmend.errors import SqlmendError

    if len(rows) < len(UNITS):
        raise SqlmendError(f"{len(rows)} searches are too few to fit {len(UNITS)} costs")
    X = np.asarray([[r[u] for u in UNITS] for r in rows], dtype=float)
    y = np.asarray([r["seconds"] for r in rows], dtype=float)
    coef, _ = nnls(X, y)
    estimate = X @ coef
    r2 = 1 - float(((y - estimate) ** 2).sum()) / max(float(((y - y.mean()) ** 2).sum()), 1e-12)
    ratio = y / np.maximum(estimate, 1e-9)
    return {"n": len(rows), "cost": {u: round(float(c), 6) for u, c in zip(UNITS, coef)}, "r2": round(r2, 3),
            "clock_over_estimate": dict(zip(("p5", "p50", "p95"), np.quantile(ratio, [0.05, 0.5, 0.95]).round(2).tolist())),
            "seconds": dict(zip(("p50", "p95"), np.quantile(y, [0.5, 0.95]).round(3).tolist())),
            "estimate": dict(zip(("p50", "p95"), np.quantile(estimate, [0.5, 0.95]).round(3).tolist()))}


def markdown(report: dict[str, Any], shipped: dict[str, float]) -> str:
    """The fitted costs beside the shipped ones, and the fit's quality."""
    lines = ["| unit | fitted seconds | shipped (search.engine.COST) |", "| --- | ---: | ---: |"]
    lines += [f"| {u} | {report['cost'][u]:.6f} | {shipped.get(u, 0.0):.6f} |" for u in UNITS]
    c, s, e = report["clock_over_estimate"], report["seconds"], report["estimate"]
    lines += ["", f"{report['n']} searches; R² {report['r2']}; clock / estimate p5 {c['p5']}, p50 {c['p50']}, "
                  f"p95 {c['p95']}; seconds p50 {s['p50']}, p95 {s['p95']}; estimate p50 {e['p50']}, p95 {e['p95']}"]
    return "\n".join(lines)


__all__ = ["UNITS", "fit", "markdown", "measure"]

"""A train-side check of the static stage's value fixes (Spider train only; refuses nothing else).

Breaks Spider-train golds the way the value rules claim to repair, runs the static stage alone on
each broken query, and counts how often its accepted rewrite returns the gold's rows, returns other
rows, or is not made:

* ``column``: the text literal of a gold's first ``col = 'literal'`` is moved to another text
  column of the same table (VL07's case);
* ``case``: that literal's letter case is changed (VL01's case).

Only broken queries whose result differs from the gold's count. Usage::

    python scripts/static_on_train.py [--questions 2500] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import random

from sqlmend.bench import load_dataset
from sqlmend.rules.analysis import QueryAnalysis
from sqlmend.rules.stage import StaticStage
from sqlmend.search.engine import result_key
from sqlmend.sql import ast
from sqlmend.stage import RunSettings, StageContext
from sqlmend.types import Task


def _breaks(an, schema, rng):
    cmps = [x for x in an.comparisons() if x.op == "eq" and x.column.status == "ok"
            and isinstance(an.as_literal(x.literals[0]), str)]
    if not cmps:
        return
    cmp = cmps[0]
    text = [c.name for c in schema.table(cmp.column.table).columns
            if c.name.lower() != cmp.column.column.lower()
            and (not c.type or "char" in c.type.lower() or "text" in c.type.lower())]
    if text:
        tree = an.tree.copy()
        col = next((n for n in tree.find_all(ast.Column) if n.sql() == cmp.column.node.sql()), None)
        if col is not None:
            col.replace(ast.column(rng.choice(text), table=col.table or None))
            yield "column", tree.sql(dialect="sqlite")
    value = an.as_literal(cmp.literals[0])
    other = value.lower() if value != value.lower() else value.title()
    if other != value:
        tree = an.tree.copy()
        lit = next((n for n in tree.find_all(ast.Literal, ast.Column) if n.sql() == cmp.literals[0].sql()), None)
        if lit is not None:
            lit.replace(ast.Literal.string(other))
            yield "case", tree.sql(dialect="sqlite")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    ds = load_dataset("spider-train")
    static = StaticStage(run=RunSettings(timeout=10))
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    tasks = list(ds.tasks)
    rng.shuffle(tasks)
    with ds.databases() as conn:
        for task in tasks[:args.questions]:
            db = conn(task.db_id)
            if db is None:
                continue
            an = QueryAnalysis(task.gold, db.schema())
            if an.tree is None:
                continue
            for kind, broken in _breaks(an, db.schema(), rng):
                try:
                    gold = result_key(db.execute(task.gold, timeout=10, max_rows=2000))
                    if result_key(db.execute(broken, timeout=10, max_rows=2000)) == gold:
                        continue
                except Exception:
                    continue
                c = counts[kind]
                c["broken"] += 1
                t = Task(**{**task.to_dict(), "sql": broken})
                trace = static.run(StageContext(task=t, db=db, sql=broken, run=static.run_settings))
                if trace.verdict is None or not trace.verdict.accepted:
                    c["kept"] += 1
                    continue
                same = result_key(db.execute(trace.verdict.sql, timeout=10, max_rows=2000)) == gold
                c["gold's rows" if same else "other rows"] += 1
                for f in trace.findings:
                    if f.severity == "strict" and f.fixes:
                        c[f"{'gold' if same else 'other'} via {f.code}"] += 1
    for kind, c in counts.items():
        print(f"{kind}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))


if __name__ == "__main__":
    main()

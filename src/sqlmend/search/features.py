"""Features of one query (the original or a candidate) for the verifier: P(correct | question, SQL, result).

Four groups, all computable without a model:

* **question cues × SQL constructs** — does the question ask for a count, an
  average, a superlative, distinct values, a grouping, a negation, a top-N, and
  does the SQL have it;
* **question–schema linking coverage** — how many of the SQL's columns the
  question names (``structure.linking``), how many named columns of the tables
  in scope the SQL leaves out, whether its literals appear in the question and
  are stored in the compared column (value index);
* **result shape** — empty, row count, column count, one row, NULL/zero answers,
  duplicate rows;
* **the edit** — none for the original; else which generators made it, how many
  edits, and how the result shape and coverage changed from the original's.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from sqlmend import sql as sqlmod
from sqlmend.sql import ast
from sqlmend.search.generators import SearchInput, all_generators
from sqlmend.types import ExecResult, split_ref

_CUES: dict[str, str] = {
    "count": r"\bhow many\b|\bnumber of\b|\bcount\b",
    "avg": r"\baverage\b|\bmean\b|\bavg\b",
    "sum": r"\btotal\b|\bsum\b|\baltogether\b",
    "max": r"\bmax(imum)?\b|\bhighest\b|\blargest\b|\bmost\b|\boldest\b|\blatest\b|\bbiggest\b|\blongest\b|\bbest\b",
    "min": r"\bmin(imum)?\b|\blowest\b|\bsmallest\b|\bleast\b|\bfewest\b|\byoungest\b|\bearliest\b|\bshortest\b",
    "distinct": r"\bdistinct\b|\bdifferent\b|\bunique\b",
    "each": r"\beach\b|\bevery\b|\bper\b|\bfor all\b",
    "order": r"\border(ed)?\b|\bsort(ed)?\b|\balphabetical",
    "desc": r"\bdescending\b|\bdecreasing\b|\bfrom (the )?(highest|largest|most)",
    "asc": r"\bascending\b|\bincreasing\b|\balphabetical",
    "not": r"\bnot\b|\bwithout\b|\bnever\b|\bno\b|\bexcept\b|\bexcluding\b|n't\b",
    "both": r"\bboth\b",
    "or": r"\bor\b|\beither\b",
    "gt": r"\bmore than\b|\bgreater\b|\bover\b|\babove\b|\blarger than\b|\bhigher than\b|\bexceed|\bafter\b|\bolder than\b",
    "lt": r"\bless than\b|\bfewer\b|\bbelow\b|\bunder\b|\blower than\b|\bsmaller than\b|\bbefore\b|\byounger than\b",
    "at_least": r"\bat least\b|\bor more\b|\bno less than\b",
    "at_most": r"\bat most\b|\bor less\b|\bor fewer\b|\bno more than\b",
    "top": r"\btop\b|\bfirst\b|\b\d+ (most|least|highest|lowest)\b",
    "which": r"^(which|what|who)\b",
    "list": r"^(list|show|give|find|return|tell)\b",
    "and_list": r",| and ",
}

_GENERATORS = [g.name for g in all_generators()]

#: Names of the feature vector, in order (the verifier's weights refer to these).
FEATURE_NAMES: list[str] = (
    [f"q_{c}" for c in _CUES]
    + ["s_count", "s_count_star", "s_count_distinct", "s_avg", "s_sum", "s_max", "s_min", "s_distinct",
       "s_group", "s_having", "s_order", "s_order_desc", "s_limit", "s_limit1", "s_except", "s_not_in",
       "s_intersect", "s_union", "s_gt", "s_lt", "s_gte", "s_lte", "s_like", "s_or", "s_n_select",
       "s_n_tables", "s_n_conditions", "s_n_subqueries", "s_agg_in_select", "s_plain_with_agg_no_group"]
    + ["m_count", "m_avg", "m_sum", "m_max", "m_min", "m_distinct", "m_each", "m_order", "m_desc", "m_asc",
       "m_not", "m_both", "m_gt", "m_lt", "m_top"]
    + ["l_select_linked", "l_select_frac", "l_cols_frac", "l_where_frac", "l_unused_linked",
       "l_tables_linked_frac", "l_lit_in_question", "l_lit_stored", "l_qlit_used", "l_num_in_question",
       "l_qnum_used", "l_n_literals", "l_unused_tables"]
    + ["r_error", "r_empty", "r_rows_log", "r_cols", "r_one_row", "r_null_answer", "r_zero_answer",
       "r_dupes", "r_truncated"]
    + ["e_original", "e_n_edits", "e_guided", "o_findings", "o_strict"] + [f"e_gen_{g}" for g in _GENERATORS]
    + ["d_rows_log", "d_cols", "d_from_error", "d_from_empty", "d_to_empty", "d_select_frac",
       "d_cols_frac", "d_unused_linked", "d_lit_stored", "d_cue_match", "d_unused_tables"]
)

_INDEX = {n: i for i, n in enumerate(FEATURE_NAMES)}


def question_cues(question: str) -> dict[str, float]:
    """``{cue: 0/1}`` of the question (see ``_CUES``)."""
    q = question.lower()
    return {c: float(bool(re.search(p, q))) for c, p in _CUES.items()}


def _sql_props(f: Any) -> dict[str, float]:
    aggs = [a for a in f.aggregates]
    ops = [lit.op for lit in f.literals if lit.op]
    out = {
        "s_count": any(a.func == "count" for a in aggs), "s_count_star": any(a.func == "count" and a.column is None
                                                                             for a in aggs),
        "s_count_distinct": any(a.func == "count" and a.distinct for a in aggs),
        "s_avg": any(a.func == "avg" for a in aggs), "s_sum": any(a.func == "sum" for a in aggs),
        "s_max": any(a.func == "max" for a in aggs), "s_min": any(a.func == "min" for a in aggs),
        "s_distinct": f.distinct, "s_group": bool(f.group_by),
        "s_having": bool(f.selects and f.selects[0].having is not None),
        "s_order": bool(f.order_by), "s_order_desc": any(d for _, d in f.order_by),
        "s_limit": f.limit is not None, "s_limit1": f.limit == 1,
        "s_except": "except" in f.set_operations,
        "s_not_in": any(isinstance(n.this, ast.In) for n in f.selects[0].node.find_all(ast.Not))
        if f.selects else False,
        "s_intersect": "intersect" in f.set_operations, "s_union": any(s.startswith("union")
                                                                      for s in f.set_operations),
        "s_gt": ">" in ops, "s_lt": "<" in ops, "s_gte": ">=" in ops, "s_lte": "<=" in ops,
        "s_like": "like" in ops,
        "s_or": bool(f.selects) and f.selects[0].node.find(ast.Or) is not None,
        "s_n_select": len(f.selects[0].node.expressions) if f.selects else 0,
        "s_n_tables": len(f.tables), "s_n_conditions": len(ops),
        "s_n_subqueries": len(f.subqueries),
        "s_agg_in_select": any(a.clause == "select" and a.scope == 0 for a in aggs),
    }
    out["s_plain_with_agg_no_group"] = bool(out["s_agg_in_select"] and not out["s_group"] and
                                            out["s_n_select"] > sum(a.clause == "select" and a.scope == 0
                                                                    for a in aggs))
    return {k: float(v) for k, v in out.items()}


def _matches(q: dict[str, float], s: dict[str, float]) -> dict[str, float]:
    """+1 when cue and construct agree (both present), -1 when exactly one is, 0 when neither."""
    def agree(cue: float, has: float) -> float:
        if cue and has:
            return 1.0
        return -1.0 if cue or has else 0.0

    return {
        "m_count": agree(q["count"], s["s_count"]), "m_avg": agree(q["avg"], s["s_avg"]),
        "m_sum": agree(q["sum"], s["s_sum"]),
        "m_max": agree(q["max"], s["s_max"] or (s["s_order_desc"] and s["s_limit"])),
        "m_min": agree(q["min"], s["s_min"] or (s["s_order"] and not s["s_order_desc"] and s["s_limit"])),
        "m_distinct": agree(q["distinct"], s["s_distinct"] or s["s_count_distinct"]),
        "m_each": agree(q["each"], s["s_group"]), "m_order": agree(q["order"], s["s_order"]),
        "m_desc": agree(q["desc"], s["s_order_desc"]), "m_asc": agree(q["asc"], s["s_order"] and not s["s_order_desc"]),
        "m_not": agree(q["not"], s["s_except"] or s["s_not_in"]),
        "m_both": agree(q["both"], s["s_intersect"]), "m_gt": agree(q["gt"] or q["at_least"], s["s_gt"] or s["s_gte"]),
        "m_lt": agree(q["lt"] or q["at_most"], s["s_lt"] or s["s_lte"]), "m_top": agree(q["top"], s["s_limit"]),
    }


def _linking(f: Any, inp: SearchInput, question_low: str) -> dict[str, float]:
    links = inp.link_scores
    cols = {c.qualified for refs in f.columns.values() for c in refs if c.table}
    sel = {c.qualified for c in f.columns.get("select", []) if c.table and c.scope == 0}
    where = {c.qualified for c in f.columns.get("where", []) if c.table}
    tables = {t.name.lower() for t in f.tables}
    linked_tables = inp.linked_tables
    linked_cols = {k for k in links if k not in linked_tables}
    unused = {k for k in linked_cols if split_ref(k)[0] in tables and k not in cols}
    unused_tables = {k for k in linked_tables if k not in tables}
    lits = [lit for lit in f.literals if isinstance(lit.value, str)]
    nums = [lit for lit in f.literals if isinstance(lit.value, (int, float)) and not isinstance(lit.value, bool)
            and lit.clause != "limit"]
    vi = inp.value_index
    stored = 0
    for lit in lits:
        col = lit.column
        if vi is not None and col is not None and col.table:
            try:
                stored += vi.contains(col.table, col.column, lit.value.strip("%"))
            except Exception:
                pass
    qlits = [p for p in inp.literals if not re.fullmatch(r"[\d.]+", p)]
    qnums = [p for p in inp.literals if re.fullmatch(r"[\d.]+", p)]
    sql_vals = {str(lit.value).strip("%").lower() for lit in f.literals}
    frac = lambda a, b: a / b if b else 1.0  # noqa: E731
    return {
        "l_select_linked": float(len(sel & links.keys())),
        "l_select_frac": frac(len(sel & links.keys()), len(sel)),
        "l_cols_frac": frac(len(cols & links.keys()), len(cols)),
        "l_where_frac": frac(len(where & links.keys()), len(where)),
        "l_unused_linked": float(len(unused)),
        "l_tables_linked_frac": frac(len(tables & links.keys()), len(tables)),
        "l_lit_in_question": frac(sum(str(lit.value).strip("%").lower() in question_low for lit in lits), len(lits)),
        "l_lit_stored": frac(stored, len(lits)),
        "l_qlit_used": frac(sum(p.lower() in sql_vals for p in qlits), len(qlits)),
        "l_num_in_question": frac(sum(_num_text(lit.value) in question_low for lit in nums), len(nums)),
        "l_qnum_used": frac(sum(p in {_num_text(lit.value) for lit in nums} for p in qnums), len(qnums)),
        "l_n_literals": float(len(lits) + len(nums)),
        "l_unused_tables": float(len(unused_tables)),
    }


def _num_text(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _result(result: ExecResult | None, error: str | None) -> dict[str, float]:
    if result is None:
        return {"r_error": 1.0, "r_empty": 0.0, "r_rows_log": 0.0, "r_cols": 0.0, "r_one_row": 0.0,
                "r_null_answer": 0.0, "r_zero_answer": 0.0, "r_dupes": 0.0, "r_truncated": 0.0}
    rows = result.rows
    one = len(rows) == 1
    first = rows[0] if rows else ()
    try:
        dupes = len(set(rows)) < len(rows)
    except TypeError:
        dupes = False
    return {"r_error": 0.0, "r_empty": float(not rows), "r_rows_log": math.log1p(len(rows)),
            "r_cols": float(len(result.columns)), "r_one_row": float(one),
            "r_null_answer": float(one and all(v is None for v in first)),
            "r_zero_answer": float(one and len(first) == 1 and first[0] == 0),
            "r_dupes": float(dupes), "r_truncated": float(result.truncated)}


class Featurizer:
    """Feature vectors of the original and candidates of one query (question features computed once)."""

    def __init__(self, inp: SearchInput, dialect: str = "sqlite", findings: list[Any] = ()):
        self.inp = inp
        self.dialect = dialect
        self.located = {f.error_type for f in findings}
        self.n_findings = float(len(findings))
        self.n_strict = float(sum(getattr(f, "severity", "") == "strict" for f in findings))
        self.types = {g.name: set(g.error_types) for g in all_generators()}
        text = f"{inp.question} {inp.evidence}".strip()
        self.cues = question_cues(text)
        self.question_low = text.lower()

    def raw(self, tree: Any, result: ExecResult | None, error: str | None) -> dict[str, float]:
        """The edit-independent features of one query."""
        out: dict[str, float] = {f"q_{c}": v for c, v in self.cues.items()}
        if tree is not None:
            try:
                f = sqlmod.features(tree, schema=self.inp.schema)
            except Exception:  # a tree features cannot read: cue and result features only
                f = None
            if f is not None:
                props = _sql_props(f)
                out.update(props)
                out.update(_matches(self.cues, props))
                out.update(_linking(f, self.inp, self.question_low))
        out.update(_result(result, error))
        return out

    def vector(self, tree: Any, result: ExecResult | None, error: str | None, generators: list[str],
               original: dict[str, float] | None) -> tuple[list[float], dict[str, float]]:
        """``(vector in FEATURE_NAMES order, raw features)``; ``original``: the original's raw features."""
        raw = self.raw(tree, result, error)
        full = dict(raw)
        full["e_original"] = float(original is None)
        full["e_n_edits"] = float(len(generators))
        full["e_guided"] = float(any(self.located & self.types.get(g, set()) for g in generators))
        full["o_findings"] = self.n_findings
        full["o_strict"] = self.n_strict
        for g in generators:
            full[f"e_gen_{g}"] = full.get(f"e_gen_{g}", 0.0) + 1.0
        if original is not None:
            get = lambda d, k: d.get(k, 0.0)  # noqa: E731
            full["d_rows_log"] = get(raw, "r_rows_log") - get(original, "r_rows_log")
            full["d_cols"] = get(raw, "r_cols") - get(original, "r_cols")
            full["d_from_error"] = get(original, "r_error")
            full["d_from_empty"] = get(original, "r_empty") * (1 - get(raw, "r_empty"))
            full["d_to_empty"] = get(raw, "r_empty") * (1 - get(original, "r_empty"))
            for k, src in (("d_select_frac", "l_select_frac"), ("d_cols_frac", "l_cols_frac"),
                           ("d_unused_linked", "l_unused_linked"), ("d_lit_stored", "l_lit_stored"),
                           ("d_unused_tables", "l_unused_tables")):
                full[k] = get(raw, src) - get(original, src)
            full["d_cue_match"] = sum(v for k, v in raw.items() if k.startswith("m_")) - \
                sum(v for k, v in original.items() if k.startswith("m_"))
        return [full.get(n, 0.0) for n in FEATURE_NAMES], raw

    def rows(self, original: Any, candidates: list[Any]) -> list[list[float]]:
        """The vectors of ``original`` then of each candidate (``search.Executed``), the edit features
        measured against the original."""
        vec, raw = self.vector(original.tree, original.result, original.error, [], None)
        return [vec] + self.edited(candidates, raw)

    def edited(self, candidates: list[Any], original: dict[str, float]) -> list[list[float]]:
        """The vectors of ``candidates``, the edit features measured against the original's raw features."""
        return [self.vector(c.tree, c.result, c.error, c.generators, original)[0] for c in candidates]


#: Features of the replace-or-keep decider: scores of the original, the best and the second-best
#: candidate, the candidate count, whether evidence flags the original, then the original's
#: features, the best candidate's and their difference.
DECIDER_NAMES: list[str] = (["s_original", "s_best", "s_gap", "s_second", "s_gap_second", "n_candidates_log",
                             "flagged"] + [f"o:{n}" for n in FEATURE_NAMES] + [f"b:{n}" for n in FEATURE_NAMES]
                            + [f"d:{n}" for n in FEATURE_NAMES])


def decider_row(scores: np.ndarray, x_orig: list[float], x_best: list[float], flagged: bool) -> np.ndarray:
    """The decider's features for one query (``scores``: the original's, then every candidate's;
    ``x_best``: the features of the best-scored candidate)."""
    s = np.asarray(scores, dtype=np.float64)
    order = np.sort(s[1:])[::-1]
    second = float(order[1]) if len(order) > 1 else 0.0
    xo, xb = np.asarray(x_orig, dtype=np.float64), np.asarray(x_best, dtype=np.float64)
    head = [s[0], order[0], order[0] - s[0], second, order[0] - second, np.log1p(len(order)), float(flagged)]
    return np.concatenate([head, xo, xb, xb - xo])

"""condition_add: add ``column = 'value'`` for a question literal the database stores in a table in scope,
or ``column <op> number`` for a number the question compares a numeric column it names with."""

from __future__ import annotations

import re

from sqlmend.search.generators.base import Generator, each_edit, qualifier
from sqlmend.sql import ast
from sqlmend.structure.canonical import scope_tables
from sqlmend.synth.nodes import selects, type_class

#: The comparison a question's words put before a number (up to two words between: "under age 30";
#: a currency sign right before it: "below $160"), or after it ("20 or more").
_WORDS = r"(\s+[a-z]+){0,2}\s*[$€£]?$"
_MORE = r"(more|greater|larger|higher|bigger|older|longer|heavier)"
_LESS = r"(less|fewer|smaller|lower|younger|shorter|lighter)"
_BEFORE = ((r"\b(at least|no less than|no fewer than)" + _WORDS, ast.GTE),
           (r"\b(at most|no more than)" + _WORDS, ast.LTE),
           (rf"\b({_MORE} (than )?or equal to)" + _WORDS, ast.GTE),
           (rf"\b({_LESS} (than )?or equal to)" + _WORDS, ast.LTE),
           (rf"\b({_MORE} than)" + _WORDS, ast.GT),
           (r"\b(over|above|exceed(s|ing)?|after)" + _WORDS, ast.GT),
           (rf"\b({_LESS} than)" + _WORDS, ast.LT),
           (r"\b(under|below|before)" + _WORDS, ast.LT))
_AFTER = ((r"^\s*(or more|or older|or higher|or greater|or above)\b", ast.GTE),
          (r"^\s*(or less|or fewer|or younger|or lower|or below)\b", ast.LTE))
#: A number of the question: digits with thousands separators ("15,000") or without, a decimal part.
_NUMBER = r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w|\.\d)"


def number_comparisons(question: str) -> list[tuple[str, type]]:
    """``[(number, comparison class)]`` for each number of the question (thousands separators dropped:
    "15,000" -> "15000"): the phrase nearest before it decides (the longer one when two end together:
    "no more than" over "more than"; "greater than or equal to" ends after "greater than"), "or more" /
    "or less" after it first (``ast.EQ`` when no word says)."""
    out = []
    for m in re.finditer(_NUMBER, question):
        before, after = question[max(0, m.start() - 40):m.start()].lower(), question[m.end():].lower()
        op = next((c for pat, c in _AFTER if re.search(pat, after)), None)
        if op is None:
            found = [((hit.end(1), -hit.start(1)), c) for pat, c in _BEFORE if (hit := re.search(pat, before))]
            op = max(found, key=lambda f: f[0])[1] if found else ast.EQ
        out.append((m.group().replace(",", ""), op))
    return out


def _locate(tree):
    sels = selects(tree)
    return sels[:1]


def _options_for(inp):
    def options(sel):
        vi = inp.value_index
        used = {str(n.this).lower() for n in sel.find_all(ast.Literal)} | {
            n.name.lower() for n in sel.find_all(ast.Column)}
        in_scope = {t.lower(): a for a, t in scope_tables(sel).items()}
        out = []
        for phrase in inp.literals if vi is not None else []:  # stored values need the value index
            if phrase.lower() in used or phrase.isdigit():
                continue
            for m in vi.search(phrase, mode="ci", limit=4):
                if m.table.lower() in in_scope:
                    out.append(((in_scope[m.table.lower()], m.table, m.column, m.value),
                                f"add condition {m.table}.{m.column} = {m.value!r}"))
        numeric = [(a, t, c) for a, t, c in inp.ranked_columns(scope_tables(sel), linked_only=True)
                   if (tab := inp.schema.table(t)) and type_class(tab.column(c).type) == "num"]
        for number, op in number_comparisons(f"{inp.question} {inp.evidence}"):
            if number in used:
                continue
            value = float(number) if "." in number else int(number)
            for alias, table, column in numeric:
                cond = op(this=ast.column(column, table=table), expression=ast.Literal.number(value))
                out.append(((alias, table, column, value, op), f"add condition {cond.sql()}"))
        return out[: inp.max_per_node]

    return options


def _apply(sel, option):
    alias, table, column, value, *op = option
    col = ast.column(column, table=qualifier(sel, alias, table))
    cond = op[0](this=col, expression=ast.Literal.number(value)) if op else \
        ast.EQ(this=col, expression=ast.Literal.string(value))
    sel.where(cond, copy=False)
    return True


def generate(tree, inp):
    """Filter on a value the question names and a table in scope stores, or compare a numeric column the
    question names with a number it gives (the operator from its words: "more than", "under", "at least")."""
    yield from each_edit(tree, _locate, _options_for(inp), _apply)


GENERATOR = Generator("condition_add", ("condition_missing",), generate, generate.__doc__)

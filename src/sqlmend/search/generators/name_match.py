"""name_match: a name the schema does not have, read as each schema name that matches it as closely.

Rules TB01 and AT01 rename a table or column the schema lacks when exactly one schema name matches it
best (:mod:`sqlmend.rules.names`). When several match as closely (``id`` for ``Singer_ID`` and
``Song_ID``, ``name`` for ``first_name`` and ``last_name``), or the best match proves nothing (a word
dropped that is not the table's name), each of them, best first by the name, the question's words and
where the compared literal is stored (:meth:`sqlmend.rules.names.NameRepair.ranked`), gives one
candidate: every occurrence renamed, the proven names renamed as well. A column that another table of
the schema has as written is left to the generators that join or requalify (``car_names.Maker`` where
``model_list`` has ``Maker``: renaming it to ``Make`` answers another question).
"""

from __future__ import annotations

from sqlmend.errors import SqlError
from sqlmend.rules import names
from sqlmend.sql import ast
from sqlmend.sql import names as sql_names
from sqlmend.search.generators.base import Generator
from sqlmend.sql.fixes import apply_tree


def generate(tree, inp):
    """Rename a table or column the schema does not have to each schema name that matches it as closely."""
    question = f"{inp.question} {inp.evidence}"
    plan = names.plan(tree, inp.schema, inp.value_index, inp.dialect, question=question)
    # a column the query already names is not what another name it writes stands for (Paragraph_Details
    # where the query reads Paragraph_Text)
    written = {c.name.lower() for c in tree.find_all(ast.Column) if c.name}
    if plan.by_schema and plan.schema_choices and not plan.schema_tied and not plan.tables[0].proven:
        best = plan.schema_choices[0]  # several schemas hold the names: the one the whole query ranks first
        chosen = names.plan(tree, inp.schema, inp.value_index, inp.dialect, choose=best.assignment)
        fixes = [*chosen.table_fixes, *chosen.column_fixes]
        try:
            edited = apply_tree(tree.copy(), fixes, inp.dialect) if fixes else None
        except SqlError:
            edited = None
        if edited is not None:
            yield edited, f"read {', '.join(r.written for r in plan.tables)} from schema {best.describe()}"
    for repair in [*([] if plan.by_schema else plan.tables), *plan.columns]:
        if repair.proven or repair.elsewhere:  # a column another table has as written: a join is missing
            continue
        ranked = repair.ranked(question)
        if ranked and (_shadowed(repair) or (not any(m.proof for m in repair.matches)
                                             and any(m.reason == "meaning" for m in repair.matches))):
            ranked = _by_evidence(repair, [m for m in ranked if m.name.lower() not in written], question)
        same = [r.key for r in plan.columns if r.written.lower() == repair.written.lower()] \
            if repair.kind == "column" else [repair.key]  # every place the name is written, read the same
        for match in ranked[: inp.max_per_node]:
            chosen = names.plan(tree, inp.schema, inp.value_index, inp.dialect,
                                choose={key: match for key in same}, question=question)
            fixes = [*chosen.table_fixes, *chosen.column_fixes]
            if not fixes:
                continue
            try:
                edited = apply_tree(tree.copy(), fixes, inp.dialect)
            except SqlError:
                continue
            yield edited, f"rename {repair.written} -> {match.name} ({match.reason})"


#: How much closer in meaning (hundredths of cosine) the first meaning match must be than the second for
#: the search to be offered it (a setting: see docs/benchmarks.md, "Names by meaning, and with a word added").
MEANING_GAP = 5


def _shadowed(repair) -> bool:
    """Whether the name written holds, among the words its first match does not account for, the whole name of
    another of its matches (``grade_name``: ``grade`` and ``name``): which one it means is not in the name
    (:func:`sqlmend.rules.names.shadowed`)."""
    wholes = {m.name.lower() for m in repair.matches if len(sql_names.words(m.name)) == 1}
    return len(repair.matches) > 1 and names.shadowed(repair, repair.matches[0], wholes)


def _by_evidence(repair, ranked, question):
    """A name that no match proves and that only meaning matches or whose matches it holds as words
    (``pupil`` for ``student``; ``grade_name`` for ``grade`` or ``name``): the search is offered one match,
    and only when the data or the question speaks for it: the one that stores the compared literal; of the
    matches it holds as words, the one whose words the question says (alone); by meaning, the first when
    the question holds a word of its name that the name written lacks and it is clearly the closest
    (:data:`MEANING_GAP`); never a column the query names elsewhere (the caller leaves those out). Else
    none, and the query is kept."""
    if not ranked:
        return []
    stored = {s.lower() for s in repair.stored}
    kept = [m for m in ranked if f"{m.owner}.{m.name}".lower() in stored]
    if len(kept) == 1:
        return kept
    q = {sql_names.singular(w) for w in sql_names.words(question)}
    if _shadowed(repair):
        said = [m for m in ranked if all(sql_names.singular(w) in q for w in sql_names.words(m.name))]
        return said if len(said) == 1 else []
    top = ranked[0]
    own = {sql_names.singular(w) for w in sql_names.words(repair.written.rpartition(".")[2])}
    said = any(w in q and w not in own for w in (sql_names.singular(x) for x in sql_names.words(top.name)))
    meaning = [m for m in ranked if m.reason == "meaning"]
    ahead = len(meaning) < 2 or meaning[1].distance - meaning[0].distance >= MEANING_GAP
    return [top] if said and ahead and top.reason == "meaning" else []


GENERATOR = Generator("name_match", ("table_mismatch", "attribute_mismatch"), generate, generate.__doc__)

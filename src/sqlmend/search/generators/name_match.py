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
from sqlmend.search.generators.base import Generator
from sqlmend.sql.fixes import apply_tree


def generate(tree, inp):
    """Rename a table or column the schema does not have to each schema name that matches it as closely."""
    question = f"{inp.question} {inp.evidence}"
    plan = names.plan(tree, inp.schema, inp.value_index, inp.dialect, question=question)
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
        for match in repair.ranked(f"{inp.question} {inp.evidence}")[: inp.max_per_node]:
            chosen = names.plan(tree, inp.schema, inp.value_index, inp.dialect, choose={repair.key: match},
                                question=question)
            fixes = [*chosen.table_fixes, *chosen.column_fixes]
            if not fixes:
                continue
            try:
                edited = apply_tree(tree.copy(), fixes, inp.dialect)
            except SqlError:
                continue
            yield edited, f"rename {repair.written} -> {match.name} ({match.reason})"


GENERATOR = Generator("name_match", ("table_mismatch", "attribute_mismatch"), generate, generate.__doc__)

"""A gold with table or column names written the way users, agents and smaller models write them.

Each kind (:data:`KINDS`) rewrites one name of the schema the way a person who has not read the schema
would: ``customers`` for ``customer``, ``studentId`` for ``student_id``, ``pet_type`` for ``PetType``,
``ID`` for ``Singer_ID``, ``owner`` for ``owner_id``, ``order`` for ``Orders``, ``Contry`` for
``Country``. :func:`variants` renames every occurrence of one or two names of a gold (the same kind for
each), aliases kept; a variant is kept only when the new name is no name of the schema. Whether the
query then fails is for the engine to say (``sqlmend bench names`` keeps those that do).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from sqlmend import sql as sqlmod
from sqlmend.errors import SqlError
from sqlmend.sql import ast
from sqlmend.sql.names import RESERVED, singular, words

#: The kinds of wrong name, in the report's order.
KINDS = ("plural", "camelCase", "underscores", "prefix", "id", "keyword", "edit", "meaning", "added")
#: The kinds written by spelling (the others, ``meaning`` and ``added``, by meaning or guessing).
SPELLING_KINDS = KINDS[:7]

#: Words models add to a column name they guess (``grade`` -> ``grade_name``, ``Name`` -> ``Name_Code``),
#: after it or before it.
ADDED_AFTER = ("name", "code", "type", "value", "title", "number", "text")
ADDED_BEFORE = ("primary", "full", "main", "total")

_LAST_WORD = re.compile(r"([A-Za-z][a-z]*|[A-Z]+)(?=[^A-Za-z]*$)")


def _plural(word: str) -> str:
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh", "z")):
        return word + "es"
    return word + "s"


def _cased(new: str, like: str) -> str:
    return new.upper() if like.isupper() and len(like) > 1 else new.capitalize() if like[:1].isupper() else new


def plural(name: str, owner: str | None = None) -> str | None:
    """The name with its last word singular if it is plural, plural otherwise (``Birth_Year`` ->
    ``Birth_Years``, ``Singers`` -> ``Singer``)."""
    m = _LAST_WORD.search(name)
    if m is None or len(m.group(1)) < 3 or m.group(1).lower() == "id":
        return None
    word = m.group(1).lower()
    other = singular(word) if singular(word) != word else _plural(word)
    return name[: m.start(1)] + _cased(other, m.group(1)) + name[m.end(1):]


def camel_case(name: str, owner: str | None = None) -> str | None:
    """A name with underscores written in camelCase (``student_id`` -> ``studentId``)."""
    if "_" not in name or len(words(name)) < 2:
        return None
    w = words(name)
    return w[0] + "".join(x.capitalize() for x in w[1:])


def underscores(name: str, owner: str | None = None) -> str | None:
    """A camelCase or PascalCase name written with underscores (``PetType`` -> ``pet_type``)."""
    if "_" in name or " " in name or len(words(name)) < 2:
        return None
    return "_".join(words(name))


def prefix(name: str, owner: str | None = None) -> str | None:
    """A column without its table's name (or the start of it) before it (``Singer_ID`` -> ``ID``), or with
    it (``Name`` of ``singer`` -> ``singer_Name``); a table without its first word (``Ref_Template_Types``
    -> ``Template_Types``)."""
    w = words(name)
    if owner is None:
        if len(w) < 2 or len(w[1]) < 3 or w[1] in RESERVED:
            return None
        parts = re.split(r"(?<=[a-z0-9])(?=[A-Z])|_", name, maxsplit=1)
        return parts[1] if len(parts) == 2 and parts[1] else None
    table = [singular(x) for x in words(owner)]
    mine = [singular(x) for x in w]
    if len(w) > len(table) and mine[: len(table)] == table:
        return _drop_words(name, len(table))
    if len(w) > 1 and mine[0] == table[0]:  # the start of the table's name (ModelId of model_list)
        return _drop_words(name, 1)
    return "_".join(table) + "_" + name


def _drop_words(name: str, n: int) -> str | None:
    """``name`` without its first ``n`` words (separators after them dropped too)."""
    spans = [m.span() for m in re.finditer(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]
    if len(spans) <= n:
        return None
    return name[spans[n][0]:]


def id_dropped(name: str, owner: str | None = None) -> str | None:
    """A column whose last word is ``id`` without it (``owner_id`` -> ``owner``, ``StuID`` -> ``Stu``)."""
    w = words(name)
    if owner is None or len(w) < 2 or w[-1] != "id":
        return None
    spans = [m.span() for m in re.finditer(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]
    return name[: spans[-2][1]]


def keyword(name: str, owner: str | None = None) -> str | None:
    """A table whose name, singular or plural, is a reserved word written as that word (``Orders`` ->
    ``order``): the engine reads a syntax error."""
    if owner is not None:
        return None
    low = name.lower()
    for form in (singular(low), _plural(low), low):
        if form in RESERVED and form != low:
            return form
    return None


def edit(name: str, owner: str | None = None, rng: random.Random | None = None) -> str | None:
    """A name of five letters or more with one inner letter dropped (``Country`` -> ``Contry``)."""
    if len(name) < 5 or not name.isascii():
        return None
    places = [i for i in range(1, len(name) - 1) if name[i].isalpha() and name[i - 1] != "_" and name[i + 1] != "_"]
    if not places:
        return None
    i = (rng or random.Random(name)).choice(places)
    return name[:i] + name[i + 1:]


def _synonyms() -> dict[str, list[str]]:
    from pathlib import Path

    import yaml

    if not hasattr(_synonyms, "table"):
        _synonyms.table = yaml.safe_load((Path(__file__).parent / "data" / "synonyms.yaml").read_text())
    return _synonyms.table


def meaning(name: str, owner: str | None = None, rng: random.Random | None = None) -> str | None:
    """A name with one of its words replaced by a word of the same meaning that models write
    (``student_id`` -> ``pupil_id``, ``Country`` -> ``Nation``, ``salary`` -> ``wage``:
    ``synth/data/synonyms.yaml``)."""
    spans = [m.span() for m in re.finditer(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]
    table = _synonyms()
    places = [(a, b) for a, b in spans if singular(name[a:b].lower()) in table]
    if not places:
        return None
    a, b = (rng or random.Random(name)).choice(places)
    word = name[a:b]
    choices = table[singular(word.lower())]
    new = (rng or random.Random(name)).choice(choices)
    if word.lower() != singular(word.lower()):  # keep a plural plural
        new = _plural(new)
    return name[:a] + _cased(new, word) + name[b:]


def added(name: str, owner: str | None = None, rng: random.Random | None = None) -> str | None:
    """A column with a word added after it or before it, as models guess names (``grade`` ->
    ``grade_name``, ``Name`` -> ``Name_Code``, ``name`` -> ``primary_name``)."""
    if owner is None:
        return None
    rng = rng or random.Random(name)
    low = [w for w in words(name)]
    after = [w for w in ADDED_AFTER if w not in low]
    if rng.random() < 0.75 and after:
        word = rng.choice(after)
        return f"{name}_{_cased(word, name) if name[:1].isupper() else word}"
    word = rng.choice(ADDED_BEFORE)
    return f"{_cased(word, name) if name[:1].isupper() else word}_{name}"


_MAKERS = {"plural": plural, "camelCase": camel_case, "underscores": underscores, "prefix": prefix,
           "id": id_dropped, "keyword": keyword}


def wrong_name(kind: str, name: str, owner: str | None, rng: random.Random) -> str | None:
    """The name written wrong in one kind (None when the kind does not apply to it)."""
    if kind == "edit":
        return edit(name, owner, rng)
    if kind == "meaning":
        return meaning(name, owner, rng)
    if kind == "added":
        return added(name, owner, rng)
    return _MAKERS[kind](name, owner)


@dataclass(frozen=True)
class Variant:
    """A gold with names renamed."""

    kind: str
    sql: str
    names: tuple[tuple[str, str], ...]  # (schema name, as the variant writes it): "table" or "table.column"


def _sites(tree: Any, schema: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """The schema tables and ``(table, column)`` pairs a query names, in text order."""
    known = {t.name.lower(): t for t in schema.tables}
    tables = []
    for t in tree.find_all(ast.Table):
        if t.name.lower() in known and known[t.name.lower()].name not in tables:
            tables.append(known[t.name.lower()].name)
    resolver = sqlmod.Resolver(tree, schema)
    columns = []
    for col in tree.find_all(ast.Column):
        if isinstance(col.this, ast.Star) or not col.name:
            continue
        b = resolver.resolve(col)
        if b.status != "ok" or b.table not in known:
            continue
        real = known[b.table].column(col.name)
        pair = (known[b.table].name, real.name if real else col.name)
        if real is not None and pair not in columns:
            columns.append(pair)
    return tables, columns


def _rename(tree: Any, schema: Any, table: str, column: str | None, new: str) -> None:
    """Rename, in place, every occurrence of ``table`` (or of its ``column``) to ``new``."""
    resolver = sqlmod.Resolver(tree, schema)
    if column is None:
        aliased = {t.alias.lower() for t in tree.find_all(ast.Table) if t.alias}
        cols = [c for c in tree.find_all(ast.Column) if c.table and c.table.lower() == table.lower()
                and c.table.lower() not in aliased]
        for c in cols:
            c.set("table", ast.to_identifier(new))
        for t in tree.find_all(ast.Table):
            if t.name.lower() == table.lower():
                t.set("this", ast.to_identifier(new, quoted=t.this.quoted if isinstance(t.this, ast.Identifier)
                                                else None))
        return
    targets = []
    for col in tree.find_all(ast.Column):
        if isinstance(col.this, ast.Star) or col.name.lower() != column.lower():
            continue
        b = resolver.resolve(col)
        if b.status == "ok" and b.table == table.lower():
            targets.append(col)
    for col in targets:
        col.set("this", ast.to_identifier(new, quoted=col.this.quoted or None))


def renamed(text: str, schema: Any, names: tuple[tuple[str, str], ...], dialect: str = "sqlite") -> str:
    """``text`` with a :class:`Variant`'s renames (``("table" or "table.column", new)``) applied: the same
    variant of a gold written in another dialect (``sqlmend bench names`` on PostgreSQL).

    Raises:
        SqlError: the text does not parse or cannot be written back.
    """
    tree = sqlmod.parse(text, dialect=dialect)
    for name, new in sorted(names, key=lambda n: "." not in n[0]):  # columns first, by their table
        table, _, column = name.partition(".")
        _rename(tree, schema, table, column or None, new)
    return sqlmod.render(tree, dialect=dialect)


def variants(gold: str, schema: Any, kind: str, count: int, rng: random.Random) -> list[Variant]:
    """The gold with ``count`` names (one or two) written wrong in ``kind``, every occurrence of each.

    Tables and columns are both candidates (a kind that does not apply to a name skips it); ``rng`` picks
    which, and one variant is returned per pick (at most one here: the first pick that works). The new
    name must be no table name of the schema (a table) or no column name of any table (a column), so
    that the variant names something the schema does not have.

    Returns:
        ``[Variant]`` (empty when no name of the gold takes the kind).
    """
    try:
        tree = sqlmod.parse(gold)
    except SqlError:
        return []
    tables, columns = _sites(tree, schema)
    table_names = {t.name.lower() for t in schema.tables}
    column_names = {c.name.lower() for t in schema.tables for c in t.columns}
    options: list[tuple[str, str | None, str]] = []
    for t in tables:
        new = wrong_name(kind, t, None, rng)
        if new and new.lower() not in table_names and new.lower() != t.lower():
            options.append((t, None, new))
    for t, c in columns:
        new = wrong_name(kind, c, t, rng)
        if new and new.lower() not in column_names and new.lower() != c.lower() and new.lower() not in table_names:
            options.append((t, c, new))
    if len(options) < count:
        return []
    picked = rng.sample(options, count)
    out = tree.copy()
    for table, column, new in sorted(picked, key=lambda p: p[1] is None):  # columns first, by their table
        _rename(out, schema, table, column, new)
    try:
        text = sqlmod.render(out)
    except SqlError:
        return []
    return [Variant(kind, text, tuple((f"{t}.{c}" if c else t, new) for t, c, new in picked))]

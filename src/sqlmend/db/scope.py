"""What one item reads of a big catalogue: the relations its queries name, the ones a name it invents may
stand for, and their neighbours by foreign key.

A database of a few dozen tables is read whole: its schema, its row counts and its value index cost
milliseconds, and every stage may look anywhere in it. A warehouse or an ERP (hundreds to thousands of
relations in many schemas) is not: reading every table's values costs minutes and hundreds of MB, and a
name or value found in an unrelated schema is no evidence. Above :data:`SCOPE_ABOVE` relations an item
sees its *scope* (:meth:`CatalogueIndex.relations`), so that its cost follows its query, not the schema:

* every relation its queries (the input and the alternatives) name, by key (``sales.orders``, or the
  plain name the search path finds);
* for a relation it names that the catalogue does not have, the relations that match it
  (:class:`sqlmend.sql.names.NameIndex`: the same ranking as the static rules', read from an index; at
  most :data:`MAX_CANDIDATES`): ``people`` in a warehouse of 163 schemas is each schema's ``people``, and
  ``Address`` is ``sakila_1.address`` and each schema's ``addresses``, for the rules to choose among with
  the whole query's evidence (:mod:`sqlmend.rules.names`);
* the relations a foreign key links to any of those but a name's weaker matches (a join path the search
  may need).

A text that does not parse names the relations whose name it writes as a word. The scope is a function
of the texts and the catalogue alone, so an item's answer does not depend on what ran before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sqlmend.sql import names as sql_names
from sqlmend.sql.diff import identifiers, table_names
from sqlmend.types import Schema

#: A catalogue of more relations than this is read by scope (see the module doc); Spider's largest
#: database has 29 tables. A setting, not a fit: below it the whole database is read in about a second.
SCOPE_ABOVE = 256
#: Relations a name the catalogue lacks brings into the scope at most (its best matches, by name).
MAX_CANDIDATES = 64
#: Neighbours by foreign key one relation brings at most (a hub table of an ERP is referenced by
#: hundreds): the first by key.
MAX_NEIGHBOURS = 32


class CatalogueIndex:
    """The catalogue's names and foreign-key links, read once per catalogue version.

    Args:
        catalogue: the whole schema (:meth:`sqlmend.db.base.Database.catalogue`).
    """

    def __init__(self, catalogue: Schema) -> None:
        self.catalogue = catalogue
        self._names: sql_names.NameIndex | None = None
        self.order = {t.name.lower(): i for i, t in enumerate(catalogue.tables)}
        links: dict[str, set[str]] = defaultdict(set)
        for t in catalogue.tables:
            for fk in t.foreign_keys:
                ref = catalogue.table(fk.ref_table)
                if ref is not None and ref is not t:
                    links[t.name.lower()].add(ref.name.lower())
                    links[ref.name.lower()].add(t.name.lower())
        self.links = {k: sorted(v, key=self.order.__getitem__)[:MAX_NEIGHBOURS] for k, v in links.items()}

    @property
    def names(self) -> sql_names.NameIndex:
        """The relations' names, indexed (built when a query first names a relation the catalogue lacks)."""
        if self._names is None:
            self._names = sql_names.NameIndex(t.name for t in self.catalogue.tables)
        return self._names

    def relations(self, texts: Iterable[str], dialect: str = "sqlite") -> list[str]:
        """The scope of an item whose queries are ``texts`` (see the module doc): relation keys (lower
        case) in catalogue order.

        Args:
            texts: the SQL texts (the input, its alternatives); a text that does not parse counts by
                the words it writes.
            dialect: their dialect.
        """
        found: set[str] = set()
        lone: set[str] = set()  # candidates whose neighbours are not brought (a name's weaker matches)
        for text in texts:
            named = table_names(text, dialect) if text and text.strip() else []
            if not named and text and text.strip():  # does not parse: the relations it writes by name
                for word in identifiers(text, dialect) + [w for _, _, w in sql_names.keyword_tables(text, dialect)]:
                    found.update(t.name.lower() for t in self.catalogue.named(word))
                    if (t := self.catalogue.table(word)) is not None:
                        found.add(t.name.lower())
                continue
            for name in named:
                table = self.catalogue.table(name)
                if table is not None:
                    found.add(table.name.lower())
                    continue
                matches = self.names.match(name)[:MAX_CANDIDATES]
                found.update(m.name.lower() for m in matches if m.rank == matches[0].rank)
                lone.update(m.name.lower() for m in matches if m.rank != matches[0].rank)
        for key in list(found):
            found.update(self.links.get(key, ()))
        return sorted(found | lone, key=self.order.__getitem__)

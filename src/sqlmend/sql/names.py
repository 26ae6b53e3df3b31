"""Names from the schema: which schema name a name the schema does not have stands for.

Users, agents and smaller models write names the way they would say them: ``customers`` for the
table ``customer``, ``studentId`` for ``student_id``, ``id`` for ``Singer_ID``, ``order`` (a
keyword) for ``orders``, ``mail`` for ``email``. :func:`match` takes the names of the schema in
scope and a name the schema does not have, and returns the schema names it matches, best first,
each with the *reason*: the kind of normalization under which the two are the same.

Reasons, strongest first (:data:`REASONS`):

``case``        equal without case and quotes (``"Customer"`` / ``customer`` in PostgreSQL);
``schema``      a table of another schema, its own name equal without case (``employees`` /
                ``hr.employees``, where the search path does not reach ``hr``: the schema's key
                of such a table is ``schema.name``, :class:`sqlmend.types.Table`);
``separators``  equal as words, whatever joins them: underscores, spaces, camelCase
                (``studentId`` / ``student_id``, ``BirthYear`` / ``Birth_Year``);
``plural``      equal once each word is singular (``customers`` / ``customer``,
                ``Birth_Years`` / ``Birth_Year``);
``prefix``      one is the other with leading words dropped: a column written with or without its
                table's name (``id`` / ``Singer_ID`` of ``singer``, ``singer_name`` / ``Name``) or
                the start of it (``Id`` / ``ModelId`` of ``model_list``: ``distance`` 1), a table
                written without the schema name's first words (``template_types`` /
                ``Ref_Template_Types``);
``id``          one is the other with ``id`` added (``owner`` / ``owner_id``);
``edit``        a bounded edit of the words joined (:func:`edit_bound`): ``mail`` / ``email``,
                ``state`` / ``status``; ``distance`` is the number of edits; a whole word added, dropped
                or replaced is no edit (``building_boss`` / ``building_id``);
``head``        trailing words added or dropped (``District_Code`` / ``District``, ``grade_name`` /
                ``grade``): a proof unless the name holds another column's whole name as a word
                (``grade_name`` where ``name`` is a column too: :mod:`sqlmend.rules.names`);
``words``       leading words dropped or added that are not the table's name (``MakeId`` / ``Id``
                of ``cars_data``, ``Meber_of_club`` / ``Club``): a match for a person or the search,
                never a proof (:attr:`NameMatch.proof`);
``meaning``     no spelling: the same meaning, by a sentence embedder (``pupil`` / ``student``,
                ``wage`` / ``salary``; set by :mod:`sqlmend.rules.meaning`, ``distance`` the cosine's
                complement in hundredths): never a proof;
``value``       no normalization: the column stores the literal the name is compared with (set by
                :mod:`sqlmend.rules.names`, which reads the data; :func:`match` never gives it).

:func:`unique` says whether the best match is the only one as close (the proof a strict rule
needs); several as close are candidates for a person or the repair search.

To add a normalization, add its reason to :data:`REASONS` in its place and a test to :func:`_reason`;
every caller ranks by the order of :data:`REASONS`, then ``distance``.

>>> [m.name for m in match("customers", ["customer", "orders"])]
['customer']
>>> match("employees", ["hr.employees", "sales.orders"])
[NameMatch(name='hr.employees', owner=None, reason='schema', distance=0)]
>>> match("studentId", ["StuID", "student_id"])[0]
NameMatch(name='student_id', owner=None, reason='separators', distance=0)
>>> unique(match("id", [("Singer_ID", "singer"), ("Song_ID", "singer")])).name
'Singer_ID'
>>> unique(match("id", [("Singer_ID", "singer"), ("Song_ID", "song")])) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

#: The kinds of normalization, strongest first (the rank of a match).
REASONS = ("case", "schema", "separators", "plural", "prefix", "id", "edit", "head", "words", "meaning", "value")

#: Words an engine refuses as a bare table or column name (a query naming a table ``order`` is a
#: syntax error in SQLite and PostgreSQL): a schema name among them is written quoted.
RESERVED = frozenset("""
all alter and as asc between by case check collate column constraint create cross current_date
current_time current_timestamp default delete desc distinct drop else end except exists foreign from
full grant group having in index inner insert intersect into is join left like limit natural not null
offset on or order outer primary references right select table then to union unique update user using
values when where window with
""".split())

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def singular(word: str) -> str:
    """Return a crude English singular of a lower-case word ('cities' -> 'city', 'dogs' -> 'dog').

    Args:
        word: one lower-case word.

    Returns:
        The word without its plural ending; short words and '-ss'/'-us'/'-is' words unchanged.
    """
    if len(word) <= 3 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def words(name: str) -> list[str]:
    """The lower-case words of an identifier, split at separators and camelCase humps.

    >>> words("StuID"), words("studentId"), words("Birth_Year"), words("home town")
    (['stu', 'id'], ['student', 'id'], ['birth', 'year'], ['home', 'town'])
    """
    return [w.lower() for w in _WORD.findall(name)]


def edit_bound(a: str, b: str) -> int:
    """The most edits two names (words joined) may differ by and still match: a third of the longer,
    at least 1 (``mail`` / ``email``: 1 of 1; ``state`` / ``status``: 2 of 2)."""
    return max(1, max(len(a), len(b)) // 3)


@dataclass(frozen=True)
class NameMatch:
    """One schema name that a name not in the schema matches."""

    name: str  # as the schema spells it
    owner: str | None  # a column's table (None for a table, or when not given)
    reason: str  # one of REASONS
    distance: int = 0  # edits for "edit"; 1 for a "prefix" that is only the start of the table's name

    @property
    def proof(self) -> bool:
        """Whether the match may prove a rename when it is the best and the only one as close
        (:func:`unique`): every reason but ``words`` and ``meaning``."""
        return self.reason not in ("words", "meaning")

    @property
    def rank(self) -> tuple[int, int]:
        """The sort key: the reason's place in :data:`REASONS`, then ``distance``."""
        return (REASONS.index(self.reason), self.distance)

    def describe(self) -> str:
        """``Singer_ID (prefix)``, ``email (edit 1)``."""
        where = f"{self.owner}." if self.owner else ""
        how = f"{self.reason} {self.distance}" if self.reason == "edit" else self.reason
        return f"{where}{self.name} ({how})"


def _suffix_of(short: list[str], long: list[str]) -> bool:
    return 0 < len(short) < len(long) and long[len(long) - len(short):] == short


def _word_swapped(a: list[str], b: list[str]) -> bool:
    """Whether two names differ by a whole word, added, dropped or replaced, not by a slip inside one
    (``building_boss`` / ``building_id``, ``Population_Name`` / ``Population``): no ``edit`` match."""
    if len(a) != len(b):
        return max(len(a), len(b)) > 1
    if len(a) < 2:
        return False
    return any(x != y and Levenshtein.distance(x, y) > max(1, max(len(x), len(y)) // 2) for x, y in zip(a, b))


def _head_of(short: list[str], long: list[str]) -> bool:
    return 0 < len(short) < len(long) and long[: len(short)] == short and len("".join(short)) > 2


def _owner_prefixed(a: str, b: str, owner: str) -> int | None:
    """0 when one of two joined, singular names is the other with its table's name before it, 1 when with
    the start of the table's name only (``id`` / ``ModelId`` of ``model_list``: ``problem_log_id`` ranks
    before ``problem_id`` for ``id`` of ``problem_log``), None otherwise. Joined, because a lower-case
    schema's names have no word boundaries to split at (``authorshippaperid`` / ``paperid``)."""
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    if not shorter or not longer.endswith(shorter):
        return None
    head = longer[: len(longer) - len(shorter)]
    ow = words(owner)
    for k in range(len(ow), 0, -1):
        if head in {"".join(w for w in ow[:k]), "".join(singular(w) for w in ow[:k])}:
            return 0 if k == len(ow) else 1
    return None


def _reason(unknown: str, name: str, owner: str | None) -> tuple[str, int] | None:
    """``(reason, distance)`` of the strongest normalization under which ``unknown`` is ``name``.

    A table's key ``schema.name`` (a schema the search path does not reach) is matched by its own name:
    as written but for case (``schema``), else as any name is (``employee`` / ``hr.employees``: plural);
    a column's table by its own name too (``captain_age`` / ``age`` of ``ship_1.captain``: prefix)."""
    if unknown.casefold() == name.casefold():
        return ("case", 0)
    if owner is None and "." in name and "." not in unknown:
        own = name.rpartition(".")[2]
        if unknown.casefold() == own.casefold():
            return ("schema", 0)
        name = own
    if owner is not None and "." in owner:
        owner = owner.rpartition(".")[2]
    uw, nw = words(unknown), words(name)
    if not uw or not nw:
        return None
    if "".join(uw) == "".join(nw):
        return ("separators", 0)
    us, ns = [singular(w) for w in uw], [singular(w) for w in nw]
    if "".join(us) == "".join(ns):
        return ("plural", 0)
    a, b = "".join(us), "".join(ns)
    if owner is not None:
        prefixed = _owner_prefixed(a, b, owner)
        if prefixed is not None:
            return ("prefix", prefixed)
    if _suffix_of(us, ns) or _suffix_of(ns, us):  # a table: the query dropped the schema name's first words
        return ("prefix" if owner is None and len(ns) > len(us) else "words", 0)
    if a + "id" == b or b + "id" == a:
        return ("id", 0)
    a, b = "".join(uw), "".join(nw)
    bound = edit_bound(a, b)
    d = Levenshtein.distance(a, b, score_cutoff=bound)
    if d <= bound and not _word_swapped(uw, nw):
        return ("edit", d)
    if _head_of(us, ns) or _head_of(ns, us):  # trailing words added or dropped (grade_name / grade)
        return ("head", 0)
    return None


def match(unknown: str, names: Iterable[str | tuple[str, str | None]]) -> list[NameMatch]:
    """The schema names ``unknown`` matches, best first (see the module doc for the reasons).

    Args:
        unknown: the name as the query writes it (without quotes).
        names: the schema's names in scope, as it spells them; a column may come as
            ``(column, table)``, so that its table's name counts as its prefix.

    Returns:
        One :class:`NameMatch` per matching name (and owner), ordered by :attr:`NameMatch.rank`,
        then by name; empty when nothing matches.
    """
    out: dict[tuple[str, str | None], NameMatch] = {}
    for item in names:
        name, owner = (item, None) if isinstance(item, str) else item
        key = (name.lower(), owner.lower() if owner else None)
        if key in out:
            continue
        found = _reason(unknown, name, owner)
        if found is not None:
            out[key] = NameMatch(name, owner, *found)
    return sorted(out.values(), key=lambda m: (m.rank, m.name.lower(), (m.owner or "").lower()))


def unique(matches: list[NameMatch]) -> NameMatch | None:
    """The best match when nothing else is as close (same reason and distance) and it may prove a rename
    (:attr:`NameMatch.proof`), else ``None``.

    Args:
        matches: :func:`match`'s answer (best first).
    """
    if not matches or (len(matches) > 1 and matches[1].rank == matches[0].rank) or not matches[0].proof:
        return None
    return matches[0]


def needs_quotes(name: str) -> bool:
    """Whether a name must be quoted to be read as a name: a reserved word, or not a plain identifier."""
    return name.lower() in RESERVED or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is None


def keyword_tables(text: str, dialect: str = "sqlite") -> list[tuple[int, int, str]]:
    """``(start, end, word)`` of each reserved word a query writes where a table goes (right after
    FROM or JOIN): ``FROM like AS T1`` is ``Likes`` written as a keyword, which no parser reads as a
    name. ``end`` is exclusive; empty when the text does not tokenize.

    >>> keyword_tables("SELECT count(*) FROM like AS T1 JOIN Highschooler AS T2 ON T1.student_id = T2.id")
    [(21, 25, 'like')]
    """
    try:
        tokens = Dialect.get_or_raise(dialect or None).tokenize(text)
    except Exception:  # an untokenizable text has no table to find
        return []
    out = []
    for before, tok in zip(tokens, tokens[1:]):
        if before.token_type in (TokenType.FROM, TokenType.JOIN) and tok.text.lower() in RESERVED \
                and tok.token_type not in (TokenType.VAR, TokenType.IDENTIFIER, TokenType.L_PAREN):
            out.append((tok.start, tok.end + 1, tok.text))
    return out


def _index_keys(ws: list[str], name: str) -> list[str]:
    """The keys a name (its words ``ws``) is found by in a :class:`NameIndex`: its case-folded self, its
    words joined, its singular words joined, and each proper tail and head of those (a name with leading
    or trailing words the query dropped)."""
    if not ws:
        return [f"c:{name.casefold()}"]
    single = [singular(w) for w in ws]
    keys = [f"c:{name.casefold()}", f"j:{''.join(ws)}", f"p:{''.join(single)}"]
    keys += [f"t:{''.join(single[i:])}" for i in range(1, len(single))]
    keys += [f"h:{''.join(single[:i])}" for i in range(1, len(single))]
    return keys


class NameIndex:
    """The names of a big schema (thousands of tables), indexed so that :func:`match` reads a handful of
    candidates instead of every name: a name the schema does not have finds the names that are the same
    under case, separators or plural (its own part, ``hr.employees``'s ``employees``, and the whole name),
    those it is a tail or a head of in words, those with ``id`` added or dropped, and those a bounded edit
    away (rapidfuzz over the joined words, in C). :meth:`match` then ranks them exactly as :func:`match`
    ranks the whole list: the index only narrows the list, it never decides.

    >>> index = NameIndex(["sales.orders", "hr.employees", "hr.orders", "customer"])
    >>> [m.name for m in index.match("order")]
    ['hr.orders', 'sales.orders']
    >>> [m.name for m in index.match("customers")]
    ['customer']
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(dict.fromkeys(names))
        self._keys: dict[str, list[str]] = {}
        self._joined: list[str] = []
        self._owner: list[str] = []
        for name in self.names:
            own = name.rpartition(".")[2]
            for part in (name, own) if own != name else (name,):
                ws = words(part)
                for key in _index_keys(ws, part):
                    found = self._keys.setdefault(key, [])
                    if not found or found[-1] != name:
                        found.append(name)
                self._joined.append("".join(ws))
                self._owner.append(name)

    def candidates(self, unknown: str) -> list[str]:
        """The names :func:`match` may find for ``unknown`` (a superset of its matches among :attr:`names`)."""
        found: dict[str, None] = {}
        own = unknown.rpartition(".")[2]
        for part in {unknown, own}:
            ws = words(part)
            single = [singular(w) for w in ws]
            a = "".join(single)
            probes = [f"c:{part.casefold()}", f"j:{''.join(ws)}", f"p:{a}", f"t:{a}", f"h:{a}", f"p:{a}id"]
            probes += [f"p:{''.join(single[i:])}" for i in range(1, len(single))]  # the name is a tail of it
            probes += [f"p:{''.join(single[:i])}" for i in range(1, len(single))]  # or a head
            if a.endswith("id"):
                probes.append(f"p:{a[:-2]}")
            for key in probes:
                found.update(dict.fromkeys(self._keys.get(key, ())))
            plain = "".join(ws)
            if plain:  # a bounded edit: at most half the length (match's own bound is tighter)
                for _, _, i in process.extract(plain, self._joined, scorer=Levenshtein.distance, limit=None,
                                               score_cutoff=max(1, len(plain) // 2 + 1)):
                    found[self._owner[i]] = None
        return list(found)

    def match(self, unknown: str) -> list[NameMatch]:
        """:func:`match` of ``unknown`` against the indexed names (the same answer, read from the index)."""
        return match(unknown, self.candidates(unknown))

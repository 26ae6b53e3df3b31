"""Question-schema linking: question phrases -> tables, columns and cell values.

Builds the cross edges ``E_Link`` of ErrorLLM's question-schema structure
(§2.3, after RAT-SQL's name-based and value-based linking, Wang et al. 2020):

* ``exact`` — an n-gram of the question equals a table or column name
  (underscores read as spaces);
* ``lemma`` — equal after a light English lemmatization (plurals, -ing, -ed);
* ``fuzzy`` — rapidfuzz similarity at least ``fuzzy_threshold``;
* ``comment`` — a phrase of the question is a phrase of the table's or column's comment (what the
  database says the name means: ``dept`` commented "department the employee works in" links
  "department"), after the same lemmatization;
* ``value`` — a phrase is a value stored in a column (through the value index
  of ``sqlmend.db``, when one is given);
* ``embedding`` — cosine similarity of sentence embeddings at least
  ``embed_threshold``, when an embedder is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

from rapidfuzz import fuzz, process

from sqlmend.types import Schema

#: Words that never link on their own.
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or not no is are was were be been what which who whom "
    "whose how many much all each every any that this these those there their its it as than then list "
    "show give find return me tell number count name names do does did have has had".split()
)

_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.'][A-Za-z0-9_]+)*")
_QUOTED = re.compile(r"['\"\u2018\u2019\u201c\u201d]([^'\"\u2018\u2019\u201c\u201d]{1,60})['\"\u2018\u2019\u201c\u201d]")


@dataclass(frozen=True)
class Link:
    """One linking edge from a question phrase to a schema node or a cell value."""

    phrase: str
    target: str  # "table" or "table.column"
    kind: str  # exact | lemma | fuzzy | comment | value | embedding
    score: float = 1.0
    value: str | None = None  # the stored value, for value links


def tokenize(question: str) -> list[str]:
    """Split a question into lower-case word tokens."""
    return [w.lower() for w in _WORD.findall(question)]


def lemma(word: str) -> str:
    """Return a light lemma of an English word (plural, -ing, -ed suffixes removed).

    >>> lemma("countries"), lemma("singers"), lemma("classes"), lemma("located")
    ('country', 'singer', 'class', 'locat')
    """
    w = word.lower()
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"), ("xes", "x"),
                         ("ing", ""), ("ed", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            return w[: len(w) - len(suffix)] + repl
    return w


def ngrams(tokens: Sequence[str], n_max: int = 3) -> list[str]:
    """Return the n-grams (1..n_max) of a token list that are not only stopwords."""
    out = []
    for n in range(n_max, 0, -1):
        for i in range(len(tokens) - n + 1):
            gram = tokens[i: i + n]
            if all(t in STOPWORDS for t in gram) or gram[0] in STOPWORDS or gram[-1] in STOPWORDS:
                continue
            out.append(" ".join(gram))
    return out


def _name_words(name: str) -> str:
    return re.sub(r"[_\s]+", " ", re.sub(r"([a-z])([A-Z])", r"\1 \2", name)).strip().lower()


@lru_cache(maxsize=64)
def _targets(tables: tuple[tuple[str, str, tuple[str, ...]], ...]) -> tuple[tuple[str, str, str], ...]:
    """The names a question links to, once per schema (by its tables' and columns' names): ``(target,
    its words, their lemmas)``, tables then each table's columns, names of no words or a stopword left out.
    ``tables``: ``(key, own name, columns)``; a table of another schema is named by its own name."""
    out = []
    for table, own, columns in tables:
        for target, name in [(table, own), *((f"{table}.{c}", c) for c in columns)]:
            words = _name_words(name)
            if not words or words in STOPWORDS:
                continue
            out.append((target, words, " ".join(lemma(w) for w in words.split())))
    return tuple(out)


@lru_cache(maxsize=64)
def _index(targets: tuple[tuple[str, str, str], ...]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """The positions of :func:`_targets`' names by their words and by their lemmas."""
    by_words: dict[str, list[int]] = {}
    by_lemmas: dict[str, list[int]] = {}
    for j, (_, words, wl) in enumerate(targets):
        by_words.setdefault(words, []).append(j)
        by_lemmas.setdefault(wl, []).append(j)
    return by_words, by_lemmas


def value_candidates(question: str) -> list[str]:
    """Phrases of a question that may be cell values: quoted text, capitalized runs, numbers."""
    out = [m.strip() for m in _QUOTED.findall(question)]
    words = question.replace("?", " ").split()
    run: list[str] = []
    for i, w in enumerate(words + [""]):
        clean = w.strip(",.;:!()")
        if clean[:1].isupper() and i > 0 and clean.lower() not in STOPWORDS:
            run.append(clean)
        else:
            if run:
                out.append(" ".join(run))
            run = []
    out += [w for w in re.findall(r"\b\d+(?:\.\d+)?\b", question)]
    seen: dict[str, None] = {}
    for v in out:
        if v and v not in seen:
            seen[v] = None
    return list(seen)


def name_links(question: str, schema: Schema, fuzzy_threshold: float = 88.0) -> list[Link]:
    """Link question n-grams to table and column names (exact, lemma, fuzzy).

    Args:
        question: the natural-language question.
        schema: the database schema.
        fuzzy_threshold: the least rapidfuzz ratio (0-100) of a fuzzy link.

    Returns:
        The links, the strongest kind per (phrase, target).
    """
    grams = ngrams(tokenize(question))
    lemmas = {g: " ".join(lemma(w) for w in g.split()) for g in grams}
    targets = _targets(tuple((t.name, t.relname, tuple(c.name for c in t.columns)) for t in schema.tables))
    # fuzzy pairs: a vectorized pass over every (gram, name) finds those near the threshold, and each is
    # scored again on its own, as before (a schema of hundreds of tables has thousands of names)
    near: set[tuple[int, int]] = set()
    if grams and targets:
        scores = process.cdist(grams, [words for _, words, _ in targets], scorer=fuzz.ratio,
                               score_cutoff=max(0.0, fuzzy_threshold - 1.0))
        near = {(int(i), int(j)) for i, j in zip(*scores.nonzero())}
    by_words, by_lemmas = _index(targets)
    hits: list[tuple[int, int, Link]] = []  # (target, gram, link): kept in the order of a loop over both
    for i, g in enumerate(grams):
        exact = by_words.get(g, ())
        hits += [(j, i, Link(g, targets[j][0], "exact", 1.0)) for j in exact]
        hits += [(j, i, Link(g, targets[j][0], "lemma", 0.9)) for j in by_lemmas.get(lemmas[g], ()) if j not in exact]
    for i, j in near:
        g, (target, words, wl) = grams[i], targets[j]
        if g != words and lemmas[g] != wl and len(g) >= 4 and len(words) >= 4 and \
                (r := fuzz.ratio(g, words)) >= fuzzy_threshold:
            hits.append((j, i, Link(g, target, "fuzzy", round(r / 100.0, 3))))
    links: dict[tuple[str, str], Link] = {}
    for _, _, link in sorted(hits, key=lambda h: (h[0], h[1])):
        key = (link.phrase, link.target)
        if key not in links or links[key].score < link.score:
            links[key] = link
    for link in comment_links(grams, lemmas, schema):
        key = (link.phrase, link.target)
        if key not in links or links[key].score < link.score:
            links[key] = link
    return list(links.values())


#: The score of a comment link: below a name's own (exact 1.0, lemma 0.9), a comment being prose.
COMMENT_SCORE = 0.7


def comment_links(grams: list[str], lemmas: dict[str, str], schema: Schema) -> list[Link]:
    """``comment`` links: a question n-gram (not only stopwords) whose lemmas occur, in order, among the
    lemmas of a table's or column's comment.

    Args:
        grams: the question's n-grams (:func:`ngrams`).
        lemmas: each n-gram's lemmatized form.
        schema: the database schema (``Table.comment``, ``Column.comment``).

    Returns:
        The links, one per (n-gram, commented name).
    """
    commented = tuple((t.name, t.comment) for t in schema.tables if t.comment) + tuple(
        (f"{t.name}.{c.name}", c.comment) for t in schema.tables for c in t.columns if c.comment)
    return [Link(g, target, "comment", COMMENT_SCORE) for target, words in _comment_lemmas(commented)
            for g in grams if len(g) >= 3 and f" {lemmas[g]} " in words]


@lru_cache(maxsize=64)
def _comment_lemmas(commented: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``(target, " its comment's lemmas ")``, read once per schema."""
    return tuple((target, " " + " ".join(lemma(w) for w in tokenize(comment)) + " ") for target, comment in commented)


def _match_fields(match: Any) -> tuple[str, str, str] | None:
    """Read (table, column, value) from whatever a value index returns."""
    if isinstance(match, dict):
        t, c, v = match.get("table"), match.get("column"), match.get("value")
    elif isinstance(match, (tuple, list)) and len(match) >= 3:
        t, c, v = match[0], match[1], match[2]
    else:
        t, c, v = (getattr(match, k, None) for k in ("table", "column", "value"))
    return (str(t), str(c), str(v)) if t and c and v is not None else None


def value_links(question: str, value_index: Any, limit: int = 3) -> list[Link]:
    """Link value-like phrases of the question to the columns that store them.

    Args:
        question: the natural-language question.
        value_index: an object with ``search(value, mode=..., limit=...)`` (``sqlmend.db``'s value index).
        limit: matches kept per phrase.

    Returns:
        ``value`` links (exact case-insensitive matches score 1.0, approximate ones 0.8).
    """
    out: list[Link] = []
    for phrase in value_candidates(question):
        modes = (("ci", 1.0),) if re.fullmatch(r"[\d.]+", phrase) else (("ci", 1.0), ("approx", 0.8))
        for mode, score in modes:
            try:
                matches = value_index.search(phrase, mode=mode, limit=limit)
            except Exception:  # a value index that cannot answer gives no link, never a failure
                matches = []
            fields = [f for f in (_match_fields(m) for m in matches or []) if f]
            out += [Link(phrase, f"{t}.{c}", "value", score, v) for t, c, v in fields]
            if fields:
                break
    return out


def embedding_links(question: str, schema: Schema, embed: Callable[[list[str]], Iterable[Sequence[float]]],
                    threshold: float = 0.6, top: int = 5) -> list[Link]:
    """Link question n-grams to schema names by sentence-embedding similarity.

    Args:
        question: the natural-language question.
        schema: the database schema.
        embed: ``texts -> vectors`` (e.g. ``sqlmend.llm`` embeddings).
        threshold: the least cosine similarity of a link.
        top: the most links returned.

    Returns:
        ``embedding`` links, best first.
    """
    grams = ngrams(tokenize(question), n_max=2)
    names = [t.name for t in schema.tables] + [f"{t.name}.{c.name}" for t in schema.tables for c in t.columns]
    if not grams or not names:
        return []
    vecs = [list(v) for v in embed(grams + [_name_words(n.replace(".", " ")) for n in names])]
    g_vecs, n_vecs = vecs[: len(grams)], vecs[len(grams):]

    def cos(a: Sequence[float], b: Sequence[float]) -> float:
        num = sum(x * y for x, y in zip(a, b))
        den = (sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5)
        return num / den if den else 0.0

    scored = [(cos(gv, nv), g, n) for g, gv in zip(grams, g_vecs) for n, nv in zip(names, n_vecs)]
    scored = sorted((s for s in scored if s[0] >= threshold), reverse=True)[:top]
    return [Link(g, n, "embedding", round(s, 3)) for s, g, n in scored]

"""A word-level diff of two SQL texts, with keyword and literal classes, as HTML.

For display only: the texts are split by a small tokenizer (words, quoted
strings, numbers, punctuation, spaces) and aligned with :mod:`difflib`; the
removed tokens of the original and the inserted ones of the correction are
marked. Nothing here parses SQL (that is ``sqlmend.sql``'s job).

>>> old, new = sql_diff("SELECT a FROM t WHERE x = 'France'", "SELECT a FROM t WHERE x = 'france'")
>>> "<del" in old and "<ins" in new
True
"""

from __future__ import annotations

import difflib
import re

from markupsafe import Markup, escape

_TOKEN = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\s+|\d+(?:\.\d+)?|\w+|.""", re.S)
KEYWORDS = frozenset("""
select from where join inner left right outer full cross on and or not in is null as group by order
having limit offset distinct union intersect except all exists between like case when then else end
asc desc count sum avg min max with over partition cast
""".split())


def tokens(text: str) -> list[str]:
    """Split SQL text into display tokens (their concatenation is the text)."""
    return _TOKEN.findall(text or "")


def _span(tok: str) -> Markup:
    low = tok.lower()
    if low in KEYWORDS:
        return Markup('<span class="kw">{}</span>').format(tok)
    if tok[:1] in "'\"`":
        return Markup('<span class="str">{}</span>').format(tok)
    if tok[:1].isdigit():
        return Markup('<span class="num">{}</span>').format(tok)
    return Markup(escape(tok))


def highlight(text: str) -> Markup:
    """SQL text as HTML with keyword, string and number classes."""
    return Markup("").join(_span(t) for t in tokens(text))


def sql_diff(before: str, after: str) -> tuple[Markup, Markup]:
    """Highlight two SQL texts and mark what changed between them.

    Args:
        before: the original SQL.
        after: the corrected SQL.

    Returns:
        ``(before_html, after_html)``: removed tokens in ``<del>``, inserted ones in ``<ins>``.
    """
    a, b = tokens(before), tokens(after)
    # whitespace differences are not changes: compare on a normalised form
    key = lambda ts: [" " if t.isspace() else t for t in ts]  # noqa: E731
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, key(a), key(b), autojunk=False).get_opcodes():
        old = Markup("").join(_span(t) for t in a[i1:i2])
        new = Markup("").join(_span(t) for t in b[j1:j2])
        if op == "equal":
            left.append(old)
            right.append(new)
            continue
        if i2 > i1:
            left.append(Markup("<del>{}</del>").format(old))
        if j2 > j1:
            right.append(Markup("<ins>{}</ins>").format(new))
    return Markup("").join(left), Markup("").join(right)

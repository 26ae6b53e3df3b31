"""Names by meaning: a name that matches nothing by spelling, read as the schema names of the same meaning.

Models write names by meaning (``pupil`` for ``student``, ``nation`` for ``country``, ``wage`` for
``salary``). :func:`matches` embeds the unknown name's words and each candidate's (its words, and its
comment where the engine keeps one) with the embedded sentence encoder (all-MiniLM-L6-v2,
:class:`sqlmend.llm.embedder.LocalEmbedder`, offline) and returns the candidates whose cosine reaches
:data:`FLOOR`, best first, as :class:`~sqlmend.sql.names.NameMatch` of reason ``meaning`` (``distance``:
100 x (1 - cosine), rounded, so that a tie is a tie on any machine).

A meaning match is never a proof by itself (:attr:`NameMatch.proof`): it ranks the candidates the repair
search tries, and the data decides (a compared literal stored in exactly one column in scope,
:mod:`sqlmend.rules.names`). Without torch and sentence-transformers installed there is no meaning
match (the spelling matches stand alone).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from sqlmend.db.base import process_aside
from sqlmend.sql.names import NameMatch, words

#: The lowest cosine a candidate needs to be a meaning match (a setting: unrelated single words of a
#: schema score 0.1-0.35 with all-MiniLM-L6-v2, synonyms 0.4-0.8).
FLOOR = 0.4
#: Meaning matches returned at most.
TOP = 4

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def _encoder() -> Any:
    """The process's embedder, loaded on first use; None where it cannot load (no torch)."""
    with _LOCK, process_aside():  # loaded once for every later item: no item's deadline runs meanwhile
        if "encoder" not in _STATE:
            try:
                from sqlmend.llm.embedder import LocalEmbedder

                encoder = LocalEmbedder()
                encoder.encoder  # noqa: B018 (load now: a failure means no meaning matches)
            except Exception:  # no torch / sentence-transformers, or no packaged model
                encoder = None
            _STATE["encoder"] = encoder
            _STATE["vectors"] = {}
        return _STATE["encoder"]


def _phrase(name: str) -> str:
    return " ".join(words(name)) or name


def _vectors(texts: Sequence[str]) -> dict[str, Any] | None:
    encoder = _encoder()
    if encoder is None:
        return None
    cache: dict[str, Any] = _STATE["vectors"]
    missing = sorted({t for t in texts if t not in cache})
    if missing:
        vectors, _ = encoder._embed(missing)
        with _LOCK:
            for text, vector in zip(missing, vectors):
                cache[text] = vector
    return {t: cache[t] for t in texts}


def available() -> bool:
    """Whether meaning matches can be made here (the embedder loads)."""
    return _encoder() is not None


def matches(unknown: str, names: Iterable[str | tuple[str, str | None]],
            comments: dict[tuple[str, str | None], str] | None = None) -> list[NameMatch]:
    """The candidates of the same meaning as ``unknown``, best first (see the module doc).

    Args:
        unknown: the name as the query writes it.
        names: the schema's names in scope (a column as ``(column, table)``), as :func:`sqlmend.sql.names.match`
            takes them.
        comments: ``{(name, table): comment}`` the engine keeps for some of them.

    Returns:
        ``[NameMatch(reason="meaning")]``, at most :data:`TOP`; empty without the embedder.
    """
    items = [(n, None) if isinstance(n, str) else n for n in names]
    if not items:
        return []
    texts = {item: _phrase(item[0]) + (f": {comments[item]}" if comments and comments.get(item) else "")
             for item in items}
    vectors = _vectors([_phrase(unknown), *texts.values()])
    if vectors is None:
        return []
    query = vectors[_phrase(unknown)]
    scored = []
    for (name, owner), text in texts.items():
        cosine = float(query @ vectors[text])
        if cosine >= FLOOR:
            scored.append(NameMatch(name, owner, "meaning", int(round(100 * (1 - cosine)))))
    scored.sort(key=lambda m: (m.distance, m.name.lower(), (m.owner or "").lower()))
    return scored[:TOP]

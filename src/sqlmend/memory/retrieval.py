"""Memory item retrieval through two channels, merged by alternation (MIRA §3.3.1).

    score_sem(m, q)     = cos(Enc(q), Enc(app(m) || req(m)))
    score_str(m, s_cur) = |K(m) ∩ K(s_cur)|

"MIRA merges the two rankings within the available context budget and removes
duplicates, alternating between channels when not all same-database items
fit." Retrieval only decides which items are examined next; it activates none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlmend.memory.items import MemoryItem


@dataclass
class Candidate:
    item: MemoryItem
    channel: str  # "semantic" | "structural"
    score: float


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two vectors (0 when either is zero).

    >>> round(cosine([1, 0], [1, 1]), 3)
    0.707
    """
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def semantic_ranking(items: list[MemoryItem], question_vector: list[float] | None,
                     min_score: float = 0.0) -> list[Candidate]:
    """Rank items by cosine between the question and app(m) || req(m).

    Args:
        items: the database's items.
        question_vector: Enc(q); None (no embedder) gives an empty ranking.
        min_score: drop items below this similarity.

    Returns:
        Candidates, best first.
    """
    if question_vector is None:
        return []
    ranked = [Candidate(m, "semantic", cosine(question_vector, m.vector)) for m in items if m.vector]
    return sorted((c for c in ranked if c.score > min_score), key=lambda c: -c.score)


def structural_ranking(items: list[MemoryItem], current_keys: set[str]) -> list[Candidate]:
    """Rank items by the number of structural keys shared with the current SQL.

    Args:
        items: the database's items.
        current_keys: K(s_cur) (:func:`sqlmend.memory.keys.sql_keys`).

    Returns:
        Candidates sharing at least one key, most shared first (ties: fewer keys first).
    """
    ranked = [Candidate(m, "structural", float(len(set(m.keys) & current_keys))) for m in items]
    return sorted((c for c in ranked if c.score > 0), key=lambda c: (-c.score, len(c.item.keys)))


def merge(semantic: list[Candidate], structural: list[Candidate], budget: int) -> list[Candidate]:
    """Alternate between the two rankings, skipping duplicates, up to ``budget`` items.

    Args:
        semantic: the semantic ranking.
        structural: the structural ranking.
        budget: the context budget, in items.

    Returns:
        The merged candidates (each item once, with the channel that found it first).
    """
    out: list[Candidate] = []
    seen: set[str] = set()
    queues = [list(structural), list(semantic)]
    turn = 0
    while len(out) < budget and any(queues):
        queue = queues[turn % 2]
        while queue:
            c = queue.pop(0)
            if c.item.id not in seen:
                seen.add(c.item.id)
                out.append(c)
                break
        turn += 1
    return out


def retrieve(items: list[MemoryItem], current_keys: set[str], question_vector: list[float] | None = None,
             budget: int = 8) -> list[Candidate]:
    """Retrieve candidate items for the current task through both channels (§3.3.1).

    Args:
        items: the current database's items.
        current_keys: K(s_cur).
        question_vector: Enc(q), or None when no embedder is configured.
        budget: most candidates returned.

    Returns:
        The candidates to verify.
    """
    return merge(semantic_ranking(items, question_vector), structural_ranking(items, current_keys), budget)

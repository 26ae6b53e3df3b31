"""The one seeded sample of a benchmark's questions (``--sample N --seed S``, ``--limit N``).

Every command that samples questions calls :func:`seeded_sample`: the same
seed picks the same positions of the same dataset, whatever command asks.

>>> seeded_sample(list("abcdefghij"), 3, seed=0)
['a', 'g', 'j']
>>> seeded_sample(list("abc"), 5, seed=0)
['a', 'b', 'c']
"""

from __future__ import annotations

import random
from typing import Sequence, TypeVar

T = TypeVar("T")


def seeded_sample(items: Sequence[T], n: int | None, seed: int = 0) -> list[T]:
    """A seeded random sample of ``n`` items, kept in their original order.

    The sample is drawn over positions (``random.Random(seed).sample(range(len(items)), n)``),
    so it depends only on the seed and the number of items.

    Args:
        items: the population, in dataset order (e.g. all tasks of a dataset).
        n: the sample size; None, or at least ``len(items)``, keeps every item.
        seed: the sample's seed.

    Returns:
        The chosen items, in their original order.
    """
    if n is None or n >= len(items):
        return list(items)
    keep = set(random.Random(seed).sample(range(len(items)), n))
    return [x for i, x in enumerate(items) if i in keep]


def choose(items: Sequence[T], limit: int | None = None, sample: int | None = None, seed: int = 0) -> list[T]:
    """The items a run works on: a seeded sample (wins over ``limit``) or the first ``limit``.

    Args:
        items: all items, in dataset order.
        limit: the first ``limit`` items.
        sample: a seeded random sample of this size (see :func:`seeded_sample`).
        seed: the sample's seed.

    Returns:
        The chosen items, in dataset order.
    """
    if sample is not None:
        return seeded_sample(items, sample, seed)
    return list(items[:limit]) if limit is not None else list(items)

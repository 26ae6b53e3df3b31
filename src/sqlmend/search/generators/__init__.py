"""The catalogue of repair generators, one module per generator (``GENERATOR`` in each).

    from sqlmend.search.generators import all_generators, for_types
    for gen in all_generators(): print(gen.name, gen.error_types)
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from sqlmend.errors import ConfigError
from sqlmend.search.generators.base import Candidate, Generator, SearchInput, each_edit

__all__ = ["Candidate", "Generator", "SearchInput", "all_generators", "each_edit", "for_types", "get"]

_NOT_GENERATORS = {"base"}


@lru_cache(maxsize=1)
def all_generators() -> tuple[Generator, ...]:
    """Every generator of the catalogue, ordered by name."""
    out = []
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_GENERATORS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        gen = getattr(module, "GENERATOR", None)
        if not isinstance(gen, Generator):
            raise ConfigError(f"generator module {info.name} has no GENERATOR")
        if gen.name != info.name:
            raise ConfigError(f"generator module {info.name} declares name {gen.name}")
        out.append(gen)
    return tuple(sorted(out, key=lambda g: g.name))


def get(name: str) -> Generator:
    """The generator called ``name``. Raises :class:`ConfigError` if there is none."""
    for gen in all_generators():
        if gen.name == name:
            return gen
    raise ConfigError(f"unknown generator {name!r}; known: {', '.join(g.name for g in all_generators())}")


def for_types(error_types: set[str] | list[str]) -> list[Generator]:
    """The generators that repair any of ``error_types`` (taxonomy ids)."""
    wanted = set(error_types)
    return [g for g in all_generators() if wanted & set(g.error_types)]

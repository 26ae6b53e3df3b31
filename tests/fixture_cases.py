"""One loader for catalogue fixtures (rules, repair generators): YAML files of cases."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml


def yaml_cases(folder: Path, key: str) -> list:
    """``pytest.param(entry, case)`` for every case of every ``*.yaml`` in ``folder``.

    Args:
        folder: the catalogue's fixture folder.
        key: the field naming the catalogue entry (``rule``, ``generator``).
    """
    out = []
    for path in sorted(folder.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        for i, case in enumerate(spec["cases"]):
            out.append(pytest.param(spec[key], case, id=f"{spec[key]}-{i}-{case['title'][:40]}"))
    return out

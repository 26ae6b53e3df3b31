"""The one loader of the SQL layer's test data (``tests/sql/fixtures/*.yaml``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

FIXTURES = Path(__file__).parent / "fixtures"


def cases(name: str) -> list:
    """``pytest.param`` per case of ``fixtures/<name>.yaml``, with the case's title as id.

    Args:
        name: the fixture file's stem.

    Returns:
        One ``pytest.param(case_dict, id=title)`` per entry of the file's ``cases`` list.
    """
    data = yaml.safe_load((FIXTURES / f"{name}.yaml").read_text())
    return [pytest.param(c, id=c["title"]) for c in data["cases"]]

"""Fixtures of the fault suite: a shared Spider-dev prediction file (the faults' tasks)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def pred(data_dir):
    return data_dir / "predictions" / "spider-dev" / "codes-1b.sql"

"""Time parse + normalize + features per query over a Spider split (``sqlmend bench sql``)."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlmend.errors import DatasetError, SqlmendError
from sqlmend.sql.features import features
from sqlmend.sql.normalize import QUOTED_STRINGS_KEY, normalize
from sqlmend.sql.parse import parse
from sqlmend.sql.schema import SchemaLike

STAGES = ("parse", "normalize", "features", "total")


@dataclass
class SqlBench:
    """Per-query timings (seconds) of each stage, and what failed."""

    queries: int = 0
    times: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STAGES})
    failures: list[tuple[int, str]] = field(default_factory=list)  # (index, error)
    quoted_strings: int = 0  # double-quoted tokens turned into string literals
    skipped: int = 0  # questions whose database is missing

    def summary(self) -> dict[str, dict[str, float]]:
        """``{stage: {mean_ms, median_ms, p95_ms, max_ms}}``."""
        out = {}
        for stage, values in self.times.items():
            if not values:
                continue
            ordered = sorted(values)
            out[stage] = {"mean_ms": 1000 * statistics.fmean(ordered),
                          "median_ms": 1000 * statistics.median(ordered),
                          "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
                          "max_ms": 1000 * ordered[-1]}
        return out


def bench_split(spider_dir: Path, split: str, schema_of: Callable[[Path], SchemaLike],
                progress: Callable | None = None) -> SqlBench:
    """Time the SQL layer on every gold query of a Spider split.

    Args:
        spider_dir: the Spider folder (holding ``<split>`` and ``database/``).
        split: ``dev.json`` or ``train_spider.json``.
        schema_of: reads a database's schema from its SQLite path (not timed).
        progress: wraps the item iterator (a progress bar), or ``None``.

    Returns:
        A :class:`SqlBench`.

    Raises:
        DatasetError: the split file cannot be read.
    """
    try:
        items = json.loads((spider_dir / split).read_text())
    except (OSError, ValueError) as e:
        raise DatasetError(f"cannot read {spider_dir / split}: {e}") from e
    schemas: dict[str, SchemaLike] = {}
    out = SqlBench()
    for i, item in enumerate(progress(items) if progress else items):
        db = item["db_id"]
        path = spider_dir / "database" / db / f"{db}.sqlite"
        if not path.exists():
            out.skipped += 1
            continue
        if db not in schemas:
            schemas[db] = schema_of(path)
        out.queries += 1
        try:
            t0 = time.perf_counter()
            tree = parse(item["query"])
            t1 = time.perf_counter()
            norm = normalize(tree, schemas[db])
            t2 = time.perf_counter()
            features(tree, schemas[db])
            t3 = time.perf_counter()
        except SqlmendError as e:
            out.failures.append((i, f"{type(e).__name__}: {e}"))
            continue
        out.quoted_strings += norm.meta.get(QUOTED_STRINGS_KEY, 0)
        for stage, value in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
            out.times[stage].append(value)
    return out

"""How fast the value index is built, loaded from its cache and asked (``sqlmend bench values``).

For each database: the build time (reading every column's distinct text
values), the time to load the cached index from disk, and the latency of
lookups in every mode. Lookup probes are derived from values really stored
(a deterministic sample), disguised the way a mode is meant to undo
(upper case for ``ci``, padding for ``trim``, a plural ``s``, the first two
letters for ``prefix``, two swapped letters for ``approx``), so the hit rate
says whether each mode finds what it should.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlmend.db import connect
from sqlmend.db.values import ValueIndex


def _swap(v: str) -> str:
    i = len(v) // 2
    return v[:i - 1] + v[i] + v[i - 1] + v[i + 1:] if len(v) >= 4 else v


#: mode -> how a stored value is disguised before the lookup.
PROBES: dict[str, Callable[[str], str]] = {
    "exact": lambda v: v,
    "ci": str.upper,
    "trim": lambda v: f"  {v} ",
    "plural": lambda v: v + "s",
    "prefix": lambda v: v[:2],
    "approx": _swap,
}


@dataclass
class ValueBench:
    """Results over several databases (times in seconds, latencies in microseconds)."""

    databases: list[str] = field(default_factory=list)
    build_seconds: dict[str, float] = field(default_factory=dict)
    load_seconds: dict[str, float] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)
    latencies: dict[str, list[float]] = field(default_factory=dict)  # mode -> µs per call
    hits: dict[str, list[bool]] = field(default_factory=dict)  # mode -> found the stored value

    def summary(self) -> dict[str, dict[str, float]]:
        """Return per-mode ``{calls, median_us, p95_us, max_us, hit_rate}``."""
        out = {}
        for mode, lat in self.latencies.items():
            ordered = sorted(lat)
            out[mode] = {
                "calls": len(lat),
                "median_us": statistics.median(ordered),
                "p95_us": ordered[int(0.95 * (len(ordered) - 1))],
                "max_us": ordered[-1],
                "hit_rate": sum(self.hits[mode]) / len(self.hits[mode]) if self.hits[mode] else 0.0,
            }
        return out


SPLIT_FILES = {"dev": "dev.json", "train": "train_spider.json"}


def spider_databases(spider_dir: Path, split: str) -> tuple[list[str], list[Path]]:
    """The database ids a Spider split uses, and the files of those present.

    Args:
        spider_dir: the Spider folder (holding the split file and ``database/``).
        split: ``dev`` or ``train``.

    Returns:
        ``(ids, present files)``; ids are sorted, a missing database has no file.

    Raises:
        ConfigError: an unknown split. DatasetError: the split file cannot be read.
    """
    from sqlmend.db import benchmark_db
    from sqlmend.errors import ConfigError, DatasetError, SqlmendError

    file = SPLIT_FILES.get(split)
    if file is None:
        raise ConfigError(f"unknown Spider split {split!r}: dev or train")
    try:
        ids = sorted({x["db_id"] for x in json.loads((spider_dir / file).read_text())})
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DatasetError(f"cannot read {spider_dir / file}: {e}") from None
    present = []
    for db_id in ids:
        try:
            present.append(benchmark_db(spider_dir / "database", db_id))
        except SqlmendError:  # absent
            continue
    return ids, present


def bench_values(paths: Iterable[Path], probes_per_db: int = 50, repeat: int = 5, seed: int = 0,
                 progress: Callable[[Iterable], Iterable] | None = None) -> ValueBench:
    """Measure build, cache load and lookup latency of the value index of each database.

    Args:
        paths: database files (or URLs).
        probes_per_db: stored values sampled per database as lookup probes.
        repeat: times each lookup is repeated (the median of the repeats is kept).
        seed: random seed of the sample.
        progress: wraps the iterable of paths (e.g. ``tqdm``).

    Returns:
        The measurements.
    """
    result = ValueBench()
    rng = random.Random(seed)
    items = list(paths)
    with tempfile.TemporaryDirectory(prefix="sqlmend-values-") as tmp:
        for path in (progress(items) if progress else items):
            name = Path(str(path)).stem
            with connect(path) as db:
                db.schema()  # introspection is not part of the index build
                start = time.perf_counter()
                index = ValueIndex.build(db)
                result.build_seconds[name] = time.perf_counter() - start
            cache = Path(tmp) / f"{name}.json"
            index.save(cache)
            start = time.perf_counter()
            index = ValueIndex.load(cache)
            result.load_seconds[name] = time.perf_counter() - start
            result.databases.append(name)
            result.values[name] = int(index.stats()["values"])
            _probe(index, rng, probes_per_db, repeat, result)
    return result


def _probe(index: ValueIndex, rng: random.Random, n: int, repeat: int, result: ValueBench) -> None:
    pool = [(t, c, v) for t, c in index.columns() for v in index.values(t, c) if 2 <= len(v) <= 60]
    for table, column, value in rng.sample(pool, min(n, len(pool))):
        for mode, disguise in PROBES.items():
            probe = disguise(value)
            _time(result, mode, lambda: index.find(table, column, probe, mode=mode), value, repeat)
        _time(result, "search(ci)", lambda: [m.value for m in index.search(value.lower(), mode="ci")],
              value, repeat)
        _time(result, "contains", lambda: [value] if index.contains(table, column, value) else [],
              value, repeat)


def _time(result: ValueBench, mode: str, call: Callable[[], list[str]], value: str, repeat: int) -> None:
    found = call()  # warm
    runs = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        call()
        runs.append((time.perf_counter_ns() - start) / 1000)
    result.latencies.setdefault(mode, []).append(statistics.median(runs))
    result.hits.setdefault(mode, []).append(value in found)

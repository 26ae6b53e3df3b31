"""``time_evaluation``: every way gives the same counts, each best run carries its CPU time."""

from __future__ import annotations

from sqlmend.bench.speed import WAYS, time_evaluation
from sqlmend.data import Dataset


def test_all_ways_agree_on_a_slice_of_spider_dev(spider_dev, pred_dir, tmp_path):
    n = 60
    ds = Dataset(name="spider-dev-head", tasks=spider_dev.tasks[:n], db_root=spider_dev.db_root)
    files = []
    for name in ("din-sql_gpt-4.sql", "gpt-4_zero-shot.sql"):
        head = (pred_dir / name).read_text().splitlines()[:n]
        files.append(tmp_path / name)
        files[-1].write_text("\n".join(head) + "\n")
    res = time_evaluation(ds, files, timeout=10.0, workers=2, repeat=2)
    assert res.predictions == 2 * n and res.repeat == 2
    assert set(res.counts) == set(WAYS) == set(res.cpu)
    for way in WAYS:
        assert res.counts[way] == res.counts["plain"], way
        # CPU time is counted in clock ticks (10 ms): a run of a few ms may read 0
        assert getattr(res, way) > 0 and res.cpu[way] >= 0
    assert 0 < res.counts["plain"]["din-sql_gpt-4.sql"] <= n
    assert res.ratio("warm") == res.warm / res.plain
    assert res.to_dict()["cpu_s"].keys() == set(WAYS)

"""``sqlmend bench fuzz``: a CI-sized run finds nothing, a seed gives the same examples, the last line."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from sqlmend.stress.fuzz import Fuzzer, load_seeds, make_example, markdown, run_fuzz
from sqlmend.cli import app

LINE = re.compile(r"examples (\d+), unhandled (\d+), changed databases (\d+), past limit (\d+), seconds (\d+)")


@pytest.mark.slow
def test_a_ci_sized_run_finds_nothing(tmp_path, spider_dir):
    report = run_fuzz(300, 0, tmp_path / "work", spider_dir)
    assert report.ok(), markdown(report)
    assert report.examples == 300 and set(report.doors) == {"api", "check", "http", "file"}
    assert 0 < report.max_work <= report.work_limit


def test_a_seed_gives_the_same_examples(spider_dir):
    seeds = load_seeds(spider_dir)
    one = [make_example(seeds, 5, i) for i in range(200)]
    assert one == [make_example(seeds, 5, i) for i in range(200)]
    assert one != [make_example(seeds, 6, i) for i in range(200)]
    assert make_example(seeds, 5, 150) == one[150]  # one example replays alone


def test_the_command_ends_with_its_line(tmp_path):
    r = CliRunner().invoke(app, ["bench", "fuzz", "--examples", "40", "--seed", "1", "--data-root",
                                 str(tmp_path / "none"), "--out", str(tmp_path / "out"), "-q"])
    assert r.exit_code == 0, r.output
    last = r.stdout.strip().splitlines()[-1]
    assert LINE.fullmatch(last), last
    assert LINE.fullmatch(last).groups()[:4] == ("40", "0", "0", "0")
    assert (tmp_path / "out" / "report.json").is_file()


def test_the_databases_are_private_copies(tmp_path, spider_dir):
    fuzzer = Fuzzer(tmp_path / "work", spider_dir, databases=("concert_singer",))
    try:
        assert sorted(fuzzer.paths) == ["concert_singer", "fuzz"]
        assert all(tmp_path in p.parents for p in fuzzer.paths.values())
    finally:
        for db in fuzzer.dbs.values():
            db.close()

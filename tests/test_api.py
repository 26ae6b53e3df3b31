"""The Python API (``sqlmend.Corrector``) on real Spider databases, and the README's example."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import sqlmend

QUESTION = "How many singers are from France?"
WRONG = "SELECT count(*) FROM singer WHERE country = 'france'"
FIXED = "SELECT COUNT(*) FROM singer WHERE country = 'France'"

#: concert_singer questions: wrong literals the static stage fixes, correct queries, a refusal,
#: an unknown column (the repair search runs many queries on the connection), an empty SQL.
ITEMS = [
    (QUESTION, WRONG),
    ("Songs of singers from the United States?", "SELECT Song_Name FROM singer WHERE Country = 'united states'"),
    ("How many singers?", "SELECT count(*) FROM singer"),
    ("Names of singers older than 40?", "SELECT Name FROM singer WHERE Age > 40"),
    ("Singers from the Netherlands?", "SELECT Name FROM singer WHERE Country = 'netherlands'"),
    ("Concerts in 2014?", "SELECT concert_Name FROM concert WHERE Year = 2014"),
    ("What is the name of each singer?", "SELECT nope FROM singer"),
    ("Delete the singers.", "DELETE FROM singer"),
    ("Stadium capacities?", "SELECT Name, Capacity FROM stadium ORDER BY Capacity DESC"),
    ("Nothing?", ""),
]


@pytest.fixture(scope="module")
def fixer(spider_db):
    with sqlmend.Corrector(spider_db("concert_singer")) as c:
        yield c


def _outcome(r) -> tuple:
    """What a result decided, without its timings."""
    return (r.correction.question_id, r.sql, r.changed, r.error, [f.code for f in r.findings],
            [(s.stage, s.status, s.note) for s in r.stages])


def test_importing_sqlmend_loads_no_pipeline():
    code = "import sys, sqlmend; print(sorted(m for m in sys.modules if m.startswith('sqlmend')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['sqlmend']"
    assert "Corrector" in dir(sqlmend) and (Path(sqlmend.__file__).parent / "py.typed").is_file()
    with pytest.raises(AttributeError):
        sqlmend.NoSuchName  # noqa: B018


def test_correct_fixes_a_wrong_literal_and_explains_why(fixer):
    r = fixer.correct(QUESTION, WRONG)
    assert (r.sql, r.original_sql, r.changed, r.error, r.refused) == (FIXED, WRONG, True, None, False)
    assert [f.code for f in r.findings] == ["VL01"] and r.findings[0].error_type == "value_error"
    assert [s.stage for s in r.stages] == ["static", "memory", "search", "refine", "guard"]
    text = r.explain()
    assert text.startswith("static ran: 1 finding(s), 1 strict; rewrite accepted")
    assert "VL01 value_error" in text and "singer.Country holds 'France'" in text
    assert text.endswith(f"corrected: {FIXED}")
    assert r.to_dict()["changed"] is True
    unchanged = fixer.correct("How many singers?", "SELECT count(*) FROM singer")
    assert not unchanged.changed and unchanged.explain().endswith("unchanged: SELECT count(*) FROM singer")


def test_check_reports_findings_and_rewrites_nothing(fixer):
    r = fixer.check(QUESTION, WRONG, evidence="France is a country")
    assert r.sql == WRONG and r.wrong and not r.refused and r.error is None
    assert [f.code for f in r.findings] == ["VL01"]
    assert [s.stage for s in r.stages] == ["static", "memory"]  # the detecting stages of the configuration
    assert f"suggested by VL01 (strict, not applied): {FIXED}" in r.explain()
    clean = fixer.check("How many singers?", "SELECT count(*) FROM singer")
    assert not clean.wrong and clean.explain().endswith("0 finding(s): nothing found")


def test_correct_many_keeps_the_input_order_and_equals_one_by_one(fixer):
    items = [{"question": q, "sql": s} if i % 2 else (q, s) for i, (q, s) in enumerate(ITEMS)]
    many = fixer.correct_many(items, workers=4)
    assert [r.correction.question_id for r in many] == [str(i) for i in range(len(ITEMS))]
    assert [r.original_sql for r in many] == [s for _, s in ITEMS]
    one_by_one = [fixer.correct(q, s, question_id=str(i)) for i, (q, s) in enumerate(ITEMS)]
    assert [_outcome(r) for r in many] == [_outcome(r) for r in one_by_one]
    assert many[0].sql == FIXED and many[1].sql.endswith("'United States'") and many[2].sql == ITEMS[2][1]
    with pytest.raises(sqlmend.ConfigError, match="item 1"):
        fixer.correct_many([(QUESTION, WRONG), {"sql": "SELECT 1"}])


@pytest.mark.timeout(300)  # one connection shared by every thread does not answer wrong: it hangs
def test_threads_sharing_one_corrector_answer_as_sequential_calls(spider_db):
    with sqlmend.Corrector(spider_db("concert_singer")) as shared:
        sequential = [_outcome(shared.correct(q, s, question_id=str(i))) for i, (q, s) in enumerate(ITEMS)]
        start = threading.Barrier(len(ITEMS))
        answers: dict[int, tuple] = {}

        def work(i: int) -> None:
            start.wait()  # every thread calls at the same moment
            for _ in range(2):
                answers.setdefault(i, _outcome(shared.correct(*ITEMS[i], question_id=str(i))))
                assert _outcome(shared.correct(*ITEMS[i], question_id=str(i))) == answers[i]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(ITEMS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [answers[i] for i in range(len(ITEMS))] == sequential
        assert len(shared._pool._idle) > 1  # the calls overlapped: each ran on a connection of its own


def test_a_missing_database_or_a_bad_setting_raises_at_construction(tmp_path, spider_db):
    with pytest.raises(sqlmend.DatabaseNotFoundError, match="no SQLite database"):
        sqlmend.Corrector(tmp_path / "nope.sqlite")
    with pytest.raises(sqlmend.ConfigError, match="unknown stage"):
        sqlmend.Corrector(spider_db("concert_singer"), stages="static,nonsense")
    with pytest.raises(sqlmend.ConfigError, match="unknown option"):
        sqlmend.Corrector(spider_db("concert_singer"), options={"static": {"nonsense": 1}})


def test_garbage_and_empty_sql_come_back_as_results_not_exceptions(fixer):
    garbage, empty, fine = fixer.correct_many([("q", "SELEC name FROM ((("), ("q", "   "), (QUESTION, WRONG)])
    assert garbage.sql == "SELEC name FROM (((" and not garbage.changed and garbage.refused
    assert [f.code for f in garbage.findings] == ["EX03"] and "refused" in garbage.explain()
    assert empty.error == "empty SQL" and empty.sql == "   " and "error: empty SQL" in empty.explain()
    assert fine.sql == FIXED


def test_settings_reach_the_pipeline(spider_db, tmp_path):
    c = sqlmend.Corrector(spider_db("concert_singer"), stages=["static", "guard"], timeout=5,
                          memory_store=tmp_path, options={"refine": {"shots": 0}}, models={"refiner": "local-smollm2"})
    assert c.config.stage_names() == ["static", "guard"] and c.config.timeout == 5
    assert c.config.options == {"memory": {"store": str(tmp_path)}, "refine": {"shots": 0}}
    assert c.config.models == ["refiner=local-smollm2"] and c.db_id == "concert_singer"
    assert [s.stage for s in c.correct(QUESTION, WRONG).stages] == ["static", "guard"]
    c.close()
    c.close()
    assert c.correct(QUESTION, WRONG).sql == FIXED  # a closed Corrector still answers (without pooling)


def test_a_database_file_replaced_or_deleted_under_the_corrector(tmp_path, spider_db):
    path = tmp_path / "concert_singer.sqlite"
    shutil.copy(spider_db("concert_singer"), path)
    with sqlmend.Corrector(path, stages="static,guard") as c:
        assert c.correct(QUESTION, WRONG).sql == FIXED
        shutil.copy(spider_db("pets_1"), tmp_path / "other.sqlite")
        (tmp_path / "other.sqlite").replace(path)  # another database under the same name
        r = c.correct(QUESTION, WRONG)
        assert not r.changed and r.error is None and [f.code for f in r.findings] == ["TB01"]  # no table singer
        path.unlink()
        gone = c.correct(QUESTION, WRONG)
        assert gone.sql == WRONG and gone.error.startswith("DatabaseNotFoundError")


def test_correctors_share_one_pipeline_across_databases(spider_db):
    from sqlmend.api import Correctors
    from sqlmend.pipeline import Pipeline, PipelineConfig

    pool = Correctors(Pipeline(PipelineConfig(stages=["static", "guard"])), size=1)
    first = pool.get(str(spider_db("concert_singer")))
    assert pool.get(str(spider_db("concert_singer"))) is first
    assert first.correct(QUESTION, WRONG).sql == FIXED
    pets = pool.get(str(spider_db("pets_1")))  # past size: concert_singer's is closed
    assert pets.pipeline is first.pipeline and pets.checker is first.checker
    assert pool.get(str(spider_db("concert_singer"))) is not first
    pool.close()


def _readme_example() -> str:
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## In Python\n(.*?)(?=^## )", text, re.M | re.S)
    assert section, "README.md has no '## In Python' section"
    blocks = re.findall(r"```python\n(.*?)```", section.group(1), re.S)
    assert len(blocks) == 1, "the '## In Python' section holds one python block"
    return blocks[0]


def test_the_readme_example_runs(spider_dir):
    code = _readme_example()
    named = re.search(r'Corrector\("([^"]+)"', code)
    assert named, "the README example makes a Corrector from a database path"
    db_id = Path(named.group(1)).stem
    real = spider_dir / "database" / db_id / f"{db_id}.sqlite"
    namespace: dict = {}
    exec(compile(code.replace(named.group(1), str(real)), "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.changed and result.findings and result.explain().splitlines()[-1] == f"corrected: {result.sql}"


def test_the_corrector_shows_the_database_as_the_stages_see_it(spider_db):
    with sqlmend.Corrector(spider_db("concert_singer"), stages="static") as fixer:
        assert fixer.schema().table("singer").primary_key == ["Singer_ID"]
        assert "France" in fixer.value_index().values("singer", "Country")

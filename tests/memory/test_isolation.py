"""Isolation (MIRA §3.2.2) on real Spider dev corrections that once failed to isolate.

Each case is a wrong prediction of a shared Spider-dev file with its gold: every
edit group must revert alone, re-parse, execute and be the only difference.
"""

from __future__ import annotations

import pytest

from sqlmend.db import connect
from sqlmend.memory.build import _normalized
from sqlmend.memory.edits import extract_edits, group_edits
from sqlmend.memory.isolation import isolate

CASES = [
    pytest.param("course_teach",  # an ORDER BY on an output alias the repair drops (dev #396)
                 "SELECT Hometown, COUNT(*) as count FROM teacher GROUP BY Hometown ORDER BY count DESC LIMIT 1",
                 "SELECT Hometown FROM teacher GROUP BY Hometown ORDER BY COUNT(*) DESC LIMIT 1", 1, id="order-alias"),
    pytest.param("tvshow",  # a moved projection: one group, not two halves (dev #627)
                 "SELECT Directed_by, COUNT(*) FROM Cartoon GROUP BY Directed_by",
                 "SELECT count(*) ,  Directed_by FROM cartoon GROUP BY Directed_by", 1, id="moved-projection"),
    pytest.param("dog_kennels",  # GROUP BY adds a column the SELECT also has, with its HAVING (dev #943)
                 "SELECT T2.professional_id, T2.cell_number FROM Professionals AS T2 WHERE T2.professional_id IN "
                 "(SELECT T1.professional_id FROM Treatments AS T1 GROUP BY T1.professional_id "
                 "HAVING COUNT(DISTINCT T1.treatment_type_code) >= 2)",
                 "SELECT T1.professional_id ,  T1.cell_number FROM Professionals AS T1 JOIN Treatments AS T2 "
                 "ON T1.professional_id  =  T2.professional_id GROUP BY T1.professional_id HAVING count(*)  >=  2",
                 2, id="clause-scoped"),
    pytest.param("car_1",  # the edit is in the right arm of an INTERSECT (dev #175)
                 "SELECT T1.Id, T1.Maker FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker GROUP BY T1.Id "
                 "HAVING COUNT(*) >= 2 INTERSECT SELECT T1.Id, T1.Maker FROM car_makers AS T1 JOIN countries AS T2 "
                 "ON T1.Country = T2.CountryId GROUP BY T2.CountryId HAVING COUNT(*) > 3",
                 "select t1.id ,  t1.maker from car_makers as t1 join model_list as t2 on t1.id  =  t2.maker "
                 "group by t1.id having count(*)  >=  2 intersect select t1.id ,  t1.maker from car_makers as t1 "
                 "join model_list as t2 on t1.id  =  t2.maker join car_names as t3 on t2.model  =  t3.model "
                 "group by t1.id having count(*)  >  3", 1, id="set-operation-arm"),
    pytest.param("student_transcripts_tracking",  # ORDER BY a column the qualifier had named (dev #580)
                 "SELECT other_student_details FROM Students ORDER BY last_name DESC",
                 "SELECT other_student_details FROM Students ORDER BY other_student_details DESC", 1, id="order-name"),
]


@pytest.mark.parametrize("db_id,wrong,gold,n_groups", CASES)
def test_every_group_isolates_on_real_corrections(spider_db, db_id, wrong, gold, n_groups):
    with connect(spider_db(db_id)) as db:
        schema = db.schema()
        wrong_n, repair_n = _normalized(wrong, schema, "sqlite"), _normalized(gold, schema, "sqlite")
        assert "_col_" not in wrong_n + repair_n
        groups = group_edits(extract_edits(wrong_n, repair_n, schema=schema))
        assert len(groups) == n_groups
        for group in groups:
            iso = isolate(repair_n, group, schema=schema)
            assert iso.valid, iso.problem
            db.execute(iso.reverted_sql, timeout=10)  # the reverted query runs


def test_reverting_every_group_gives_back_the_wrong_query(spider_db):
    """With the whole difference as one group (no decomposition), s^{¬g} is s- itself."""
    _, wrong, gold, _ = CASES[2].values
    with connect(spider_db("dog_kennels")) as db:
        schema = db.schema()
        wrong_n, repair_n = _normalized(wrong, schema, "sqlite"), _normalized(gold, schema, "sqlite")
        [group] = group_edits(extract_edits(wrong_n, repair_n, schema=schema), decompose=False)
        iso = isolate(repair_n, group, schema=schema)
        assert iso.valid and extract_edits(iso.reverted_sql, wrong_n, schema=schema) == []

"""Every rule's fixture cases (pass / fail / expected fix), run on the real Spider databases."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sqlmend import rules
from sqlmend.rules import RuleContext, engine

FIXTURES = Path(rules.__file__).with_name("fixtures")


def _cases():
    for path in sorted(FIXTURES.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        for i, case in enumerate(spec["cases"]):
            yield pytest.param(spec["rule"], case, id=f"{spec['rule']}-{i}-{case['title'][:40]}")


@pytest.fixture(scope="module")
def open_db(spider_db):
    from sqlmend.db import connect

    conns = {}

    def get(db_id: str):
        if db_id not in conns:
            conns[db_id] = connect(str(spider_db(db_id)))
        return conns[db_id]

    yield get
    for c in conns.values():
        c.close()


@pytest.mark.parametrize(("code", "case"), list(_cases()))
def test_fixture(code, case, open_db):
    db = open_db(case["db"])
    rule = rules.get(code)
    text = case.get("fail") or case["pass"]
    findings = rule.check(RuleContext(db, text))
    if "pass" in case:
        assert findings == [], [f.message for f in findings]
        return
    assert findings, f"{code} found nothing in {text!r}"
    assert all(f.code == code and f.evidence for f in findings)
    fixes = [fx for f in findings for fx in f.fixes]
    if "fix" in case:
        assert engine.apply(text, fixes) == case["fix"]
    else:
        assert fixes == [], "no fix is proven for this case"

"""Every rule's fixture cases (pass / fail / expected fix), run on the real Spider databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_cases import yaml_cases

from sqlmend import rules
from sqlmend.rules import RuleContext, engine

FIXTURES = Path(rules.__file__).with_name("fixtures")


@pytest.mark.parametrize(("code", "case"), yaml_cases(FIXTURES, "rule"))
def test_fixture(code, case, spider_conn):
    db = spider_conn(case["db"])
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

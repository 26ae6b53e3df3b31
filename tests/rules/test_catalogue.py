"""The catalogue's own rules: every rule is documented, mapped to the taxonomy and has fixtures."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml

from sqlmend import rules, taxonomy
from sqlmend.rules.base import FAMILIES

FIXTURES = Path(rules.__file__).with_name("fixtures")


def test_catalogue_is_not_empty_and_codes_are_unique():
    codes = [r.code for r in rules.all_rules()]
    assert len(codes) >= 10 and len(set(codes)) == len(codes)


@pytest.mark.parametrize("rule", rules.all_rules(), ids=lambda r: r.code)
def test_rule_is_documented_and_mapped(rule):
    assert re.fullmatch(r"[A-Z]{2}\d{2}", rule.code) and rule.family in FAMILIES
    taxonomy.get(rule.error_type)
    assert rule.severity in ("strict", "advisory")
    doc = inspect.getdoc(rule)
    assert doc and len(doc.splitlines()[0]) > 20, "first docstring line is the message"
    assert "Anti-pattern::" in doc and "Fixed::" in doc


@pytest.mark.parametrize("rule", rules.all_rules(), ids=lambda r: r.code)
def test_rule_has_fixtures_that_fail_and_pass(rule):
    path = FIXTURES / f"{rule.code}.yaml"
    assert path.exists(), f"missing {path.name}"
    spec = yaml.safe_load(path.read_text())
    assert spec["rule"] == rule.code
    kinds = {k for case in spec["cases"] for k in ("pass", "fail") if k in case}
    assert kinds == {"pass", "fail"}
    if rule.fixable:
        assert any("fix" in case for case in spec["cases"]), "a fixable rule shows a fix"


def test_strict_needs_measured_precision():
    rule = rules.get("VL01")
    low = {"rules": {"VL01": {"precision_clean": 0.9}}}
    high = {"rules": {"VL01": {"precision_clean": 0.999}}}
    assert rules.effective_severity(rule, low) == "advisory"
    assert rules.effective_severity(rule, high) == "strict"
    assert rules.effective_severity(rules.get("VL04"), high) == "advisory"


def test_a_fixing_rule_is_strict_by_what_its_fix_does():
    # VL01 flagged correct queries (detection precision 0.9) whose own fix kept them correct
    rule = rules.get("VL01")
    kept = {"rules": {"VL01": {"precision_clean": 0.9, "act_precision_clean": 1.0}}}
    lost = {"rules": {"VL01": {"precision_clean": 0.9, "act_precision_clean": 0.95}}}
    assert rules.effective_severity(rule, kept) == "strict"
    assert rules.severity_reason(rule, lost) == "below 99.5%"
    # a rule without fixes is judged by its detection precision alone
    assert not rules.get("EX02").fixable
    silent = {"rules": {"EX02": {"precision_clean": 0.9, "act_precision_clean": 1.0}}}
    assert rules.severity_reason(rules.get("EX02"), silent) == "below 99.5%"


def test_unmeasured_or_silent_rules_are_advisory():
    rule = rules.get("VL01")
    assert rules.effective_severity(rule, {}) == "advisory"
    assert rules.severity_reason(rule, {}) == "unmeasured"
    silent = {"rules": {"VL01": {"precision_clean": None, "flagged_clean": 0}}}
    assert rules.effective_severity(rule, silent) == "advisory"
    assert rules.severity_reason(rule, {"rules": {"VL01": {"precision_clean": 0.9}}}) == "below 99.5%"


def test_two_benchmarks_write_one_precision_file_without_erasing_each_other():
    static = {"date": "d1", "rules": {"VL01": {"precision_clean": 1.0, "flagged_all": 37},
                                      "EX04": {"precision_clean": None, "flagged_all": 0}}}
    dialects = {"rules": {"EX04": {"act_precision_clean": 1.0, "flagged_all": 500, "measured_by": "bench dialects"}}}
    merged = rules.merge_measured(static, dialects)
    assert merged["rules"]["EX04"]["flagged_all"] == 500 and merged["rules"]["VL01"]["flagged_all"] == 37
    again = rules.merge_measured(merged, static)  # bench static again: EX04 flagged nothing there
    assert again["rules"]["EX04"]["measured_by"] == "bench dialects" and again["date"] == "d1"


def test_the_rules_for_other_dialects_and_literal_forms_act_by_their_measurement():
    # measured on Spider-train variants by `sqlmend bench dialects --write-precision` (the five prediction
    # files never exercise them); EX05 reports a raw answer and fixes nothing
    for code in ("EX04", "CD02", "VL10", "VL11", "VL12", "VL13"):
        entry = rules.measured()["rules"][code]
        assert entry["measured_by"] == "bench dialects" and entry["dataset"] == "spider-train"
        assert rules.effective_severity(rules.get(code)) == "strict", code
    assert rules.effective_severity(rules.get("EX05")) == "advisory"

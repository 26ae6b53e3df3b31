"""Static detection: a catalogue of rules proven by the schema and the data (ErrorLLM §3.2).

Each rule lives in ``sqlmend/rules/catalogue/<CODE>.py`` and exposes ``RULE``;
its findings carry evidence and fixes as data, applied by the one fix engine (:mod:`sqlmend.sql.fixes`).

    from sqlmend import rules
    findings = rules.check(db, "SELECT ...")          # list[types.Finding]
    for rule in rules.all_rules(): print(rule.code, rule.severity)

A rule is *strict* (its fixes may be applied automatically) only if declared so
and its measured precision on gold-clean questions is at least
:data:`STRICT_PRECISION`; a rule never measured, or one that flagged nothing
when measured, is advisory: its findings are hints for later stages. For a
rule that fixes, the precision measured is its *act precision*: a flag on a
correct query counts against it only when the rule's own fix turns that query
wrong (``sqlmend bench static`` measures both; files without it fall back to
the detection precision).

The measurements are data: the package ships ``rules/precision.json`` (the
default, measured on the five Spider-dev prediction files); a file of your own
(``sqlmend bench static --write-precision`` writes one under the cache folder)
is used when ``$SQLMEND_RULES_PRECISION`` names it. The package is never written to.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlmend.errors import ConfigError
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.types import Finding, split_ref

#: Measured precision (on gold-clean questions) a rule needs to act as strict.
STRICT_PRECISION = 0.995
#: The measured precision shipped with the package (read when no other file is named).
PRECISION_FILE = Path(__file__).with_name("precision.json")
#: Why a rule is strict: its measured precision, or it finds only queries the engine refuses.
MEASURED = "measured"
REFUSED_ONLY = "finds only queries the engine refuses"
#: Environment variable naming a measured-precision file to use instead of :data:`PRECISION_FILE`.
PRECISION_ENV = "SQLMEND_RULES_PRECISION"

__all__ = ["Rule", "RuleContext", "all_rules", "get", "check", "measured", "merge_measured", "precision_file",
           "effective_severity", "severity_reason", "STRICT_PRECISION", "PRECISION_FILE", "PRECISION_ENV"]


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Return every rule of the catalogue, ordered by code."""
    package = importlib.import_module("sqlmend.rules.catalogue")
    rules = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        rule = getattr(module, "RULE", None)
        if isinstance(rule, Rule):
            if rule.code != info.name:
                raise ConfigError(f"rule module {info.name} declares code {rule.code}")
            rules.append(rule)
    return tuple(sorted(rules, key=lambda r: r.code))


def get(code: str) -> Rule:
    """Return the rule with this code. Raises :class:`ConfigError` if there is none."""
    for rule in all_rules():
        if rule.code == code.upper():
            return rule
    raise ConfigError(f"unknown rule {code!r}; known: {', '.join(r.code for r in all_rules())}")


def precision_file() -> Path:
    """The measured-precision file in use: ``$SQLMEND_RULES_PRECISION`` if set, else the packaged one.

    Raises:
        ConfigError: ``$SQLMEND_RULES_PRECISION`` names a file that does not exist.
    """
    named = os.environ.get(PRECISION_ENV)
    if not named:
        return PRECISION_FILE
    path = Path(named).expanduser()
    if not path.is_file():
        raise ConfigError(f"{PRECISION_ENV}={named} is not a file (write one with "
                          "`sqlmend bench static --write-precision`)")
    return path


def measured() -> dict[str, Any]:
    """Return the stored measurements (``{"rules": {code: {...}}, ...}``; empty when none).

    The file is read once per version (its path, size and modification time), not per query.
    """
    path = precision_file()
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}
    return _read_measured(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _read_measured(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def merge_measured(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A precision file's content with ``new`` measurements written over ``old`` ones, rule by rule.

    Two benchmarks write the file: ``sqlmend bench static`` (the five prediction files, every rule)
    and ``sqlmend bench dialects`` (Spider train, the rules those files never exercise; its entries
    say ``"measured_by": "bench dialects"``). A rule ``new`` measured nothing for (no flag) keeps
    the measurement ``old`` has of it, so neither benchmark erases the other's.

    Args:
        old: the file's content now (``{}`` when there is none).
        new: a benchmark's record (``{"rules": {code: {...}}, ...}``, top-level fields optional).

    Returns:
        The merged content: ``new``'s top-level fields, ``old``'s rules updated.
    """
    merged = {**old, **{k: v for k, v in new.items() if k != "rules"}}
    out = dict(old.get("rules", {}))
    for code, m in new.get("rules", {}).items():
        if m.get("flagged_all") or m.get("flagged_clean") or code not in out:
            out[code] = m
    merged["rules"] = dict(sorted(out.items()))
    return merged


def effective_severity(rule: Rule, measurements: dict[str, Any] | None = None) -> str:
    """The severity a rule acts with: strict only if declared so and measured precise enough.

    Args:
        rule: the rule.
        measurements: the stored measurements (read from :data:`PRECISION_FILE` when omitted).

    Returns:
        ``"strict"`` or ``"advisory"`` (unmeasured rules, and rules that flagged
        nothing when measured, are advisory).
    """
    return "strict" if severity_reason(rule, measurements) in (MEASURED, REFUSED_ONLY) else "advisory"


def severity_reason(rule: Rule, measurements: dict[str, Any] | None = None) -> str:
    """Why a rule acts with its severity.

    Args:
        rule: the rule.
        measurements: the stored measurements (read from :data:`PRECISION_FILE` when omitted).

    Returns:
        ``"declared advisory"``, ``"unmeasured"`` (never measured, or flagged
        nothing), ``"below 99.5%"``, ``"measured"`` (strict) or, for an unmeasured rule that finds
        only queries the engine refuses (``Rule.refused_only``), :data:`REFUSED_ONLY` (strict: no
        query it flags is right, so none it fixes can be made wrong).
    """
    if rule.severity != "strict":
        return "declared advisory"
    m = (measurements if measurements is not None else measured()).get("rules", {}).get(rule.code) or {}
    precision = m.get("act_precision_clean") if rule.fixable and m.get("act_precision_clean") is not None \
        else m.get("precision_clean")
    if precision is None:
        return REFUSED_ONLY if rule.refused_only else "unmeasured"
    if precision < STRICT_PRECISION:
        return f"below {100 * STRICT_PRECISION:g}%"
    return MEASURED


def check(db: Any, sql_text: str, question: str = "", *, codes: list[str] | None = None,
          timeout: float = 10.0, context: RuleContext | None = None) -> list[Finding]:
    """Run the catalogue on one query.

    Args:
        db: an open database (``sqlmend.db.connect``).
        sql_text: the query.
        question: the natural-language question.
        codes: run only these rules (all when omitted).
        timeout: seconds the query and each probe may run.
        context: a prepared context (its query wins over ``sql_text``).

    Returns:
        The findings, in catalogue order, with their effective severity.
    """
    ctx = context or RuleContext(db, sql_text, question, timeout=timeout)
    wanted = {c.upper() for c in codes} if codes else None
    measurements = measured()
    out: list[Finding] = []
    for rule in all_rules():
        if wanted is not None and rule.code not in wanted:
            continue
        severity = effective_severity(rule, measurements)
        for finding in rule.check(ctx):
            finding.severity = severity
            _mark_views(finding, ctx.schema)
            out.append(finding)
    return out


def _mark_views(finding: Finding, schema: Any) -> None:
    """Name, in the finding's evidence (``views``: ``{name: kind}``), the views and materialized views
    among the relations it is about, so that the trace tells a view from a table."""
    views = {}
    for ref in finding.schema_refs:
        table = schema.table(ref) or schema.table(split_ref(ref)[0])
        if table is not None and table.kind != "table":
            views[table.name] = table.kind
    if views:
        finding.evidence["views"] = views

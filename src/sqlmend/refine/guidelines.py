"""Guideline templates per error type and the priority order of errors (ErrorLLM §3.3).

Each error type of :mod:`sqlmend.taxonomy` has one data file
``templates/<type id>.yaml`` holding

* ``clauses``: the clauses where this type of error lives (where extraction looks
  when no localization names the nodes),
* ``fields``: the template fields ``g[·]`` that LocLLM fills, with what each means,
* ``guideline``: the text ``g[*]`` RefLLM reads once the fields are filled,
* ``examples``: few-shot examples (question, SQL, filled fields, fixed SQL) on
  real Spider databases.

>>> load("value_error").fields["stored"][:9]
'the value'
>>> fill(load("modifier_error"), {"modifier": "ASC", "fix": "DESC"}).startswith("The modifier ASC")
True
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from sqlmend import taxonomy
from sqlmend.errors import ConfigError

TEMPLATE_DIR = Path(__file__).with_name("templates")

#: ErrorLLM's priority: tables before columns before conditions before
#: functions, clauses and modifiers (families of :mod:`sqlmend.taxonomy`).
DEFAULT_PRIORITY = ["table", "attribute", "value", "condition", "function", "clause", "modifier"]


@dataclass(frozen=True)
class Guideline:
    """The guideline template of one error type (one YAML file)."""

    id: str
    clauses: tuple[str, ...]
    fields: dict[str, str]
    guideline: str
    examples: tuple[dict[str, Any], ...] = field(default_factory=tuple)


@lru_cache(maxsize=None)
def load(type_id: str, folder: str | None = None) -> Guideline:
    """Read the guideline template of an error type.

    Args:
        type_id: an id of :mod:`sqlmend.taxonomy`.
        folder: a folder of templates to use instead of the packaged one.

    Returns:
        The :class:`Guideline`.

    Raises:
        ConfigError: unknown type, missing or malformed template file.
    """
    taxonomy.get(type_id)
    path = Path(folder or TEMPLATE_DIR) / f"{type_id}.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"guideline template {path}: {exc}") from exc
    missing = {"id", "clauses", "fields", "guideline"} - set(data or {})
    if missing or data["id"] != type_id:
        raise ConfigError(f"guideline template {path}: missing {sorted(missing)} or wrong id")
    return Guideline(id=type_id, clauses=tuple(data["clauses"]), fields=dict(data["fields"]),
                     guideline=" ".join(data["guideline"].split()),
                     examples=tuple(data.get("examples") or ()))


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return f"<{key}?>"


def fill(guideline: Guideline, values: dict[str, Any]) -> str:
    """Fill a guideline's fields (``g[*]``); an unfilled field shows as ``<name?>``.

    Args:
        guideline: the template.
        values: field name -> value (from a localization).

    Returns:
        The guideline text.
    """
    clean = _Blank({k: str(v).strip() for k, v in (values or {}).items()
                    if k in guideline.fields and v is not None and str(v).strip()})
    return string.Formatter().vformat(guideline.guideline, (), clean)


def order(type_ids: list[str], priority: list[str] | None = None) -> list[str]:
    """Order error types by family priority, then by taxonomy slot (stable, no duplicates).

    Args:
        type_ids: detected error type ids.
        priority: families in the order to address them (default :data:`DEFAULT_PRIORITY`);
            a family not listed goes last.

    Returns:
        The ids in the order RefLLM should address them.

    >>> order(["modifier_error", "value_error", "table_missing"])
    ['table_missing', 'value_error', 'modifier_error']
    """
    prio = list(priority or DEFAULT_PRIORITY)
    rank = {fam: i for i, fam in enumerate(prio)}

    def key(tid: str) -> tuple[int, int]:
        t = taxonomy.get(tid)
        return rank.get(t.family, len(prio)), t.slot

    return sorted(dict.fromkeys(type_ids), key=key)

"""LocLLM: localize each detected error in the AST and the schema (ErrorLLM §3.3).

``x^(Loc) = [x^(Det) ‖ {λ̂} ‖ {g_λ[·]}]``: the detection input (question, schema,
SQL, its clause-level nodes, its execution result), the detected error types and
the template fields of each type. The model answers, as JSON through the llm
layer, for each type: the AST node paths involved, the schema elements involved
and a value for each template field.

Static findings arrive already localized (their ``location``, ``schema_refs`` and
``evidence``); they cost no call. A type the model does not answer for (or a
model that returns garbage) falls back to the nodes of the type's clauses, marked
``source="default"``, so refinement still gets a subtree to look at.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from sqlmend import taxonomy
from sqlmend.llm import prompts
from sqlmend.llm.book import CallBook
from sqlmend.refine import guidelines
from sqlmend.refine.extract import Node
from sqlmend.types import Finding


class ErrorLocation(BaseModel):
    """LocLLM's answer for one error type."""

    error_type: str = Field(description="the error type id being localized")
    nodes: list[str] = Field(default_factory=list, description="paths of the AST nodes involved")
    schema_elements: list[str] = Field(default_factory=list,
                                       description="'table' or 'table.column' involved")
    fields: dict[str, str] = Field(default_factory=dict,
                                   description="a value for each template field of this type")


class LocalizationAnswer(BaseModel):
    """LocLLM's whole answer: one location per detected error type."""

    errors: list[ErrorLocation] = Field(default_factory=list)


@dataclass
class Localization:
    """Where one detected error is, and the filled template fields ``g_λ[·]``."""

    error_type: str
    nodes: list[str] = field(default_factory=list)  # node paths (extract.nodes)
    schema_refs: list[str] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)
    source: str = "default"  # static | model | default
    code: str = ""  # the finding code(s) that reported it
    evidence: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def detected_types(findings: list[Finding]) -> list[str]:
    """The distinct taxonomy ids among findings (``no_error`` and unknown ids dropped)."""
    known = set(taxonomy.ids())
    return list(dict.fromkeys(f.error_type for f in findings if f.error_type in known))


def _paths_for(location: str, all_nodes: list[Node]) -> list[str]:
    """Map a finding's location (a node path or a SQL fragment) to node paths."""
    if not location:
        return []
    by_path = {n.path for n in all_nodes}
    if location in by_path:
        return [location]
    frag = " ".join(location.lower().split())
    hits = [n.path for n in all_nodes if frag and frag in " ".join(n.sql.lower().split())]
    return hits[:3]


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(repr(v) if isinstance(v, str) else str(v) for v in value[:5])
    return str(value)


def static_fields(finding: Finding) -> dict[str, str]:
    """Fill a type's template fields from what a static finding already says.

    A field takes the evidence entry of its name, else one whose name starts with
    it (``stored`` <- ``stored_sample``); column fields take the finding's first
    ``table.column`` reference, table fields its first table; ``literal`` falls
    back to the finding's location.

    Args:
        finding: a localized finding.

    Returns:
        ``{field: value}`` for the fields it could fill.
    """
    g = guidelines.load(finding.error_type)
    ev = finding.evidence or {}
    cols = [r for r in finding.schema_refs if "." in r]
    tables = [r for r in finding.schema_refs if "." not in r]
    out: dict[str, str] = {}
    for name in g.fields:
        key = name if name in ev else next((k for k in ev if k.startswith(name)), None)
        if key is not None and ev[key] not in (None, "", []):
            out[name] = _text(ev[key])
        elif "column" in name and cols:
            out[name] = cols[0]
        elif "table" in name and tables:
            out[name] = tables[0]
        elif name in ("literal", "wrong_condition", "condition") and finding.location:
            out[name] = finding.location
    return out


def from_finding(finding: Finding, all_nodes: list[Node]) -> Localization:
    """An already-localized (static) finding as a :class:`Localization`, without a model.

    Args:
        finding: a finding with ``location`` / ``schema_refs`` / ``evidence``.
        all_nodes: the query's nodes (:func:`sqlmend.refine.extract.nodes`).
    """
    return Localization(error_type=finding.error_type,
                        nodes=_paths_for(finding.location, all_nodes),
                        schema_refs=list(finding.schema_refs), fields=static_fields(finding),
                        source="static",
                        code=finding.code, evidence=dict(finding.evidence or {}),
                        message=finding.message)


def default_for(type_id: str, all_nodes: list[Node], findings: list[Finding]) -> Localization:
    """The fallback localization of a type: the nodes of its template's clauses."""
    g = guidelines.load(type_id)
    mine = [f for f in findings if f.error_type == type_id]
    return Localization(error_type=type_id,
                        nodes=[n.path for n in all_nodes if n.clause in g.clauses],
                        schema_refs=[r for f in mine for r in f.schema_refs], source="default",
                        code=",".join(dict.fromkeys(f.code for f in mine)),
                        evidence={k: v for f in mine for k, v in (f.evidence or {}).items()},
                        message="; ".join(f.message for f in mine if f.message))


def is_localized(finding: Finding) -> bool:
    """True for a finding that already says where it is (a static one with a location)."""
    return finding.source == "static" and bool(finding.location or finding.schema_refs)


def _type_block(type_id: str) -> str:
    g = guidelines.load(type_id)
    t = taxonomy.get(type_id)
    fields = "\n".join(f"    - {k}: {v}" for k, v in g.fields.items())
    return f"- {type_id}: {t.description}\n  fields:\n{fields}"


def localize(findings: list[Finding], *, question: str, evidence: str, sql_text: str,
             all_nodes: list[Node], schema: str, execution: dict[str, Any],
             backend: Any | None, book: CallBook, stage: str = "localizer",
             max_tokens: int = 256) -> list[Localization]:
    """Localize every detected error type (one LocLLM call for those that need one).

    Args:
        findings: the unresolved findings of earlier stages.
        question: the task's question.
        evidence: the task's evidence (BIRD), may be "".
        sql_text: the current SQL.
        all_nodes: its clause-level nodes.
        schema: the schema, rendered for a prompt.
        execution: the SQL's execution summary.
        backend: the LocLLM backend, or None (then only static and default localizations).
        book: where the call is recorded.
        stage: the stage name logged with the call.
        max_tokens: most tokens LocLLM may generate.

    Returns:
        One :class:`Localization` per detected type, in detection order.
    """
    types = detected_types(findings)
    out: dict[str, Localization] = {}
    for f in findings:
        if f.error_type in types and is_localized(f) and f.error_type not in out:
            out[f.error_type] = from_finding(f, all_nodes)
    pending = [t for t in types if t not in out]
    if pending and backend is not None:
        answer = _ask(pending, question, evidence, sql_text, all_nodes, schema, execution,
                      backend, book, stage, max_tokens)
        valid_paths = {n.path for n in all_nodes}
        for loc in answer.errors if answer else []:
            if loc.error_type in pending and loc.error_type not in out:
                base = default_for(loc.error_type, all_nodes, findings)
                paths = [p for p in loc.nodes if p in valid_paths]
                out[loc.error_type] = Localization(
                    error_type=loc.error_type, nodes=paths or base.nodes,
                    schema_refs=list(dict.fromkeys([*loc.schema_elements, *base.schema_refs])),
                    fields={k: v for k, v in loc.fields.items()
                            if k in guidelines.load(loc.error_type).fields},
                    source="model", code=base.code, evidence=base.evidence, message=base.message)
    for t in types:
        if t not in out:
            out[t] = default_for(t, all_nodes, findings)
    return [out[t] for t in types]


def _ask(types: list[str], question: str, evidence: str, sql_text: str, all_nodes: list[Node],
         schema: str, execution: dict[str, Any], backend: Any, book: CallBook,
         stage: str, max_tokens: int) -> LocalizationAnswer | None:
    from sqlmend.errors import ModelError

    prompt = prompts.load("sqlmend.refine", "localize")
    msgs = prompts.messages(
        prompt, question=question, evidence=evidence or "(none)", sql=sql_text, schema=schema,
        nodes="\n".join(f"{n.path} [{n.clause}]: {n.sql}" for n in all_nodes) or "(does not parse)",
        execution=json.dumps(execution, default=str)[:800],
        errors="\n".join(_type_block(t) for t in types))
    try:
        res = book.ask(backend, msgs, stage=stage, schema=LocalizationAnswer, role="localize",
                       max_tokens=max_tokens)
    except ModelError:
        return None  # garbage or failure: the default localizations stand
    parsed = res.parsed
    if isinstance(parsed, dict):
        parsed = LocalizationAnswer.model_validate(parsed)
    return parsed

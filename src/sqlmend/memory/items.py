"""Memory items: the four parts of MIRA §3.2.3, admission rules and indexing.

An accepted repair unit becomes one :class:`MemoryItem`:

* a **semantic contract** (applicability, incorrect / required / repair
  behaviour, preservation constraints, non-applicability);
* a **structural signature** (edit operations, clauses, fragments, schema
  references, minimum context recognising the incorrect form);
* a **target local check** (the database observation to inspect and the
  violation signal showing recurrence);
* the **source support** (historical requirement, the wrong-to-repair
  comparison and the objective facts that accepted the unit) - provenance,
  never exposed online (:meth:`MemoryItem.online_view`).

Admission (§3.2.3): an item is stored only when its structural transformation
is complete and its contract states both applicability and required behaviour.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlmend.memory.kinds import MECHANICAL_KINDS


@dataclass
class SemanticContract:
    applicability: str
    incorrect_behavior: str
    required_behavior: str
    repair_behavior: str
    preserve: list[str] = field(default_factory=list)
    not_applicable: str = ""


@dataclass
class StructuralSignature:
    edits: list[dict[str, Any]]  # types.Edit as dicts (kind, clause, before, after, schema_refs, path)
    clauses: list[str]
    schema_refs: list[str]
    context: list[str] = field(default_factory=list)  # minimum context: tables/columns around the edit


@dataclass
class LocalCheck:
    observation: str  # what to inspect in the current SQL / database
    violation: str  # the signal that shows the recorded error recurs
    params: dict[str, Any] = field(default_factory=dict)  # machine-readable binding for mechanical checks
    probe: str | None = None  # a read-only SELECT template, when one decided the source unit


@dataclass
class SourceSupport:
    question_id: str
    question: str
    wrong_sql: str
    repair_sql: str
    reverted_sql: str
    facts: dict[str, Any] = field(default_factory=dict)
    judged_by: str = "mechanical"  # mechanical | model


@dataclass
class MemoryItem:
    """One reusable repair unit of one database (§3.2.3)."""

    db_id: str
    kind: str  # a name of sqlmend.memory.kinds.KINDS ("general" needs a model to adapt)
    error_type: str  # an id of sqlmend.taxonomy
    contract: SemanticContract
    signature: StructuralSignature
    check: LocalCheck
    support: SourceSupport
    keys: list[str] = field(default_factory=list)
    vector: list[float] | None = None
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            payload = json.dumps([self.db_id, self.kind, self.support.question_id,
                                  self.signature.edits], sort_keys=True, default=str)
            self.id = hashlib.sha1(payload.encode()).hexdigest()[:12]

    @property
    def mechanical(self) -> bool:
        return self.kind in MECHANICAL_KINDS

    def semantic_text(self) -> str:
        """The text embedded for the semantic channel: app(m) || req(m) (§3.3.1)."""
        return f"{self.contract.applicability} {self.contract.required_behavior}".strip()

    def online_view(self) -> dict[str, Any]:
        """What online reuse may see: contract, signature, local check - not the source case."""
        return {"id": self.id, "kind": self.kind, "error_type": self.error_type,
                "contract": asdict(self.contract), "signature": asdict(self.signature),
                "check": asdict(self.check)}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MemoryItem":
        """Rebuild an item from :meth:`to_dict`'s output.

        Args:
            d: the dictionary.

        Returns:
            The item.
        """
        return cls(db_id=d["db_id"], kind=d["kind"], error_type=d["error_type"],
                   contract=SemanticContract(**d["contract"]),
                   signature=StructuralSignature(**d["signature"]),
                   check=LocalCheck(**d["check"]), support=SourceSupport(**d["support"]),
                   keys=list(d.get("keys") or []), vector=d.get("vector"), id=d.get("id", ""))


def admission_problem(item: MemoryItem) -> str | None:
    """Check MIRA's admission rules (§3.2.3) for one item.

    Args:
        item: a candidate item.

    Returns:
        None when the item may be stored, else the reason it may not.
    """
    if not item.signature.edits:
        return "empty structural transformation"
    if not item.support.reverted_sql or not item.support.repair_sql:
        return "structural transformation incomplete (no isolated pair)"
    if not item.contract.applicability.strip():
        return "semantic contract lacks applicability"
    if not item.contract.required_behavior.strip():
        return "semantic contract lacks required behaviour"
    if not item.keys:
        return "no structural keys"
    return None

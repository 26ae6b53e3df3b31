"""A prompted-LLM detector (the self-detection baseline of ErrorLLM §4), with the detector's output.

The model sees the same structural input as the error-token detector and
answers a JSON list of error-type ids; unknown ids are dropped, and an answer
that cannot be read counts as "no error" (the guard's rule: when unsure, keep
the SQL), with the raw answer kept.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sqlmend import structure, taxonomy
from sqlmend.detect.decoding import MAX_LABELS, Detection
from sqlmend.errors import ModelError
from sqlmend.llm import prompts


#: The error-type ids a prompted answer may name (the decoder of a local model is held to them).
TypeId = Literal[tuple(taxonomy.ids())]  # type: ignore[valid-type]


# The key is required and no other is allowed, so that constrained decoding cannot wander
# into another object (with an optional key and extra keys allowed, SmolLM2 wrote the schema
# back and every answer read as "no error"). The docstring is part of the prompt: keep it short.
class ErrorList(BaseModel):
    """The JSON a prompted detector answers."""

    model_config = ConfigDict(extra="forbid")

    errors: list[TypeId] = Field(max_length=MAX_LABELS)


class LabelList(BaseModel):
    """Error-type ids named by a labelling model (unknown ones are dropped by :func:`known_types`)."""

    model_config = ConfigDict(extra="forbid")

    errors: list[str]


def prompt_template(name: str) -> str:
    """The ``user`` template of a prompt data file of :mod:`sqlmend.detect` (``prompts/<name>.yaml``)."""
    return prompts.load("sqlmend.detect", name)["user"]


def type_list() -> str:
    """The error types as ``- id: description`` lines, for prompts."""
    return "\n".join(f"- {t.id}: {t.description}" for t in taxonomy.all_types())


def known_types(ids: list[str], limit: int = MAX_LABELS) -> list[str]:
    """Keep the taxonomy ids of a model's answer, in order, without repeats."""
    known = set(taxonomy.ids())
    return list(dict.fromkeys(x.strip() for x in ids if x.strip() in known))[:limit]


class PromptedDetector:
    """Ask a chat model which errors a SQL has.

    Args:
        backend: an ``sqlmend.llm`` backend (``chat(messages, schema=...)``).
        stage: the stage name logged with each call.
        max_tokens: the most tokens of one answer (None: the backend's default).
    """

    def __init__(self, backend: Any, stage: str = "detector", max_tokens: int | None = None):
        self.backend = backend
        self.stage = stage
        self.max_tokens = max_tokens

    def detect_context(self, question: str, context: dict[str, str], sql_text: str = "",
                       evidence: str = "") -> Detection:
        """Detect from a structural context (see :func:`sqlmend.structure.describe`).

        Returns:
            A :class:`Detection` (scores are 1.0: a prompted model gives no probabilities).
        """
        x = structure.detector_input("", question, context.get("qss", ""), context.get("sql") or sql_text,
                                     context.get("ast", ""), context.get("exec", ""), evidence=evidence)
        content = prompts.render(prompt_template("self_detect"), types=type_list(), input=x.strip())
        try:
            options = {"max_tokens": self.max_tokens} if self.max_tokens else None
            res = self.backend.chat([{"role": "user", "content": content}], options, schema=ErrorList,
                                    stage=self.stage)
        except ModelError as e:
            return Detection(types=[], p_no_error=None, raw=f"model failed: {e}")
        types = known_types(res.parsed.errors if res.parsed is not None else [])
        return Detection(types=[(t, 1.0) for t in types], p_no_error=None, raw=res.text)

    def detect(self, db: Any, question: str, sql_text: str, evidence: str = "", samples: dict | None = None,
               value_index: Any = None) -> Detection:
        """Detect the errors of ``sql_text`` on an open database (same signature as the error-token detector)."""
        ctx = structure.describe(db, question, sql_text, samples=samples, value_index=value_index)
        return self.detect_context(question, ctx.to_dict(), sql_text, evidence)


__all__ = ["ErrorList", "LabelList", "PromptedDetector", "known_types", "prompt_template", "type_list"]

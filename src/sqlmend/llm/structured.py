"""Structured output: ask for JSON matching a schema, validate, retry once, else fail typed.

The schema is a pydantic model class (validated by pydantic, ``parsed`` is an instance)
or a JSON-schema dict (checked for JSON object, required keys and simple property
types, ``parsed`` is a dict). The schema is always stated in the system message; a
backend that can hold decoding to it does so too (local models through llguidance,
:mod:`sqlmend.llm.constrained`; OpenAI-compatible servers through ``response_format``),
so that the answer is valid at the first try and the retry is not needed. A stage that
gets :class:`StructuredOutputError` keeps the original SQL; it never crashes the batch.
Every call's validity and attempt are in the call log.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from sqlmend.errors import StructuredOutputError
from sqlmend.llm.sqlgrammar import unmark

if TYPE_CHECKING:  # pragma: no cover
    from sqlmend.llm.base import Backend, ChatOptions, ChatResult, Message

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
          "array": list, "object": dict, "null": type(None)}


def json_schema_of(schema: type[BaseModel] | dict) -> dict:
    """The JSON schema of a pydantic model class, or the dict itself.

    Args:
        schema: a pydantic model class or a JSON-schema dict.

    Returns:
        A JSON-schema dict.
    """
    if isinstance(schema, dict):
        return schema
    return schema.model_json_schema()


def instruction(json_schema: dict) -> str:
    """The system instruction that asks for JSON matching ``json_schema``.

    Args:
        json_schema: the schema.

    Returns:
        Text to append to the conversation's system message.
    """
    return ("Answer with one JSON object only, no prose and no code fences, that matches "
            "this JSON schema:\n" + json.dumps(unmark(json_schema), separators=(",", ":")))


def extract_json(text: str) -> Any:
    """Parse the JSON value in a model answer (tolerating a code fence or prose around it).

    Args:
        text: the model's answer.

    Returns:
        The parsed value.

    Raises:
        ValueError: no JSON value found.
    """
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for cand in candidates:
        try:
            return json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            continue
    raise ValueError(f"no JSON object in the answer: {text[:200]!r}")


def validate(schema: type[BaseModel] | dict, text: str) -> Any:
    """Validate an answer against the schema.

    Args:
        schema: a pydantic model class or a JSON-schema dict.
        text: the model's answer.

    Returns:
        The pydantic instance, or the checked dict.

    Raises:
        ValueError: the answer is not JSON or does not match (pydantic's ValidationError
            is a ValueError).
    """
    value = extract_json(text)
    if isinstance(schema, dict):
        _check_dict(schema, value)
        return value
    return schema.model_validate(value)


def _check_dict(schema: dict, value: Any) -> None:
    if schema.get("type", "object") == "object":
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            raise ValueError(f"missing required keys: {missing}")
        for key, prop in (schema.get("properties") or {}).items():
            want = _TYPES.get(prop.get("type", ""))
            if key in value and want and not isinstance(value[key], want):
                raise ValueError(f"{key}: expected {prop['type']}, got {type(value[key]).__name__}")


def with_instruction(messages: list["Message"], json_schema: dict) -> list["Message"]:
    """Add the JSON instruction to the system message (creating one if needed).

    Args:
        messages: the conversation.
        json_schema: the schema.

    Returns:
        A new list of messages.
    """
    msgs = [dict(m) for m in messages]
    text = instruction(json_schema)
    if msgs and msgs[0].get("role") == "system":
        msgs[0]["content"] = f"{msgs[0]['content']}\n\n{text}"
    else:
        msgs.insert(0, {"role": "system", "content": text})
    return msgs


def chat_structured(backend: "Backend", messages: list["Message"], options: "ChatOptions",
                    schema: type[BaseModel] | dict, stage: str, json_schema: dict | None = None
                    ) -> "ChatResult":
    """Chat, asking for JSON matching ``schema``; retry once with the validation error.

    Args:
        backend: the backend to call.
        messages: the conversation.
        options: chat options.
        schema: a pydantic model class or a JSON-schema dict (what the answer is validated by).
        stage: the pipeline stage (logged).
        json_schema: the schema sent to the backend, when it differs from ``schema``'s own
            (e.g. with SQL-constrained properties, :func:`sqlmend.llm.sqlgrammar.mark`).

    Returns:
        The result with ``parsed`` set; ``attempts`` and ``usage`` cover both calls.

    Raises:
        StructuredOutputError: the second answer did not match either (it carries the
            attempts and tokens of both calls).
    """
    js = json_schema if json_schema is not None else json_schema_of(schema)
    msgs = with_instruction(messages, js)

    def check(text: str) -> Any:
        return validate(schema, text)

    first = backend._logged_chat(msgs, options, js, stage, check=check, attempt=1)
    if first.parsed is not None:
        return first
    error = str(first.raw.get("schema_error", "not valid JSON"))
    retry = msgs + [
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": f"That answer is invalid: {error[:1000]}\n"
                                    "Answer again with only the corrected JSON object."},
    ]
    second = backend._logged_chat(retry, options, js, stage, check=check, attempt=2)
    second.usage = first.usage + second.usage
    second.latency += first.latency
    second.attempts = 2
    if second.parsed is not None:
        return second
    raise StructuredOutputError(
        f"{backend.name}: answer does not match the schema after one retry: "
        f"{str(second.raw.get('schema_error', ''))[:300]}",
        raw=second.text, attempts=second.attempts, tokens_in=second.usage.tokens_in,
        tokens_out=second.usage.tokens_out)

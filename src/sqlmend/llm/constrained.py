"""Constrained decoding for local models: every token is drawn from what a grammar allows.

A structured call's JSON schema becomes an llguidance grammar (:func:`grammar_for`);
:class:`GrammarProcessor`, a transformers logits processor, masks each step's logits to
the tokens that keep the answer inside the grammar. The answer is therefore valid JSON of
the schema by construction (unless the token budget runs out first). String properties
marked with :func:`sqlmend.llm.sqlgrammar.mark` follow the grammar of one SELECT over
the marked database (:func:`answer_lark`).

Why llguidance: measured on SmolLM2-135M on CPU it adds the least time per generated
token of the maintained libraries that installed (see ``docs/models.md``), compiles a
schema in milliseconds, and reads Lark grammars with embedded JSON schemas, which the SQL
answers need. ``$SQLMEND_LLM_CONSTRAIN=0`` (or ``constrain = false`` on a
``transformers`` endpoint) turns it off: the call then relies on the instruction and
the parse-and-retry of :mod:`sqlmend.llm.structured`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from functools import lru_cache
from typing import Any

from sqlmend.errors import ModelError
from sqlmend.llm import sqlgrammar

#: The library doing the masking (recorded in the call log's ``constrained`` column).
ENGINE = "llguidance"

#: JSON layout the decoder is held to: compact, one space after ``,`` and ``:`` (no free
#: whitespace, which a small model fills with endless newlines).
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


#: Bounds the decoder adds where a schema sets none: a small greedy model otherwise repeats
#: one array item or one phrase until the token budget runs out, and the cut answer is not
#: JSON. Likewise an object takes only its declared properties (``additionalProperties:
#: false`` unless the schema says otherwise): without it the model writes keys of its own,
#: nested ones too, past the budget. Validation still uses the caller's schema; these only
#: narrow what is decoded.
MAX_ITEMS = 6
MAX_STRING = 240


def bounded(schema: Any) -> Any:
    """A copy of a JSON schema with :data:`MAX_ITEMS` / :data:`MAX_STRING` where it has no bound,
    and no undeclared properties in an object that declares some.

    Args:
        schema: a JSON schema (or part of one).

    Returns:
        The bounded copy.

    >>> bounded({"type": "array", "items": {"type": "string"}})
    {'type': 'array', 'items': {'type': 'string', 'maxLength': 240}, 'maxItems': 6}
    >>> bounded({"type": "object", "properties": {"ok": {"type": "boolean"}}})
    {'type': 'object', 'properties': {'ok': {'type': 'boolean'}}, 'additionalProperties': False}
    """
    if isinstance(schema, list):
        return [bounded(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (v if k in ("enum", "const", "default", "examples", sqlgrammar.SQL_KEY) else bounded(v))
           for k, v in schema.items()}
    if out.get("type") == "array" and "maxItems" not in out:
        out["maxItems"] = MAX_ITEMS
    if (out.get("type") == "string" and "maxLength" not in out
            and not {"enum", "const", "pattern", "format"} & out.keys()):
        out["maxLength"] = MAX_STRING
    if out.get("type") == "object" and isinstance(out.get("properties"), dict) \
            and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


#: Closing: from ``CLOSE_RESERVE`` tokens before the caller's budget on, the decoder prefers,
#: among the tokens the grammar allows, those that end what is open -- inside a string its
#: ``"`` (then, inside SQL, ``'`` and ``)``), outside the innermost ``]`` or ``}``, and the
#: end of the answer once it is complete -- so that an answer that would be cut is closed
#: instead. Generation may run ``CLOSE_EXTRA`` tokens past the budget to finish closing.
CLOSE_RESERVE = 16
CLOSE_EXTRA = 32
_CLOSERS = "}]\")'"
#: Added to the closing class of a token made of closing characters only (``"}``, ``]}``):
#: preferred to one that closes and goes on (``",`` would open the next property).
_PURE = 16


def enabled_by_env() -> bool:
    """False when ``$SQLMEND_LLM_CONSTRAIN`` is ``0``/``false``/``off``/``no``."""
    return os.environ.get("SQLMEND_LLM_CONSTRAIN", "1").strip().lower() not in {"0", "false", "off", "no"}


def available() -> bool:
    """True when llguidance is installed (the ``models`` extra)."""
    try:
        import llguidance  # noqa: F401
    except ImportError:
        return False
    return True


def _json_rule(schema: Any) -> str:
    return "%json " + json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def answer_lark(json_schema: dict) -> str:
    """A Lark grammar of a JSON object whose SQL-marked string properties are SQL.

    Every property is written, in the schema's order, as ``"key": value``; a property
    marked with :data:`~sqlmend.llm.sqlgrammar.SQL_KEY` is a JSON string holding one
    SELECT over the marked tables (:func:`sqlmend.llm.sqlgrammar.sql_lark`), the others
    are their own JSON schemas (llguidance's ``%json``). ``$defs`` are inlined.

    Args:
        json_schema: an object schema with at least one marked property.

    Returns:
        Lark grammar text with a ``start`` rule.

    >>> from sqlmend.llm.sqlgrammar import mark
    >>> from sqlmend.types import Column, Schema, Table
    >>> js = {"type": "object", "properties": {"sql": {"type": "string"}}}
    >>> answer_lark(mark(js, Schema([Table("t", [Column("a")])]))).splitlines()[0]
    'start: "{" "\\\\"sql\\\\": " "\\\\"" sql_0 "\\\\"" "}"'
    """
    defs = json_schema.get("$defs") or {}
    parts, rules = [], []
    for i, (key, prop) in enumerate((json_schema.get("properties") or {}).items()):
        head = json.dumps(("" if i == 0 else ", ") + json.dumps(key) + ": ")
        if isinstance(prop, dict) and sqlgrammar.SQL_KEY in prop:
            rule = f"sql_{i}"
            parts.append(f'{head} "\\"" {rule} "\\""')
            mark = prop[sqlgrammar.SQL_KEY]
            rules.append(sqlgrammar.sql_lark(sqlgrammar.from_spec(mark), rule, mark.get("query")))
        else:
            sub = dict(sqlgrammar.unmark(prop)) if isinstance(prop, dict) else {}
            if defs:
                sub["$defs"] = sqlgrammar.unmark(defs)
            sub["x-guidance"] = JSON_OPTIONS
            parts.append(f"{head} value_{i}")
            rules.append(f"value_{i}: {_json_rule(sub)}")
    start = 'start: "{" ' + " ".join(parts) + ' "}"'
    return "\n".join([start, *rules]) + "\n"


@lru_cache(maxsize=256)
def _grammar(blob: str) -> str:
    from llguidance import LLMatcher

    json_schema = bounded(json.loads(blob))
    if sqlgrammar.marked(json_schema):
        return LLMatcher.grammar_from_lark(answer_lark(json_schema))
    return LLMatcher.grammar_from_json_schema(json_schema, overrides=JSON_OPTIONS)


def grammar_for(json_schema: dict) -> str:
    """The llguidance grammar that decodes answers of ``json_schema`` (cached).

    Args:
        json_schema: a JSON schema, possibly with SQL-marked properties.

    Returns:
        The grammar, serialized as llguidance takes it.
    """
    return _grammar(json.dumps(json_schema, ensure_ascii=False))  # key order is the answer's order


class Constrainer:
    """The llguidance view of one tokenizer (built once per model: it takes about a second).

    Args:
        tokenizer: a fast Hugging Face tokenizer.
        eos_token_id: the id(s) ending an answer (default: the tokenizer's EOS).
    """

    def __init__(self, tokenizer: Any, eos_token_id: int | list[int] | None = None):
        import llguidance.hf

        import numpy as np

        self.tokenizer = tokenizer
        try:
            self.lltok = llguidance.hf.from_tokenizer(tokenizer, eos_token=eos_token_id)
        except ValueError as exc:
            raise ModelError(f"constrained decoding needs a fast tokenizer: {exc}") from exc
        # closing class of every token: 0 = EOS, 1.. = first non-space character in _CLOSERS
        n = len(tokenizer)
        self.closing = np.full(n, -1, dtype=np.int8)
        for i, text in enumerate(tokenizer.convert_ids_to_tokens(list(range(n)))):
            lead = tokenizer.convert_tokens_to_string([text]).lstrip() if text else ""
            head = lead[:1]
            # a quote closes a SQL string only as a lone token ('' or '. would go on inside it)
            if head and head in _CLOSERS and (head != "'" or lead == "'"):
                pure = set(lead.rstrip()) <= set(_CLOSERS)
                self.closing[i] = 1 + _CLOSERS.index(head) + (_PURE if pure else 0)
        eos = eos_token_id if eos_token_id is not None else tokenizer.eos_token_id
        for e in (eos if isinstance(eos, list) else [eos]):
            if e is not None and 0 <= int(e) < n:
                self.closing[int(e)] = 0

    def processor(self, json_schema: dict, budget: int | None = None) -> "GrammarProcessor":
        """A fresh logits processor for one generation under ``json_schema``.

        Args:
            json_schema: the answer's schema.
            budget: the caller's token budget: closing starts :data:`CLOSE_RESERVE` tokens
                (at most a quarter of it) before it (None: never); generate at most
                ``budget + CLOSE_EXTRA`` tokens.

        Returns:
            The processor (pass it in ``logits_processor`` to ``generate``).

        Raises:
            ModelError: the schema or grammar is not valid for llguidance.
        """
        from llguidance import LLMatcher

        matcher = LLMatcher(self.lltok, grammar_for(json_schema), log_level=0)
        if matcher.is_error():
            raise ModelError(f"cannot decode under this schema: {matcher.get_error()}")
        close_at = None if budget is None else budget - min(CLOSE_RESERVE, budget // 4)
        return GrammarProcessor(matcher, self.closing if close_at is not None else None, close_at,
                                self.tokenizer)


class GrammarProcessor:
    """A transformers logits processor that keeps a single generation inside a grammar.

    It consumes the token chosen at the previous step, then sets the logit of every token
    the grammar does not allow next to ``-inf``; from step ``close_at`` on it keeps only the
    allowed tokens of the best closing class (see :data:`CLOSE_RESERVE`). ``seconds``
    accumulates the time it took (the decoding overhead); ``steps`` the steps it masked;
    ``closed`` the steps where closing chose.

    Args:
        matcher: an llguidance ``LLMatcher`` for the grammar.
        closing: closing class per token id (-1: none), or None for no closing.
        close_at: the step closing starts at.
        tokenizer: decodes the answer so far, for closing.
    """

    def __init__(self, matcher: Any, closing: Any = None, close_at: int | None = None,
                 tokenizer: Any = None):
        self.matcher, self.tokenizer = matcher, tokenizer
        self.closing, self.close_at = closing, close_at
        self.seconds = 0.0
        self.steps = 0
        self.closed = 0
        self._prompt_len: int | None = None
        self._lock = threading.Lock()

    @property
    def accepting(self) -> bool:
        """True when the text so far is a complete answer."""
        return bool(self.matcher.is_accepting())

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np
        import torch

        t0 = time.perf_counter()
        with self._lock:
            if input_ids.shape[0] != 1:
                raise ModelError("constrained decoding runs one sequence at a time")
            if self._prompt_len is None:
                self._prompt_len = int(input_ids.shape[1])
            elif not self.matcher.consume_token(int(input_ids[0, -1])):
                raise ModelError(f"constrained decoding left its grammar: {self.matcher.get_error()}")
            words = np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8)
            allowed = np.unpackbits(words, bitorder="little").astype(bool)
            vocab = scores.shape[-1]
            blocked = np.ones(vocab, dtype=bool)
            n = min(vocab, allowed.shape[0])
            blocked[:n] = ~allowed[:n]
            if self.close_at is not None and self.steps >= self.close_at and self.tokenizer:
                text = self.tokenizer.decode(input_ids[0, self._prompt_len:].tolist())
                blocked = self._closing(blocked, text)
            if scores.device.type == "cpu":
                # numpy, in place: torch's threaded kernels cost ~50 ms a step on a busy CPU
                scores.numpy()[0, blocked] = -np.inf
            else:
                scores = scores.masked_fill(torch.from_numpy(blocked).to(scores.device), float("-inf"))
            self.steps += 1
        self.seconds += time.perf_counter() - t0
        return scores

    def _closing(self, blocked: Any, text: str) -> Any:
        """Keep only the allowed tokens that best close what ``text`` left open."""
        import numpy as np

        classes = np.full(blocked.shape[0], -1, dtype=np.int8)
        m = min(blocked.shape[0], self.closing.shape[0])
        classes[:m] = self.closing[:m]
        classes[blocked] = -1
        for char in closers(text):
            want = 0 if char == "" else 1 + _CLOSERS.index(char)
            for cls in ((want + _PURE, want) if want else (0,)):
                if (classes == cls).any():
                    self.closed += 1
                    return classes != cls
        return blocked


def closers(text: str) -> list[str]:
    """What would close a partial JSON answer, best first ("" = the end of the answer).

    Args:
        text: the answer so far.

    Returns:
        Closing characters in order of preference. Inside a SQL string literal (an odd
        number of ``'`` in the JSON string so far) only ``'`` ends it: there ``)`` and the
        like are the literal's text, and preferring them would never close it.

    >>> closers('{"sql": "SELECT a FROM t WHERE b IN (1'), closers('{"a": [1, 2'), closers('{}')
    (['"', ')', "'"], [']', '"'], ['', '"'])
    >>> closers('{"sql": "SELECT a FROM t WHERE b = ' + "'x)")
    ["'"]
    """
    stack, in_string, escaped, quotes = [], False, False, 0
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            elif ch == "'":
                quotes += 1
        elif ch == '"':
            in_string, quotes = True, 0
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}" and stack:
            stack.pop()
    if in_string:
        return ["'"] if quotes % 2 else ['"', ")", "'"]
    return ([stack[-1]] if stack else [""]) + ['"']

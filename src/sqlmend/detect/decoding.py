"""Constrained decoding over the error tokens (ErrorLLM §3.2).

At each step ``k`` the model's next-token distribution is renormalized over the
error tokens only (the case equation of §3.2)::

    p̂(w | x, o<k) = p(w | x, o<k) / Σ_{s ∈ W'\\W} p(s | x, o<k)   if w ∈ W'\\W
                  = 0                                               otherwise

The answer is a sequence of at most ``max_labels`` distinct error tokens,
ordered by the model; ``[ERR_NONE]`` first means "no error", and after a
first error it ends the sequence (it is the terminator the detector was
trained with, see :func:`target_tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlmend import taxonomy
from sqlmend.detect.tokens import TokenTable

MAX_LABELS = 4


@dataclass
class Detection:
    """What a detector says about one SQL.

    ``types`` lists ``(type_id, score)`` in the model's order (empty when no
    error is found); ``p_no_error`` is the constrained probability of
    ``[ERR_NONE]`` at the first step (None when the detector has no scores).
    """

    types: list[tuple[str, float]] = field(default_factory=list)
    p_no_error: float | None = None
    raw: str = ""

    @property
    def has_error(self) -> bool:
        return bool(self.types)

    def to_dict(self) -> dict:
        return {"types": [{"type": t, "score": round(s, 4)} for t, s in self.types],
                "p_no_error": None if self.p_no_error is None else round(self.p_no_error, 4),
                "has_error": self.has_error}


def target_tokens(labels: list[str]) -> list[str]:
    """Return the token sequence a detector is trained to emit for a label list.

    Args:
        labels: error-type ids in priority order; empty or ``["no_error"]`` for a correct SQL.

    Returns:
        ``["[ERR_NONE]"]`` for no error, else the error tokens followed by ``[ERR_NONE]``.
    """
    errors = [x for x in labels if x != taxonomy.NO_ERROR][:MAX_LABELS]
    return [taxonomy.get(x).token for x in errors] + [taxonomy.NO_ERROR_TOKEN]


def constrained_probs(logits, table: TokenTable):
    """Renormalize next-token logits over the error tokens (the §3.2 case equation).

    Args:
        logits: a tensor ``[..., vocab]`` of next-token logits.
        table: the token table of the extended vocabulary.

    Returns:
        A tensor ``[..., 33]`` of probabilities over ``table.tokens``, summing to one.
    """
    import torch

    idx = torch.tensor(table.error_ids, device=logits.device)
    return torch.softmax(logits.float().index_select(-1, idx), dim=-1)


def _used_positions(table: TokenTable) -> dict[int, str]:
    """Positions (in ``table.tokens`` order) of the used types, ``no_error`` included."""
    order = {tok: i for i, tok in enumerate(table.tokens)}
    return {order[taxonomy.get(type_id).token]: type_id for type_id, _ in table.used()}


def _cache_kwargs(model, out) -> dict:
    """The key-value cache of the last call, under the argument name this transformers version takes."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    name = "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"
    value = getattr(out, "cache", None)
    return {name: value if value is not None else getattr(out, "past_key_values", None)}


def decode(model, input_ids: list[int], table: TokenTable, max_labels: int = MAX_LABELS) -> Detection:
    """Greedy constrained decoding of up to ``max_labels`` error types.

    Each step picks the most probable used error token not chosen yet (after
    renormalization over all 33 error tokens); ``[ERR_NONE]`` stops.

    Args:
        model: the causal LM with the error tokens (and adapter) loaded.
        input_ids: the tokenized detector input, ending where the answer starts.
        table: the token table.
        max_labels: the most error types returned.

    Returns:
        A :class:`Detection` with the chosen types and their constrained probabilities.
    """
    import torch

    used = _used_positions(table)
    none_pos = table.tokens.index(taxonomy.NO_ERROR_TOKEN)
    chosen: list[tuple[str, float]] = []
    p_none = None
    with torch.no_grad():
        ids = torch.tensor([input_ids], device=model.device)
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        for _ in range(max_labels + 1):
            probs = constrained_probs(out.logits[0, -1], table)
            if p_none is None:
                p_none = float(probs[none_pos])
            taken = {taxonomy.get(t).token for t, _ in chosen}
            best, best_p = None, -1.0
            for pos, type_id in used.items():
                if table.tokens[pos] in taken:
                    continue
                if float(probs[pos]) > best_p:
                    best, best_p = pos, float(probs[pos])
            if best is None or best == none_pos or len(chosen) >= max_labels:
                break
            chosen.append((used[best], best_p))
            nxt = torch.tensor([[table.error_ids[best]]], device=model.device)
            out = model(input_ids=nxt, use_cache=True, logits_to_keep=1, **_cache_kwargs(model, out))
    return Detection(types=chosen, p_no_error=p_none,
                     raw="".join(taxonomy.get(t).token for t, _ in chosen) or taxonomy.NO_ERROR_TOKEN)


def one_pass(model, input_ids: list[int], table: TokenTable, threshold: float,
             max_labels: int = MAX_LABELS, min_share: float = 0.1) -> Detection:
    """Detect with a single forward pass and a threshold on P(no_error).

    The SQL is flagged when the constrained ``P([ERR_NONE])`` at the first
    step is below ``threshold``; the types are then the used error tokens of
    the same distribution, ordered by probability, keeping those with at
    least ``min_share`` of the error mass (always at least one).

    Args:
        model: the causal LM with the error tokens (and adapter) loaded.
        input_ids: the tokenized detector input.
        table: the token table.
        threshold: flag when ``P(no_error) < threshold`` (see :mod:`sqlmend.detect.calibrate`).
        max_labels: the most error types returned.
        min_share: the smallest share of the error probability mass a reported type must have.

    Returns:
        A :class:`Detection`.
    """
    import torch

    with torch.no_grad():
        ids = torch.tensor([input_ids], device=model.device)
        probs = constrained_probs(model(input_ids=ids).logits[0, -1], table)
    return detection_from_probs(probs.tolist(), table, threshold, max_labels, min_share)


def detection_from_probs(probs: list[float], table: TokenTable, threshold: float,
                         max_labels: int = MAX_LABELS, min_share: float = 0.1) -> Detection:
    """Turn one constrained distribution (33 probabilities) into a :class:`Detection`.

    Args:
        probs: probabilities in ``table.tokens`` order.
        table: the token table.
        threshold: flag when ``P(no_error) < threshold``.
        max_labels: the most error types returned.
        min_share: the smallest share of the error mass a reported type must have.

    Returns:
        A :class:`Detection`.
    """
    used = _used_positions(table)
    none_pos = table.tokens.index(taxonomy.NO_ERROR_TOKEN)
    p_none = probs[none_pos]
    if p_none >= threshold:
        return Detection(types=[], p_no_error=p_none, raw=taxonomy.NO_ERROR_TOKEN)
    ranked = sorted(((probs[pos], t) for pos, t in used.items() if pos != none_pos), reverse=True)
    mass = sum(p for p, _ in ranked) or 1.0
    types = [(t, p) for p, t in ranked if p / mass >= min_share][:max_labels] or [(ranked[0][1], ranked[0][0])]
    return Detection(types=types, p_no_error=p_none, raw="".join(taxonomy.get(t).token for t, _ in types))

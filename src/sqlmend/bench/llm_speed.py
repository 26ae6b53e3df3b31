"""Speed of the embedded models and of the call cache (``sqlmend bench llm``)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from sqlmend.errors import ModelError
from sqlmend.llm.base import Backend, ChatOptions
from sqlmend.llm.calllog import CallLog

PROMPT = [{"role": "system", "content": "You are a SQL expert."},
          {"role": "user", "content": "Explain what this SQL does: "
                                      "SELECT name, COUNT(*) FROM singer GROUP BY country"}]


def bench_chat(backend: Backend, tokens: int = 64, runs: int = 3) -> dict[str, float]:
    """Greedy generation speed: first-token latency and tokens per second.

    First-token latency is a generation of one token (prefill + first token); tokens per
    second is tokens generated / seconds over a ``tokens``-long generation. One warm-up
    call is made first (it loads the model).

    Args:
        backend: a chat backend (its call log is bypassed: nothing cached).
        tokens: tokens to generate per run.
        runs: measured runs.

    Returns:
        ``first_token_s`` (median), ``tokens_per_s`` (median), ``prompt_tokens``, ``tokens_out``.
    """
    backend._chat(PROMPT, ChatOptions(max_tokens=2), None)  # load + warm up
    first, rates, out = [], [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        r1 = backend._chat(PROMPT, ChatOptions(max_tokens=1), None)
        first.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        r = backend._chat(PROMPT, ChatOptions(max_tokens=tokens), None)
        elapsed = time.perf_counter() - t0
        out = r.usage.tokens_out
        rates.append(out / elapsed)
    return {"first_token_s": statistics.median(first), "tokens_per_s": statistics.median(rates),
            "prompt_tokens": r1.usage.tokens_in, "tokens_out": out}


def bench_embed(backend: Backend, texts: Sequence[str], batch: int = 64) -> dict[str, float]:
    """Embedding throughput over ``texts`` (one warm-up batch first).

    Args:
        backend: an embedding backend (its call log is bypassed).
        texts: the texts, e.g. Spider questions.
        batch: texts per call.

    Returns:
        ``texts``, ``seconds``, ``texts_per_s``, ``dim``.
    """
    backend._embed(list(texts[:8]))
    t0 = time.perf_counter()
    dim = 0
    for i in range(0, len(texts), batch):
        vectors, _ = backend._embed(list(texts[i:i + batch]))
        dim = len(vectors[0])
    seconds = time.perf_counter() - t0
    return {"texts": len(texts), "seconds": seconds, "texts_per_s": len(texts) / seconds, "dim": dim}


def bench_cache(backend: Backend, calls: int = 200) -> dict[str, float]:
    """Per-call time of a call answered from the cache (hash, SQLite lookup, log row).

    The backend gets a fresh call log in a temporary folder for the measurement (its own
    log is put back afterwards).

    Args:
        backend: a chat backend.
        calls: cache-hit calls to time.

    Returns:
        ``miss_s`` (the one real call), ``hit_ms`` (mean per cache hit), ``calls``.
    """
    saved = backend.log
    with tempfile.TemporaryDirectory() as tmp:
        backend.log = log = CallLog(Path(tmp) / "llm.sqlite", cache=True)
        try:
            opts = ChatOptions(max_tokens=16)
            t0 = time.perf_counter()
            backend.chat(PROMPT, opts, stage="bench")
            miss = time.perf_counter() - t0
            t0 = time.perf_counter()
            for _ in range(calls):
                if not backend.chat(PROMPT, opts, stage="bench").cached:
                    raise ModelError("bench: an identical greedy call was not answered from the cache")
            hit = (time.perf_counter() - t0) / calls
        finally:
            backend.log = saved
            log.close()
    return {"miss_s": miss, "hit_ms": hit * 1000, "calls": calls}


def spider_questions(data_root: Path, limit: int) -> list[str]:
    """The first ``limit`` questions of Spider dev (texts for the embedding benchmark).

    Args:
        data_root: the data folder (holding ``spider/dev.json``).
        limit: how many.

    Returns:
        The questions.
    """
    import json

    rows: list[dict[str, Any]] = json.loads((data_root / "spider" / "dev.json").read_text())
    return [r["question"] for r in rows[:limit]]


def bench_llm(cfg: Any, chat: str, embed: str, tokens: int = 64, runs: int = 3, texts: int = 512,
              calls: int = 200, data_root: Path | str | None = None,
              step: Callable[[str], None] | None = None) -> dict[str, dict[str, float]]:
    """``sqlmend bench llm``: generation, embeddings and cache hits, one after the other.

    Args:
        cfg: the llm config (:class:`sqlmend.llm.LLMConfig`).
        chat: the chat endpoint to time (generation and cache hits).
        embed: the embedding endpoint to time.
        tokens: tokens generated per run.
        runs: measured generation runs.
        texts: Spider dev questions embedded.
        calls: cache-hit calls timed.
        data_root: the folder holding ``spider/``.
        step: told the name of each part as it starts (a progress display).

    Returns:
        ``{"chat": bench_chat(...), "embed": bench_embed(...), "cache": bench_cache(...)}``.
    """
    from sqlmend.paths import data_root as find_data

    tell = step or (lambda name: None)
    tell(f"generation ({chat})")
    c = bench_chat(cfg.backend(chat), tokens=tokens, runs=runs)
    tell(f"embeddings ({embed})")
    e = bench_embed(cfg.backend(embed), spider_questions(find_data(data_root), texts))
    tell("cache hits")
    return {"chat": c, "embed": e, "cache": bench_cache(cfg.backend(chat), calls=calls)}


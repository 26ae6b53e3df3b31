"""What constrained decoding costs per generated token, by library, on a local model.

Two measurements:

* :func:`replay` -- the library alone: a fixed valid answer (SmolLM2's tokens) is fed
  through a fresh matcher, timing grammar setup (compile + matcher) and the mask of every
  step (compute the allowed tokens, apply them to a logits row, accept the token). This is
  the overhead per generated token, free of the model's compute, which on a shared CPU
  varies far more than the mask does.
* :func:`bench` -- whole greedy generations (same prompt, same token budget) with the
  engine's logits processor, which times itself, and ``free`` (no processor).

Engines: ``llguidance`` (what sqlmend uses), ``llguidance-sql`` (the rewrite schema with
its ``sql`` field under the SQL grammar of a rewrite of :data:`ORIGINAL` on a Spider
database, or of ``--original`` on ``--db``) and, when installed,
``xgrammar``. lm-format-enforcer 0.11 was tried too: its transformers integration does
not import with transformers 5.

Run it::

    python -m sqlmend.bench.constrained --replay --runs 21          # the libraries alone
    python -m sqlmend.bench.constrained --replay --engines llguidance-sql --schemas rewrite \
        --db car_1 --original "SELECT ..." --answer-sql "SELECT ..."   # a bigger SQL grammar
    python -m sqlmend.bench.constrained --runs 3 --tokens 64        # whole generations
    python -m sqlmend.bench.constrained --refine-answers runs/bench-b  # refiner SQL that executes
    python -m sqlmend.bench.constrained --grammar-sizes              # the scope grammar per dev database
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

SCHEMAS = ("judge", "rewrite")
ENGINES = ("free", "llguidance", "llguidance-sql", "xgrammar")
PROMPTS = {
    "judge": [{"role": "system", "content": "You judge SQL repairs."},
              {"role": "user", "content": "Question: How many singers are from France?\n"
                                          "Wrong SQL: SELECT count(*) FROM singer\n"
                                          "Repair: SELECT count(*) FROM singer WHERE Country = 'France'\n"
                                          "Is the repair required? Answer as JSON."}],
    "rewrite": [{"role": "system", "content": "You fix SQL."},
                {"role": "user", "content": "Question: How many singers are from France?\n"
                                            "SQL: SELECT count(*) FROM singer\n"
                                            "Error: condition_missing. Give the corrected SQL as JSON."}],
}


class Timed:
    """A logits processor that calls ``step(input_ids, scores) -> scores`` and times it."""

    def __init__(self, step: Callable[[Any, Any], Any]):
        self.step, self.seconds, self.steps = step, 0.0, 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        t0 = time.perf_counter()
        out = self.step(input_ids, scores)
        self.seconds += time.perf_counter() - t0
        self.steps += 1
        return out


_COMPILERS: dict[int, Any] = {}


def _xgrammar(info: Any, json_schema: dict) -> tuple[Timed, float]:
    """An xgrammar processor for ``json_schema`` and its setup seconds (compile + matcher).

    Args:
        info: ``xgrammar.TokenizerInfo`` of the model (built once per model).
        json_schema: the schema.
    """
    import torch
    import xgrammar as xgr

    t0 = time.perf_counter()
    compiler = _COMPILERS.get(id(info))
    if compiler is None:  # one compiler per model, as in use: it caches compiled grammars
        compiler = _COMPILERS[id(info)] = xgr.GrammarCompiler(info)
    compiled = compiler.compile_json_schema(
        json.dumps(json_schema), any_whitespace=False, separators=(", ", ": "))
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    setup = time.perf_counter() - t0
    state = {"first": True}

    def step(input_ids: Any, scores: Any) -> Any:
        if not state["first"]:
            matcher.accept_token(int(input_ids[0, -1]))
        state["first"] = False
        matcher.fill_next_token_bitmask(bitmask)
        scores = scores.to(torch.float32)
        xgr.apply_token_bitmask_inplace(scores, bitmask)
        return scores

    return Timed(step), setup


def _db_schema(db_path: str | Path | None, db_id: str = "concert_singer") -> Any:
    """The schema of the ``llguidance-sql`` database (a path, else Spider's ``db_id``)."""
    from sqlmend import db
    from sqlmend.paths import data_root

    path = db_path or db.benchmark_db(Path(data_root()) / "spider" / "database", db_id)
    with db.connect(path) as conn:
        return conn.schema()


def _missing(engine: str) -> bool:
    """True for ``xgrammar`` when it is not installed (the other engines are sqlmend's own)."""
    return engine == "xgrammar" and importlib.util.find_spec("xgrammar") is None


#: The SQL the ``llguidance-sql`` rewrite rewrites (its FROM makes the grammar's scopes).
ORIGINAL = "SELECT count(*) FROM singer"


def _schema(name: str, sql_schema: Any = None, original: str | None = ORIGINAL) -> tuple[Any, dict]:
    from sqlmend.llm import sqlgrammar
    from sqlmend.memory.kinds.general import JudgeAnswer
    from sqlmend.refine.refiner import RewriteAnswer

    model = {"judge": JudgeAnswer, "rewrite": RewriteAnswer}[name]
    js = model.model_json_schema()
    if sql_schema is not None:
        js = sqlgrammar.mark(js, sql_schema, original=original)
    return model, js


def run_once(backend: Any, engine: str, schema_name: str, tokens: int, sql_schema: Any) -> dict[str, Any]:
    """One greedy generation of ``schema_name``'s answer under ``engine``.

    Args:
        backend: a loaded :class:`~sqlmend.llm.local.TransformersBackend`.
        engine: one of :data:`ENGINES`.
        schema_name: ``judge`` or ``rewrite``.
        tokens: the token budget.
        sql_schema: the database of ``llguidance-sql``.

    Returns:
        tokens, seconds, mask seconds, setup seconds, whether the answer validated, text.
    """
    import torch
    from transformers import LogitsProcessorList

    from sqlmend.llm.constrained import bounded
    from sqlmend.llm.structured import validate, with_instruction

    model_cls, js = _schema(schema_name, sql_schema if engine == "llguidance-sql" else None)
    model, tok = backend.loaded
    msgs = with_instruction(PROMPTS[schema_name], js)
    enc = backend._encode(msgs)
    setup, proc = 0.0, None
    if engine in ("llguidance", "llguidance-sql"):
        t0 = time.perf_counter()
        proc = backend._processor(js)
        setup = time.perf_counter() - t0
    elif engine == "xgrammar":
        import xgrammar as xgr

        proc, setup = _xgrammar(xgr.TokenizerInfo.from_huggingface(tok, vocab_size=model.config.vocab_size),
                                bounded(js))
    kwargs: dict[str, Any] = {"max_new_tokens": tokens, "do_sample": False,
                              "pad_token_id": tok.pad_token_id}
    if proc is not None:
        kwargs["logits_processor"] = LogitsProcessorList([proc])
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**enc, **kwargs)
    seconds = time.perf_counter() - t0
    new = out[0, enc["input_ids"].shape[1]:].tolist()
    text = tok.decode(new, skip_special_tokens=True)
    try:
        validate(model_cls, text)
        valid = True
    except ValueError:
        valid = False
    return {"tokens": len(new), "seconds": seconds, "mask_seconds": getattr(proc, "seconds", 0.0),
            "setup_seconds": setup, "valid": valid, "text": text}


def bench(engines: tuple[str, ...] = ENGINES, schemas: tuple[str, ...] = SCHEMAS, tokens: int = 64,
          runs: int = 3, db_path: str | Path | None = None) -> list[dict[str, Any]]:
    """Mask time and total time per generated token, per engine and schema (medians of ``runs``).

    Args:
        engines: engines to time (those not installed are reported as such).
        schemas: answer schemas (``judge``: MIRA's judge, ``rewrite``: ErrorLLM's RefLLM).
        tokens: token budget per generation.
        runs: generations per engine and schema.
        db_path: the SQLite database of ``llguidance-sql`` (Spider's concert_singer by default).

    Returns:
        One row per engine and schema.
    """
    from sqlmend.llm.constrained import Constrainer
    from sqlmend.llm.local import TransformersBackend

    sql_schema = _db_schema(db_path)
    backend = TransformersBackend(device="cpu", constrain=True)
    model, tok = backend.loaded
    t0 = time.perf_counter()
    backend._constrainer = Constrainer(tok, model.generation_config.eos_token_id)
    tokenizer_setup = time.perf_counter() - t0
    rows = []
    for schema_name in schemas:
        for engine in engines:
            row: dict[str, Any] = {"schema": schema_name, "engine": engine}
            if _missing(engine):
                rows.append({**row, "note": "not installed"})
                continue
            if engine == "llguidance-sql" and schema_name != "rewrite":
                continue
            done = [run_once(backend, engine, schema_name, tokens, sql_schema) for _ in range(runs)]
            n = statistics.median(d["tokens"] for d in done) or 1
            row.update(tokens=n, valid=sum(d["valid"] for d in done), runs=runs,
                       ms_per_token=1000 * statistics.median(d["seconds"] / max(1, d["tokens"]) for d in done),
                       mask_ms_per_token=1000 * statistics.median(d["mask_seconds"] / max(1, d["tokens"])
                                                                  for d in done),
                       setup_ms=1000 * statistics.median(d["setup_seconds"] for d in done),
                       example=done[0]["text"][:200])
            rows.append(row)
    rows.append({"engine": "llguidance", "schema": "(tokenizer view, once per model)",
                 "setup_ms": 1000 * tokenizer_setup})
    return rows


#: Valid answers replayed by :func:`replay` (the SQL one is also valid under concert_singer's grammar).
ANSWERS = {
    "judge": {"accept": True, "probe": None, "error_type": "condition_missing", "applicability":
              "a count over a filtered subset", "incorrect_behavior": "counts every singer",
              "required_behavior": "count only singers from France", "repair_behavior":
              "add WHERE Country = 'France'", "preserve": ["COUNT(*)"], "not_applicable": "",
              "reason": "the question asks for France"},
    "rewrite": {"sql": "SELECT COUNT(*) FROM singer WHERE Country = 'France'",
                "addressed": ["condition_missing"], "no_change": False},
}


def replay(engine: str, schema_name: str, tokenizer: Any, vocab: int, sql_schema: Any = None,
           repeats: int = 5, original: str | None = ORIGINAL, answer_sql: str | None = None) -> dict[str, Any]:
    """Grammar setup and per-token mask time of one engine over a fixed valid answer.

    Args:
        engine: ``llguidance``, ``llguidance-sql`` or ``xgrammar``.
        schema_name: ``judge`` or ``rewrite``.
        tokenizer: the model's Hugging Face tokenizer.
        vocab: the model's vocabulary size (logits row width).
        sql_schema: the database of ``llguidance-sql``.
        repeats: fresh matchers timed (the first is "cold": lazily built lexer states).
        original: the SQL whose rewrite ``llguidance-sql`` decodes (its FROM makes the scopes).
        answer_sql: the rewrite's SQL replayed (default: :data:`ANSWERS`'; it must be in the grammar).

    Returns:
        ``tokens``, ``setup_ms`` (first: grammar compiled), ``cached_setup_ms`` (median of
        the later ones: both libraries' grammar caches),
        ``cold_us_per_token``, ``warm_us_per_token`` (median of the later repeats).
    """
    import numpy as np
    import torch

    from sqlmend.llm.constrained import Constrainer, GrammarProcessor, _grammar, bounded, grammar_for

    _, js = _schema(schema_name, sql_schema if engine == "llguidance-sql" else None, original)
    answer = dict(ANSWERS[schema_name])
    if answer_sql and schema_name == "rewrite":
        answer["sql"] = answer_sql
    text = json.dumps(answer, separators=(", ", ": "))
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    setups, per_token = [], []
    lltok = info = None  # the per-model tokenizer views, built once as in use
    if engine.startswith("llguidance"):
        lltok = Constrainer(tokenizer).lltok
        _grammar.cache_clear()  # the first setup compiles the grammar, later ones hit the cache
    else:
        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab)
    for _ in range(repeats):
        t0 = time.perf_counter()
        if lltok is not None:
            from llguidance import LLMatcher

            proc: Any = GrammarProcessor(LLMatcher(lltok, grammar_for(js), log_level=0))
        else:
            proc, _setup = _xgrammar(info, bounded(js))
        setups.append(time.perf_counter() - t0)
        for i in range(len(ids)):  # only the processor's own time counts (it times itself)
            out = proc(torch.tensor([[0] + ids[:i]]), torch.zeros(1, vocab))
            if not np.isfinite(out[0, ids[i]].item()):
                raise RuntimeError(f"{engine} rejects the answer at token {i}: {text!r}")
        per_token.append(proc.seconds / len(ids))
    return {"schema": schema_name, "engine": engine, "tokens": len(ids),
            "setup_ms": 1000 * setups[0], "cached_setup_ms": 1000 * statistics.median(setups[1:] or setups),
            "cold_us_per_token": 1e6 * per_token[0],
            "warm_us_per_token": 1e6 * statistics.median(per_token[1:] or per_token)}


def replay_all(engines: tuple[str, ...], schemas: tuple[str, ...], repeats: int = 5,
               db_path: str | Path | None = None, db_id: str = "concert_singer",
               original: str | None = ORIGINAL, answer_sql: str | None = None) -> list[dict[str, Any]]:
    """:func:`replay` for every engine and schema, on SmolLM2's tokenizer.

    Args:
        engines: engines to time (``free`` is skipped; missing libraries are noted).
        schemas: answer schemas.
        repeats: fresh matchers per engine and schema.
        db_path: the SQLite database of ``llguidance-sql`` (else Spider's ``db_id``).
        db_id: the Spider database of ``llguidance-sql``.
        original: the SQL whose rewrite ``llguidance-sql`` decodes.
        answer_sql: the rewrite's SQL replayed (in the grammar of ``original``'s rewrite).

    Returns:
        One row per engine and schema.
    """
    from transformers import AutoConfig, AutoTokenizer

    from sqlmend.llm.local import resolve_checkpoint

    folder = resolve_checkpoint(None)
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    vocab = AutoConfig.from_pretrained(str(folder), local_files_only=True).vocab_size
    sql_schema = _db_schema(db_path, db_id)
    rows = []
    for schema_name in schemas:
        for engine in engines:
            if engine == "llguidance-sql" and schema_name != "rewrite":
                continue
            if _missing(engine):
                rows.append({"schema": schema_name, "engine": engine, "note": "not installed"})
                continue
            rows.append(replay(engine, schema_name, tok, vocab, sql_schema, repeats, original, answer_sql))
    return rows


def grammar_sizes(data_root: str | Path | None = None, repeats: int = 3) -> list[dict[str, Any]]:
    """Size and build time of the scope grammar on each Spider dev database.

    The original is each database's first gold query of ``dev.json``; the time is making
    the matcher (llguidance compiles the grammar then) and its first mask, median of
    ``repeats``, on SmolLM2's tokenizer.

    Args:
        data_root: the data folder (holds ``spider``).
        repeats: builds timed per database.

    Returns:
        One row per database: tables, scopes (query / sub-query), rules, Lark kB, ms.
    """
    from llguidance import LLMatcher
    from transformers import AutoTokenizer

    from sqlmend import db
    from sqlmend.errors import DatabaseNotFoundError
    from sqlmend.llm import sqlgrammar
    from sqlmend.llm.constrained import Constrainer, grammar_for
    from sqlmend.llm.local import resolve_checkpoint
    from sqlmend.paths import data_root as default_root

    spider = Path(data_root or default_root()) / "spider"
    lltok = Constrainer(AutoTokenizer.from_pretrained(str(resolve_checkpoint(None)),
                                                      local_files_only=True)).lltok
    first: dict[str, str] = {}
    for item in json.loads((spider / "dev.json").read_text()):
        first.setdefault(item["db_id"], item["query"])
    rows = []
    for db_id, original in sorted(first.items()):
        try:
            with db.connect(db.benchmark_db(spider / "database", db_id)) as conn:
                schema = conn.schema()
        except DatabaseNotFoundError:
            continue
        js = sqlgrammar.mark({"type": "object", "properties": {"sql": {"type": "string"}}}, schema,
                             original=original)
        query = js["properties"]["sql"][sqlgrammar.SQL_KEY].get("query")
        top, sub = sqlgrammar.scopes(schema, query)
        g = sqlgrammar.grammar(schema, "sql", query)
        grammar, times = grammar_for(js), []
        for _ in range(repeats):
            t0 = time.perf_counter()
            LLMatcher(lltok, grammar, log_level=0).compute_bitmask()
            times.append(time.perf_counter() - t0)
        rows.append({"db": db_id, "tables": len(schema.tables), "query_scopes": len(top),
                     "sub_scopes": len(sub), "rules": len(g.rules), "lark_kb": len(g.lark()) / 1000,
                     "build_ms": 1000 * statistics.median(times)})
    return rows


def refine_answers(run_dir: str | Path, data_root: str | Path | None = None,
                   timeout: float = 10.0) -> dict[str, dict[str, int]]:
    """How many refiner answers were valid JSON, held SQL, and how many of those SQL execute.

    Reads ``<run_dir>/<file>/errorllm/corrections.jsonl`` of ``sqlmend bench correct``;
    each RefLLM answer (the last answer of a ``refine`` call, after any retry) gives its
    SQL as the stage reads it (the JSON's ``sql``, else the SQL in the text: the stage's
    candidate, since an answer invalid twice is not kept in the trace), which is run
    on its Spider database -- also when the answer said ``no_change`` (the stage then keeps
    the input, but the SQL is still the model's answer).

    Args:
        run_dir: the ``--out`` folder of ``sqlmend bench correct``.
        data_root: the data folder (holds ``spider/database``).
        timeout: seconds per query.

    Returns:
        ``{file: {"answers", "valid_json", "no_change", "with_sql", "executes"}}`` and a
        ``"total"`` row.
    """
    from sqlmend import db
    from sqlmend.errors import SqlmendError
    from sqlmend.llm.structured import validate
    from sqlmend.paths import data_root as default_root
    from sqlmend.refine.chat import sql_from_text
    from sqlmend.refine.refiner import RewriteAnswer

    base = Path(data_root or default_root()) / "spider" / "database"
    keys = ("answers", "valid_json", "no_change", "with_sql", "executes")
    out: dict[str, dict[str, int]] = {}
    total = dict.fromkeys(keys, 0)
    for path in sorted(Path(run_dir).glob("*/errorllm/corrections.jsonl")):
        row = dict.fromkeys(keys, 0)
        for line in path.read_text().splitlines():
            task = json.loads(line)
            for st in task.get("stages", []):
                if st.get("stage") != "refine":
                    continue
                for call in st.get("detail", {}).get("prompts", []):
                    if call.get("role") != "refine" or "answer" not in call and "error" not in call:
                        continue
                    row["answers"] += 1
                    text = call.get("answer")
                    if text is None:  # invalid twice: the stage read the SQL in the text
                        cand = (st.get("candidate") or "").strip()
                        text = f"```sql\n{cand}\n```" if cand else ""
                    try:
                        ans = validate(RewriteAnswer, text)
                        row["valid_json"] += 1
                        row["no_change"] += int(ans.no_change)
                        cand = sql_from_text(ans.sql) or ans.sql.strip()
                    except ValueError:
                        cand = sql_from_text(text)
                    if not cand:
                        continue
                    row["with_sql"] += 1
                    try:
                        db.connect(db.benchmark_db(base, task["db_id"])).execute(cand, timeout=timeout)
                    except SqlmendError:
                        continue
                    row["executes"] += 1
        out[path.parent.parent.name] = row
        for k in keys:
            total[k] += row[k]
    out["total"] = total
    return out


def main(argv: list[str] | None = None) -> None:
    """``python -m sqlmend.bench.constrained``: print (and write) the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=64, help="token budget per generation")
    ap.add_argument("--runs", type=int, default=3, help="generations per engine and schema")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, of " + ", ".join(ENGINES))
    ap.add_argument("--schemas", default=",".join(SCHEMAS), help="comma-separated, of " + ", ".join(SCHEMAS))
    ap.add_argument("--replay", action="store_true",
                    help="time the libraries alone over fixed answers (no generation)")
    ap.add_argument("--refine-answers", type=Path, metavar="RUN_DIR",
                    help="instead: count the refiner answers of a `sqlmend bench correct` run that "
                         "hold SQL and execute")
    ap.add_argument("--db", default="concert_singer", help="Spider database of llguidance-sql")
    ap.add_argument("--original", default=ORIGINAL,
                    help="the SQL whose rewrite llguidance-sql decodes (its FROM makes the grammar's scopes)")
    ap.add_argument("--answer-sql", help="with --replay: the rewrite's SQL replayed (must be in the grammar)")
    ap.add_argument("--grammar-sizes", action="store_true",
                    help="instead: size and build time of the scope SQL grammar on each Spider dev database")
    ap.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    if args.refine_answers:
        print(json.dumps(refine_answers(args.refine_answers), indent=1))
        return
    if args.grammar_sizes:
        rows = grammar_sizes()
        print("| database | tables | query scopes | sub-query scopes | rules | Lark kB | matcher + first mask ms |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(f"| {r['db']} | {r['tables']} | {r['query_scopes']} | {r['sub_scopes']} | {r['rules']} | "
                  f"{r['lark_kb']:.1f} | {r['build_ms']:.1f} |")
    elif args.replay:
        rows = replay_all(tuple(e for e in args.engines.split(",") if e != "free"),
                          tuple(args.schemas.split(",")), args.runs, db_id=args.db,
                          original=args.original, answer_sql=args.answer_sql)
        print("| schema | engine | answer tokens | setup ms (compile) | setup ms (cached) | "
              "µs/token (first matcher) | µs/token (later) |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            if "note" in r:
                print(f"| {r['schema']} | {r['engine']} | {r['note']} | | | | |")
                continue
            print(f"| {r['schema']} | {r['engine']} | {r['tokens']} | {r['setup_ms']:.1f} | "
                  f"{r['cached_setup_ms']:.1f} | {r['cold_us_per_token']:.0f} | {r['warm_us_per_token']:.0f} |")
    else:
        rows = bench(tuple(args.engines.split(",")), tuple(args.schemas.split(",")), args.tokens, args.runs)
        print("| schema | engine | tokens | valid | ms/token | mask ms/token | setup ms |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(f"| {r['schema']} | {r['engine']} | {r.get('tokens', '')} | "
                  f"{str(r.get('valid', '')) + '/' + str(r.get('runs', '')) if 'runs' in r else r.get('note', '')} | "
                  f"{r.get('ms_per_token', 0):.1f} | {r.get('mask_ms_per_token', 0):.2f} | {r.get('setup_ms', 0):.1f} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

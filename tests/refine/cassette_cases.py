"""The tasks whose SmolLM2 answers are recorded in ``cassettes/`` (shared by the recorder and the test).

Record again (slow: the real model on CPU) with::

    python tests/refine/cassette_cases.py
"""

from __future__ import annotations

from pathlib import Path

from sqlmend.types import Task

CASSETTE = Path(__file__).with_name("cassettes") / "smollm2.jsonl"

CASES = [
    # VL02 (advisory static finding): error-guided refinement, one RefLLM call (+ retry)
    ("errorllm", Task(question_id="world", db_id="world_1",
                      question="What are the names of the countries where English is an official language?",
                      sql="SELECT T1.Name FROM country AS T1 JOIN countrylanguage AS T2 "
                          "ON T1.Code = T2.CountryCode WHERE T2.Language = 'English' AND T2.IsOfficial = 1")),
    # an empty result: MAC-SQL's refiner triggers
    ("mac-sql", Task(question_id="empty", db_id="concert_singer",
                     question="What are the names of the singers from France?",
                     sql="SELECT Name FROM singer WHERE Country = 'FR'")),
]

#: The model stages the cassette serves (the detector has its own tests) and the answer budget:
#: SmolLM2 on a shared 2-core CPU generates about 2 s per token.
STAGES = ("localizer", "refiner", "baseline")
OPTIONS = {"errorllm": {"refine": {"max_tokens": 80}}, "mac-sql": {"refine": {"max_tokens": 80, "rounds": 2}}}


def endpoint(mode: str) -> dict:
    """The llm endpoint spec of the cassette: ``record`` (through the real SmolLM2) or ``strict``."""
    from sqlmend.llm.local import SMOLLM2_NAME

    spec = {"kind": "replay", "mode": mode, "cassette": str(CASSETTE)}
    if mode == "record":
        spec["of"] = "local-smollm2"
    else:
        spec.update(backend="transformers", model=SMOLLM2_NAME)
    return spec


def run(mode: str):
    """Correct the cases with the cassette endpoint on every model stage; return the corrections."""
    from sqlmend.llm import LLMConfig
    from sqlmend.paths import data_root
    from sqlmend.pipeline import Pipeline, PipelineConfig, make_resolver

    llm = LLMConfig(endpoints={"cassette": endpoint(mode)}, stages={s: "cassette" for s in STAGES},
                    log=False)
    out = []
    for strategy, task in CASES:
        cfg = PipelineConfig(strategy=strategy, options=OPTIONS[strategy])
        out.append(Pipeline(cfg, resolve=make_resolver(cfg, llm_config=llm),
                            db_root=data_root() / "spider" / "database").correct(task))
    return out


if __name__ == "__main__":
    CASSETTE.parent.mkdir(exist_ok=True)
    for c in run("record"):
        print(c.question_id, c.changed, [(s.stage, s.status, s.note) for s in c.stages])

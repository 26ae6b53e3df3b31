"""Stand-in models for benchmarks only (``sqlmend bench model-sim``): simulated and replayed.

They stand for the model a team would plug into sqlmend's model stages, so that what sqlmend
does *around* a model (which queries it asks the model to touch, how the guard and the gates
treat the answers, the first law) can be measured with a model whose answers are known. Each is
a :class:`~sqlmend.llm.base.Backend` like any other: the stages run their real code path
(prompts, JSON schemas, structured-output validation, the call log), and it can be served
over the OpenAI protocol by :mod:`sqlmend.llm.server` like the embedded models.

Their answers come from real SQL. A model recognises the task from the last ``Question:`` line
of the prompt (the database's table names break ties between identical questions) and what it
is asked from the answer's JSON schema (or, for free text, from the prompt): a **rewrite**
(ErrorLLM's RefLLM, MIRA's adaptation and recovery, the baselines), a **judgement** (MIRA's
repair-unit judge and evidence-verified activation, the listwise verifier), or a **localization**
(ErrorLLM's LocLLM: no location, the stage's default localizations stand). Two kinds:

* :class:`ReplayedModel` answers from *answer books* (:mod:`sqlmend.bench.books`): a real
  model's prediction file replayed (its difficulty and mistakes included), or a
  difficulty-aware simulated model of quality q (right on question j with a probability that
  follows how hard j is for real systems, :mod:`sqlmend.bench.difficulty`). A rewrite is the
  book's SQL; a judge trusts its own answer (right exactly when the judged query returns its
  answer's rows). With several books, a question's call i draws book i.
* :class:`SimulatedModel`, the *independent* simulated model: every call's rewrite is the
  benchmark's gold re-written (other aliases, keyword case, layout:
  :func:`sqlmend.sql.restyle`, executed to check it is still right) with probability
  ``fix_rate``, else no change with probability ``echo_rate``, else a *real wrong query* for
  the same question, drawn from other systems' wrong predictions (the pool: the shared
  prediction files, the file under correction left out) or an execution-checked perturbation
  of the gold (:func:`sqlmend.synth.build.perturb`) where no other system was wrong; a judge is
  right with probability ``judge_accuracy``. Right means what the gold says: a repair unit is
  needed when the query with it reverted is wrong; an item should be activated when the
  current SQL is wrong; the listwise choice is the first candidate that is right (0, the
  original, when it is right or none is). Its quality is the same on every question, which
  real models' is not: its rows are kept, labelled, for comparison.

Every draw is a hash of ``seed``, the question and (for the independent model) the prompt, not
of the quality: the same call gets the same uniform number at every quality, so a question a
model of quality 0.4 fixes is fixed at 0.6 too, and the curves over quality are not noise.
Tokens are counted as characters / 4. Never a default and never a claim about a real model's
quality: the model and its measured rates are stated with every number it produces.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmend import sql as sqlmod
from sqlmend.evaluation.matching import same_set
from sqlmend.errors import DatabaseError, ModelError, SqlError
from sqlmend.llm.base import Backend, ChatOptions, ChatResult, Message, Usage

#: The backend kind in call logs and cassettes (not in the registry: a user's config cannot name it).
KIND = "simulated"

_QUESTION = re.compile(r"^[#\s]*Question:\s*(.+?)\s*$", re.M)
_CANDIDATE = re.compile(r"^\[(\d+)\] (.+)$", re.M)
_LISTWISE = re.compile(r"Answer with one number from 0 to (\d+)")
_ITEM_ID = re.compile(r'"id":\s*"([^"]+)"')


@dataclass(frozen=True)
class Rates:
    """The simulated model's quality: the probabilities that define it.

    Attributes:
        fix_rate: a rewrite is a right query.
        echo_rate: a rewrite that is not right leaves the SQL unchanged (the rest: a real wrong query).
        judge_accuracy: a judge's or verifier's answer is the right one.
        seed: the seed of every draw.
    """

    fix_rate: float
    echo_rate: float = 0.1
    judge_accuracy: float | None = None  # None: the fix rate
    seed: int = 0

    @classmethod
    def of_quality(cls, quality: float, echo_rate: float = 0.1, judge_accuracy: float | None = None,
                   seed: int = 0) -> "Rates":
        """The rates of one model quality ``q``: fix rate q, judge accuracy q (unless given),
        echo rate ``echo_rate`` (at most what the fix rate leaves)."""
        if not 0.0 <= quality <= 1.0:
            raise ValueError(f"a model quality is a probability, got {quality}")
        return cls(quality, min(echo_rate, 1.0 - quality), judge_accuracy, seed)

    @property
    def judge(self) -> float:
        return self.fix_rate if self.judge_accuracy is None else self.judge_accuracy

    def describe(self) -> str:
        return (f"fix {self.fix_rate:g}, echo {self.echo_rate:g}, wrong {1 - self.fix_rate - self.echo_rate:.2g}, "
                f"judge {self.judge:g}, seed {self.seed}")


class Oracle:
    """What the benchmark knows: each question's gold, and whether a SQL returns its rows.

    Executes on the dataset's SQLite databases (one read-only connection per database and
    thread), compares row sets as the evaluator does (BIRD's rule), and remembers each answer.

    Args:
        dataset: the benchmark's tasks (gold SQL and databases).
        timeout: seconds of work per execution.
    """

    def __init__(self, dataset: Any, timeout: float = 5.0):
        self.dataset = dataset
        self.timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._verdicts: dict[tuple[str, str], bool] = {}
        self._gold_rows: dict[str, set | None] = {}
        self._answers: dict[tuple[str, str], set | None] = {}
        self._by_question: dict[str, list[str]] = {}
        for t in dataset:
            self._by_question.setdefault(" ".join(t.question.split()), []).append(t.question_id)
        self._tables: dict[str, set[str]] = {}

    def _db(self, db_id: str) -> Any:
        from sqlmend.db import connect

        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        if db_id not in conns:
            path = self.dataset.db_path(db_id)
            conns[db_id] = connect(path) if path is not None else None
        return conns[db_id]

    def rows(self, question_id: str, text: str) -> set | None:
        """The set of rows ``text`` returns on the question's database (None: it fails)."""
        db = self._db(self.dataset.task(question_id).db_id)
        if db is None or not text.strip():
            return None
        try:
            return set(map(tuple, db.execute(text, timeout=self.timeout, max_rows=100_000).rows))
        except (DatabaseError, SqlError):
            return None

    def answer_rows(self, question_id: str, text: str) -> set | None:
        """:meth:`rows`, remembered (a model's own answer, compared with many queries)."""
        key = (question_id, " ".join(text.split()))
        with self._lock:
            if key in self._answers:
                return self._answers[key]
        rows = self.rows(question_id, text)
        with self._lock:
            self._answers[key] = rows
        return rows

    def agree(self, question_id: str, text: str, answer: str) -> bool:
        """Whether ``text`` returns the rows of ``answer`` (the evaluator's rule; False when either fails)."""
        if " ".join(text.split()) == " ".join(answer.split()):
            return self.answer_rows(question_id, answer) is not None
        mine = self.answer_rows(question_id, answer)
        rows = self.rows(question_id, text) if mine is not None else None
        return rows is not None and same_set(rows, mine)

    def gold_rows(self, question_id: str) -> set | None:
        with self._lock:
            if question_id in self._gold_rows:
                return self._gold_rows[question_id]
        rows = self.rows(question_id, self.dataset.task(question_id).gold or "")
        with self._lock:
            self._gold_rows[question_id] = rows
        return rows

    def right(self, question_id: str, text: str) -> bool:
        """Whether ``text`` returns the gold's rows (False when either fails)."""
        key = (question_id, " ".join(text.split()))
        with self._lock:
            if key in self._verdicts:
                return self._verdicts[key]
        gold = self.gold_rows(question_id)
        rows = self.rows(question_id, text) if gold is not None else None
        verdict = rows is not None and same_set(rows, gold)  # the evaluator's rule
        with self._lock:
            self._verdicts[key] = verdict
        return verdict

    def task_of(self, prompt: str) -> str | None:
        """The question id a prompt is about: its last ``Question:`` line (else the longest question
        of the benchmark the prompt contains), ties broken by the database whose table names the
        prompt mentions most."""
        found = _QUESTION.findall(prompt)
        ids = self._by_question.get(" ".join(found[-1].split())) if found else None
        if not ids:  # a prompt that does not label its question (MAC-SQL's "-- question"): the longest one in it
            flat = " ".join(prompt.split())
            inside = [q for q in self._by_question if q in flat]
            if not inside:
                return None
            ids = self._by_question[max(inside, key=len)]
        if len(ids) == 1:
            return ids[0]
        low = prompt.lower()

        def mentions(qid: str) -> int:
            db_id = self.dataset.task(qid).db_id
            if db_id not in self._tables:
                db = self._db(db_id)
                self._tables[db_id] = {t.name.lower() for t in db.schema().tables} if db is not None else set()
            return sum(1 for t in self._tables[db_id] if re.search(rf"\b{re.escape(t)}\b", low))

        return max(ids, key=mentions)


def uniform(*parts: Any) -> float:
    """A number in [0, 1) fixed by ``parts`` (no global random state)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


@dataclass
class _Draws:
    """What the model said, counted (``SimulatedModel.stats``)."""

    by_answer: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str) -> None:
        self.by_answer[kind] = self.by_answer.get(kind, 0) + 1


class _Answering(Backend):
    """What the benchmark's stand-in models share: which question a prompt is about, what the call
    asks (from the answer's schema), and the answer of each kind of call, from two primitives a
    model defines: :meth:`_draw_rewrite` (the SQL it writes, None for no change) and
    :meth:`_thinks_right` (whether it takes a SQL for a right answer to the question)."""

    kind = KIND

    def __init__(self, model: str, name: str | None = None, log: Any = None, *, oracle: Oracle):
        super().__init__(model, name, log)
        self.oracle = oracle
        self.draws = _Draws()
        self._lock = threading.Lock()

    def _chat(self, messages: list[Message], options: ChatOptions, json_schema: dict | None) -> ChatResult:
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        qid = self.oracle.task_of(prompt)
        if qid is None:
            raise ModelError("simulated model: the prompt names no question of its benchmark")
        key = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]
        role = _role(json_schema, prompt)
        answer, kind = getattr(self, f"_{role}")(qid, key, prompt)
        with self._lock:
            self.draws.add(f"{role}:{kind}")
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return ChatResult(text=text, usage=Usage(len(prompt) // 4, max(1, len(text) // 4)),
                          raw={"simulated": {"role": role, "answer": kind, "question_id": qid}},
                          model=self.model, backend=self.kind, finish_reason="stop")

    # --- what a model defines -------------------------------------------------
    def _draw_rewrite(self, qid: str, key: str) -> tuple[str | None, str]:
        """``(sql, kind)``: the SQL the model writes for the question (None: no change)."""
        raise NotImplementedError

    def _thinks_right(self, qid: str, key: str, what: str, sql: str) -> tuple[bool, str]:
        """``(verdict, kind)``: whether the model takes ``sql`` for a right answer; kind ``right``
        when the verdict is the truth, else ``wrong``."""
        raise NotImplementedError

    def _listwise(self, qid: str, key: str, prompt: str) -> tuple[str, str]:  # the listwise verifier
        raise NotImplementedError

    # --- the answers ----------------------------------------------------------
    def _rewrite(self, qid: str, key: str, prompt: str) -> tuple[dict, str]:  # RefLLM
        sql, kind = self._draw_rewrite(qid, key)
        if sql is None:
            return {"sql": "", "addressed": [], "no_change": True}, kind
        return {"sql": sql, "addressed": [], "no_change": False}, kind

    def _adapt(self, qid: str, key: str, prompt: str) -> tuple[dict, str]:  # MIRA's adaptation
        sql, kind = self._draw_rewrite(qid, key)
        return {"sql": sql or "", "applied": _ITEM_ID.findall(prompt)}, kind

    def _recover(self, qid: str, key: str, prompt: str) -> tuple[dict, str]:  # MIRA's repair recovery
        sql, kind = self._draw_rewrite(qid, key)
        return {"sql": sql or ""}, kind

    def _text(self, qid: str, key: str, prompt: str) -> tuple[str, str]:  # the baselines
        sql, kind = self._draw_rewrite(qid, key)
        if sql is None:
            return "The SQL is correct.", kind
        return f"```sql\n{sql}\n```", kind

    def _localize(self, qid: str, key: str, prompt: str) -> tuple[dict, str]:
        return {"errors": []}, "none"

    def _judge(self, qid: str, key: str, prompt: str) -> tuple[dict, str]:  # MIRA's repair-unit judge
        reverted = _between(prompt, "Query with the change reverted:", "Repaired query:")
        fine, kind = self._thinks_right(qid, key, "judge", reverted)
        question = (_QUESTION.findall(prompt) or [""])[-1]
        return {"accept": not fine, "probe": None, "error_type": "clause_error",
                "applicability": f"questions like: {question}",
                "incorrect_behavior": "the query without this change answers another question",
                "required_behavior": f"what the question asks: {question}",
                "repair_behavior": "make the change this repair unit records",
                "preserve": ["the rest of the query"], "not_applicable": "questions that do not ask this",
                "reason": "simulated judge"}, kind

    def _activate(self, qid: str, key: str, prompt: str) -> tuple[dict, str]:  # MIRA's activation
        current = _between(prompt, "Current SQL:", "Candidate memory items")
        verdicts, kinds = [], []
        for item in dict.fromkeys(_ITEM_ID.findall(_between(prompt, "Candidate memory items", "Observations")
                                                   or prompt)):
            fine, kind = self._thinks_right(qid, key, f"activate:{item}", current)
            kinds.append(kind)
            verdicts.append({"item": item, "activate": not fine, "reason": "simulated judge", "binding": ""})
        return {"probe": None, "verdicts": verdicts}, "+".join(sorted(set(kinds))) or "none"


class SimulatedModel(_Answering):
    """A chat backend whose answers are drawn from real SQL at a known quality, the same on every
    question (see the module doc): each call's rewrite is right with probability ``fix_rate``,
    each judgement with probability ``judge``, independently.

    Args:
        model: the model's name in logs and call keys (say the quality in it: ``sim-q0.6``).
        name: the endpoint name.
        log: the call log.
        oracle: the benchmark's golds (:class:`Oracle`).
        pool: ``{question_id: [wrong SQL, ...]}``, real wrong predictions of other systems.
        rates: the quality (:class:`Rates`).
        exclude: ``{question_id: SQL}`` never drawn as a wrong answer (the file being corrected:
            a model that answers the input it was given is an echo, counted as such).
    """

    def __init__(self, model: str, name: str | None = None, log: Any = None, *, oracle: Oracle,
                 pool: dict[str, list[str]], rates: Rates, exclude: dict[str, str] | None = None):
        super().__init__(model, name, log, oracle=oracle)
        self.rates = rates
        self.source = SqlSource(oracle, pool, exclude, rates.seed)

    def _draw_rewrite(self, qid: str, key: str) -> tuple[str | None, str]:
        """``(sql, kind)``: a right query, None for no change, or a real wrong one."""
        u = uniform(self.rates.seed, qid, key, "rewrite")
        if u < self.rates.fix_rate:
            return self.source.right_sql(qid, int(uniform(self.rates.seed, qid, key, "style") * 3)), "right"
        if u < self.rates.fix_rate + self.rates.echo_rate:
            return None, "echo"
        wrong = self.source.wrong_sql(qid, uniform(self.rates.seed, qid, key, "pick"))
        return (wrong, "wrong") if wrong else (None, "echo")

    def _honest(self, qid: str, key: str, what: str) -> bool:
        return uniform(self.rates.seed, qid, key, what) < self.rates.judge

    def _thinks_right(self, qid: str, key: str, what: str, sql: str) -> tuple[bool, str]:
        # no SQL shown: a judge's query is taken as wrong, an activation's current SQL as right
        truth = self.oracle.right(qid, sql) if sql else what.startswith("activate")
        honest = self._honest(qid, key, what)
        return (truth if honest else not truth), ("right" if honest else "wrong")

    def _listwise(self, qid: str, key: str, prompt: str) -> tuple[str, str]:  # the listwise verifier
        shown = {int(i): text for i, text in _CANDIDATE.findall(prompt)}
        if not shown:
            return "0", "none"
        right = next((i for i in sorted(shown) if self.oracle.right(qid, shown[i])), 0)
        if self._honest(qid, key, "listwise"):
            return str(right), "right"
        others = [i for i in sorted(shown) if i != right]
        if not others:
            return str(right), "right"
        return str(others[int(uniform(self.rates.seed, qid, key, "other") * len(others))]), "wrong"


class SqlSource:
    """The SQL a stand-in model answers with: the gold re-written, or a real wrong query.

    Args:
        oracle: the benchmark's golds.
        pool: ``{question_id: [wrong SQL, ...]}``, real wrong predictions of other systems.
        exclude: ``{question_id: SQL}`` never drawn as a wrong answer (the file being corrected).
        seed: the seed of the perturbations.
        operators: how many of the perturbation operators (in a seeded order) are tried on a gold
            (None: all of them; the independent model tries 8).
    """

    def __init__(self, oracle: Oracle, pool: dict[str, list[str]], exclude: dict[str, str] | None = None,
                 seed: int = 0, operators: int | None = 8):
        self.oracle, self.pool, self.seed, self.operators = oracle, pool, seed, operators
        self.exclude = {k: " ".join(v.split()) for k, v in (exclude or {}).items()}
        self._lock = threading.Lock()
        self._right: dict[tuple[str, int], str] = {}
        self._perturbed: dict[str, list[str]] = {}

    def right_sql(self, qid: str, style: int) -> str:
        """The gold written in ``style`` (:func:`sqlmend.sql.restyle`), or as it is when the
        rewriting does not return the gold's rows."""
        with self._lock:
            if (qid, style) in self._right:
                return self._right[(qid, style)]
        gold = self.oracle.dataset.task(qid).gold or ""
        try:
            text = sqlmod.restyle(gold, "sqlite", style)
        except SqlError:
            text = gold
        if text != gold and not self.oracle.right(qid, text):
            text = gold
        with self._lock:
            self._right[(qid, style)] = text
        return text

    def wrong_sql(self, qid: str, u: float) -> str | None:
        """A wrong query for the question: another system's, else a perturbed gold (None: none)."""
        mine = self.exclude.get(qid)
        real = [s for s in self.pool.get(qid, []) if " ".join(s.split()) != mine]
        choices = real or self.perturbed(qid)
        return choices[int(u * len(choices))] if choices else None

    def perturbed(self, qid: str) -> list[str]:
        """Execution-checked perturbations of the gold that return other rows (seeded)."""
        with self._lock:
            if qid in self._perturbed:
                return self._perturbed[qid]
        from sqlmend.synth.build import perturb
        from sqlmend.synth.operators import OPERATORS

        task = self.oracle.dataset.task(qid)
        db = self.oracle._db(task.db_id)
        out: list[str] = []
        if db is not None and task.gold:
            rng = random.Random(f"{self.seed}:{qid}")
            ops = sorted(OPERATORS.values(), key=lambda op: op.name)
            rng.shuffle(ops)
            try:
                gold_result = db.execute(task.gold, timeout=self.oracle.timeout, max_rows=2000)
                for text, _, _ in perturb(task.gold, db.schema(), db, gold_result, rng, ops[:self.operators],
                                          timeout=self.oracle.timeout):
                    if not self.oracle.right(qid, text):  # wrong by the EX rule too
                        out.append(text)
                        if len(out) == 3:
                            break
            except (DatabaseError, SqlError):
                out = []
        with self._lock:
            self._perturbed[qid] = out
        return out


class ReplayedModel(_Answering):
    """A chat backend that answers from answer books: a real model's prediction file replayed
    (:class:`~sqlmend.bench.books.FileBook`), or a simulated model's answers
    (:class:`~sqlmend.bench.books.DifficultyBook`).

    A rewrite is the book's SQL for the question (None in the book: no change; the SQL being
    rewritten when the book holds the same query, which the guard then keeps as a no-op). A
    judge trusts its own answer: it takes a SQL for right exactly when that SQL returns the rows
    of the book's SQL (the evaluator's rule); the listwise verifier chooses the first candidate
    that does (0, the original, when it does or none does). With several books, a question's
    call i (rewrites and judgements counted apart) draws book i (modulo their number): k
    samples from k models.

    Args:
        model: the model's name in logs and call keys.
        books: the answer books, each with ``answer(question_id) -> str | None``.
        name: the endpoint name.
        log: the call log.
        oracle: the benchmark's golds.
    """

    def __init__(self, model: str, books: list[Any], name: str | None = None, log: Any = None, *,
                 oracle: Oracle):
        if not books:
            raise ValueError("a replayed model needs at least one answer book")
        super().__init__(model, name, log, oracle=oracle)
        self.books = list(books)
        self._calls: dict[tuple[str, str], int] = {}

    def book(self, qid: str, family: str) -> Any:
        """The book of the question's next call of this family (``answer`` or ``judge``)."""
        with self._lock:
            i = self._calls.get((qid, family), 0)
            self._calls[(qid, family)] = i + 1
        return self.books[i % len(self.books)]

    def _draw_rewrite(self, qid: str, key: str) -> tuple[str | None, str]:
        sql = self.book(qid, "answer").answer(qid)
        return (sql, "answer") if sql else (None, "echo")

    def _thinks_right(self, qid: str, key: str, what: str, sql: str) -> tuple[bool, str]:
        mine = self.book(qid, "judge").answer(qid)
        verdict = True if not mine else self.oracle.agree(qid, sql, mine)  # no answer of its own: trusts the SQL
        return verdict, "right" if verdict == self.oracle.right(qid, sql) else "wrong"

    def _listwise(self, qid: str, key: str, prompt: str) -> tuple[str, str]:
        shown = {int(i): text for i, text in _CANDIDATE.findall(prompt)}
        mine = self.book(qid, "judge").answer(qid)
        if not shown or not mine:
            return "0", "none"
        pick = next((i for i in sorted(shown) if self.oracle.agree(qid, shown[i], mine)), 0)
        right = next((i for i in sorted(shown) if self.oracle.right(qid, shown[i])), 0)
        return str(pick), "right" if pick == right else "wrong"


def _role(json_schema: dict | None, prompt: str) -> str:
    """What a call asks, from the answer's schema (free text: listwise or a baseline's rewrite)."""
    if json_schema is None:
        return "listwise" if _LISTWISE.search(prompt) else "text"
    props = set((json_schema.get("properties") or {}))
    if "no_change" in props:
        return "rewrite"
    if "errors" in props:
        return "localize"
    if "accept" in props:
        return "judge"
    if "verdicts" in props:
        return "activate"
    if "applied" in props:
        return "adapt"
    if props == {"sql"}:
        return "recover"
    raise ModelError(f"simulated model: no answer for a call with schema properties {sorted(props)}")


def _between(text: str, start: str, end: str) -> str:
    """The text between two markers of a prompt ("" when a marker is missing)."""
    i = text.rfind(start)
    if i < 0:
        return ""
    j = text.find(end, i + len(start))
    body = text[i + len(start): j if j >= 0 else None].strip()
    return body


#: The reports :func:`evaluated` made in this process, by the tasks and the file (its path, size and
#: time): each stand-in model of a benchmark (every strategy, the same model over HTTP) reads the shared
#: files' verdicts, and the files are evaluated once. The reports are read, never changed.
_EVALUATED: dict[tuple[str, str, int, int], Any] = {}


def _tasks_key(dataset: Any) -> str:
    digest = hashlib.sha256(str(dataset.db_root).encode())
    for t in dataset.tasks:
        digest.update(f"\0{t.question_id}\0{t.db_id}\0{t.gold}\0{t.difficulty}".encode())
    return digest.hexdigest()


def evaluated(dataset: Any, pred_files: list[Path], workers: int = 2,
              progress: bool = False) -> dict[str, Any]:
    """The evaluator's report of each prediction file, by the file's stem (once per process for the same
    tasks and file).

    Args:
        dataset: the benchmark.
        pred_files: the prediction files (the shared files of the dataset).
        workers: evaluation worker processes.
        progress: show progress bars.

    Returns:
        ``{stem: EvalReport}`` in the files' order.
    """
    from sqlmend.data.predictions import load_predictions
    from sqlmend.evaluation.evaluate import evaluate

    tasks = _tasks_key(dataset)
    out = {}
    for path in map(Path, pred_files):
        st = path.stat()
        key = (tasks, str(path.resolve()), st.st_size, st.st_mtime_ns)
        if key not in _EVALUATED:
            _EVALUATED[key] = evaluate(dataset, load_predictions(path, dataset), workers=workers, progress=progress,
                                       label=f"pool {path.stem}")
        out[path.stem] = _EVALUATED[key]
    return out


def pool_of(reports: dict[str, Any]) -> dict[str, list[str]]:
    """The real wrong predictions of each question over evaluated files (:func:`evaluated`).

    A prediction is wrong when the evaluator says so (other rows, or it fails to run; a
    time-out is left out). Each SQL appears once per question, in the files' order.
    """
    pool: dict[str, list[str]] = {}
    for report in reports.values():
        for r in report.results:
            if r.verdict in ("wrong", "pred_error") and r.sql.strip():
                seen = pool.setdefault(r.question_id, [])
                if r.sql not in seen:
                    seen.append(r.sql)
    return pool


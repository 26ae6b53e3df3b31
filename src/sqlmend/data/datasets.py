"""Benchmark datasets: named datasets, and readers/writers of their task files.

A :class:`Dataset` is a list of :class:`sqlmend.types.Task` keyed by
``question_id`` (Spider has no ids: the 0-based index in the file, as a string;
BIRD its ``question_id``), with the gold SQL, the difficulty (BIRD's field;
Spider's hardness computed from the gold by :mod:`sqlmend.data.hardness`) and
the database file of each ``db_id`` under ``<db_root>/<db_id>/<db_id>.sqlite``.

Task files read here:

* Spider ``dev.json`` / ``train_spider.json`` (``db_id``, ``question``, ``query``);
* BIRD ``dev.json`` (``question_id``, ``db_id``, ``question``, ``evidence``, ``SQL``, ``difficulty``);
* NL2SQL-Bugs (items with ``question``, ``evidence``, ``sql``, ``db_id``, a correct/incorrect
  ``label`` and ``error_types``); the labelled SQL becomes the task's ``sql``;
* sqlmend JSONL (``question_id``, ``db_id``, ``question``, ``evidence``, ``sql``, optional
  ``gold``, ``difficulty``, ``label``, ``error_types``, ``alternatives``: other answers to the
  question, for the consensus stage).
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from sqlmend.data.hardness import hardness
from sqlmend.db import benchmark_db
from sqlmend.errors import DatabaseNotFoundError, DatasetError
from sqlmend.paths import data_root as find_data_root
from sqlmend.types import Task

#: Named datasets: task file(s) and database folder, relative to the data root.
#: The first existing candidate wins.
NAMED: dict[str, dict[str, Any]] = {
    "spider-dev": {"format": "spider", "files": ["spider/dev.json"], "db_root": ["spider/database"]},
    "spider-train": {"format": "spider", "files": ["spider/train_spider.json"],
                     "db_root": ["spider/database"]},
    "bird-dev": {"format": "bird", "files": ["bird/dev/dev.json", "bird/dev.json"],
                 "db_root": ["bird/dev/dev_databases", "bird/dev_databases"]},
    "nl2sql-bugs": {"format": "nl2sql-bugs",
                    "files": ["nl2sql-bugs/NL2SQL-Bugs-with-evidence.json", "nl2sql-bugs/NL2SQL-Bugs.json"],
                    "db_root": ["bird/dev/dev_databases", "bird/dev_databases"]},
}

TASK_FORMATS = ("spider", "bird", "nl2sql-bugs", "jsonl")


@dataclass
class Label:
    """A correctness label of a task's SQL (NL2SQL-Bugs, or a sqlmend JSONL with labels)."""

    correct: bool
    error_types: list[str] = field(default_factory=list)


@dataclass
class Dataset:
    """Tasks of one benchmark, keyed by ``question_id``, with their databases.

    ``tasks[i].sql`` is empty for Spider/BIRD (the SQL to correct comes from a
    prediction file) and the labelled SQL for NL2SQL-Bugs.
    """

    name: str
    tasks: list[Task]
    db_root: Path | None = None
    source: Path | None = None
    labels: dict[str, Label] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_id: dict[str, Task] = {}
        for i, task in enumerate(self.tasks):
            if task.question_id in self._by_id:
                raise DatasetError(f"{self.name}: question_id {task.question_id!r} appears twice "
                                   f"(item {i})")
            self._by_id[task.question_id] = task
        self._db_cache: dict[str, Path | None] = {}

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self):
        return iter(self.tasks)

    @property
    def ids(self) -> list[str]:
        """The question ids in file order."""
        return [t.question_id for t in self.tasks]

    def task(self, question_id: str) -> Task:
        """Return the task with this id.

        Args:
            question_id: the id.

        Returns:
            The task.

        Raises:
            DatasetError: no such id.
        """
        try:
            return self._by_id[question_id]
        except KeyError:
            raise DatasetError(f"{self.name} has no question_id {question_id!r}") from None

    def __contains__(self, question_id: object) -> bool:
        return question_id in self._by_id

    def db_path(self, db_id: str) -> Path | None:
        """The database file of ``db_id`` (``<db_root>/<db_id>/<db_id>.sqlite``), or None if absent.

        Args:
            db_id: the database id.

        Returns:
            The path when the file exists, else None.
        """
        if db_id not in self._db_cache:
            path = None
            if self.db_root is not None:
                try:
                    path = benchmark_db(self.db_root, db_id)
                except DatabaseNotFoundError:
                    path = None
            self._db_cache[db_id] = path
        return self._db_cache[db_id]

    @contextmanager
    def databases(self) -> Iterator[Callable[[str], Any]]:
        """Open each database at most once while the block runs, and close them all at its end.

        Yields:
            ``open(db_id)``: the open database of ``db_id``, or None when it is missing.
        """
        from sqlmend.db import connect

        opened: dict[str, Any] = {}

        def open_db(db_id: str) -> Any:
            if db_id not in opened:
                path = self.db_path(db_id)
                opened[db_id] = connect(str(path)) if path else None
            return opened[db_id]

        try:
            yield open_db
        finally:
            for conn in opened.values():
                if conn is not None:
                    conn.close()

    @property
    def gold(self) -> dict[str, str]:
        """``{question_id: gold SQL}`` for the tasks that have one."""
        return {t.question_id: t.gold for t in self.tasks if t.gold is not None}

    def with_sql(self, predictions: Mapping[str, str]) -> list[Task]:
        """The tasks with ``sql`` set from ``predictions`` (tasks without a prediction keep theirs).

        Args:
            predictions: ``{question_id: sql}``.

        Returns:
            New Task objects in dataset order.
        """
        return [replace(t, sql=predictions.get(t.question_id, t.sql)) for t in self.tasks]


# --- reading ---------------------------------------------------------------

_BOM = b"\xef\xbb\xbf"


def _decoded(data: bytes, path: str | os.PathLike, first_line: int = 1) -> str:
    """UTF-8 bytes as text (a leading byte-order mark dropped), or a DatasetError naming the byte.

    ``data`` comes from ``path`` and starts on its line ``first_line``.
    """
    try:
        return data.removeprefix(_BOM).decode("utf-8")
    except UnicodeDecodeError as e:
        line = first_line + data.count(b"\n", 0, e.start)
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DatasetError(f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at column {column}; "
                           "save the file as UTF-8)") from None


def read_text(path: str | os.PathLike) -> str:
    """Read a UTF-8 text file (a byte-order mark at its start is dropped).

    Raises:
        DatasetError: the file is missing or not valid UTF-8 (naming the line and byte).
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: a folder, not a file") from None
    return _decoded(data, path)


def read_json(path: Path) -> Any:
    """Read a JSON file (UTF-8; a byte-order mark at its start is dropped).

    Args:
        path: the file.

    Returns:
        The parsed value.

    Raises:
        DatasetError: the file is missing, not valid UTF-8 or not valid JSON (naming the line).
    """
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise DatasetError(f"{path}: not valid JSON (nested too deeply)") from None


def read_jsonl(path: str | os.PathLike, skipped: list[str] | None = None,
               numbers: list[int] | None = None) -> list[dict[str, Any]]:
    """Read a JSON Lines file (blank lines skipped).

    Args:
        path: the file.
        skipped: when given, a line that is not a JSON object is left out and its reason
            (``file:line: ...``) appended here, so that the rest of the file is still read;
            when omitted, such a line raises.
        numbers: when given, the line number of each dict returned is appended here.

    Returns:
        One dict per line.

    Raises:
        DatasetError: the file is missing, or (without ``skipped``) a line is not a JSON object
            (the message names the line).
    """
    path = Path(path)
    items = []
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    for lineno, raw in enumerate(data.removeprefix(_BOM).split(b"\n"), 1):
        problem = None
        try:
            line = _decoded(raw, path, lineno)
        except DatasetError as e:
            line, problem = "", str(e).removeprefix(f"{path}:{lineno}: ")
        if not problem and not line.strip():
            continue
        if problem is None:
            try:
                item = json.loads(line)
                problem = None if isinstance(item, dict) else "expected a JSON object"
            except json.JSONDecodeError as e:
                problem = f"not valid JSON ({e.msg})"
            except RecursionError:
                problem = "not valid JSON (nested too deeply)"
        if problem is None:
            items.append(item)
            if numbers is not None:
                numbers.append(lineno)
        elif skipped is None:
            raise DatasetError(f"{path}:{lineno}: {problem}")
        else:
            skipped.append(f"{path}:{lineno}: {problem}; line left out")
    return items


def warn_skipped(skipped: list[str]) -> None:
    """Say on stderr which lines of an input file were left out (the rest of the batch goes on)."""
    for reason in skipped:
        print(f"warning: {reason}", file=sys.stderr)


def _need(item: Mapping[str, Any], keys: tuple[str, ...], where: str, text: bool = True) -> Any:
    """The first of ``keys`` that ``item`` holds (text, unless ``text`` is False)."""
    for key in keys:
        if key in item and item[key] is not None:
            if text and not isinstance(item[key], str):
                raise DatasetError(f"{where}: field {key!r} is not text (got {type(item[key]).__name__})")
            return item[key]
    raise DatasetError(f"{where}: missing field {keys[0]!r}")


def _optional(item: Mapping[str, Any], key: str, where: str) -> str:
    """Field ``key`` of ``item`` as text ("" when absent or null)."""
    return "" if item.get(key) is None else _need(item, (key,), where)


def _alternatives(item: Mapping[str, Any], where: str) -> list[str]:
    """A record's ``alternatives``: a list of SQL texts (absent or null: none)."""
    value = item.get("alternatives")
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DatasetError(f"{where}: field 'alternatives' is not a list of SQL texts")
    return list(value)


def _question_id(item: Mapping[str, Any], keys: tuple[str, ...], where: str, default: Any = None) -> str:
    """A record's id: text or a whole number."""
    value = next((item[k] for k in keys if item.get(k) is not None), default)
    if value is None:
        raise DatasetError(f"{where}: missing field {keys[0]!r}")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DatasetError(f"{where}: field {keys[0]!r} is neither text nor a number (got {type(value).__name__})")
    return str(value)


def _task_items(path: Path, kind: str) -> list[tuple[int, Any, str]]:
    """The items of a benchmark's JSON task list, each with its index and its place for errors."""
    data = read_json(path)
    if not isinstance(data, list):
        raise DatasetError(f"{path}: a {kind} file is a JSON list")
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise DatasetError(f"{path} item {i}: expected a JSON object, got {type(item).__name__}")
    return [(i, item, f"{path} item {i}") for i, item in enumerate(data)]


def read_spider(path: str | os.PathLike, *, with_hardness: bool = True) -> list[Task]:
    """Read Spider's ``dev.json`` / ``train_spider.json``.

    Args:
        path: the JSON file (a list of items with ``db_id``, ``question``, ``query``).
        with_hardness: compute each gold's Spider hardness into ``difficulty``.

    Returns:
        Tasks with ids "0", "1", ... (index in the file), gold set, sql empty.

    Raises:
        DatasetError: the file is not a Spider task list.
    """
    try:
        st = Path(path).stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None  # reading it names the missing file (an error is not kept)
    rows = _spider_rows(str(path), stamp, with_hardness)
    return [Task(question_id=qid, db_id=db_id, question=question, sql="", gold=gold, difficulty=level)
            for qid, db_id, question, gold, level in rows]


@lru_cache(maxsize=4)
def _spider_rows(path: str, stamp: tuple[int, int] | None,
                 with_hardness: bool) -> tuple[tuple[str, str, str, str, str | None], ...]:
    """A Spider file's items as plain values, kept per file version (``stamp``: its mtime and size): a process
    that loads Spider train again (each command of a batch of tests, a training run) reads and classifies its
    7,000 golds once. Fresh :class:`Task` objects are made from them at every call."""
    rows = []
    for i, item, where in _task_items(Path(path), "Spider"):
        gold = _need(item, ("query",), where)
        rows.append((str(i), _need(item, ("db_id",), where), _need(item, ("question",), where), gold,
                     hardness(gold) if with_hardness else None))
    return tuple(rows)


def read_bird(path: str | os.PathLike) -> list[Task]:
    """Read BIRD's ``dev.json`` (``question_id``, ``db_id``, ``question``, ``evidence``, ``SQL``, ``difficulty``).

    Args:
        path: the JSON file.

    Returns:
        Tasks keyed by BIRD's ``question_id`` (the index when an item has none).

    Raises:
        DatasetError: the file is not a BIRD task list.
    """
    tasks = []
    for i, item, where in _task_items(Path(path), "BIRD"):
        tasks.append(Task(question_id=_question_id(item, ("question_id",), where, i),
                          db_id=_need(item, ("db_id",), where), question=_need(item, ("question",), where), sql="",
                          evidence=_optional(item, "evidence", where), gold=_need(item, ("SQL", "sql"), where),
                          difficulty=item.get("difficulty")))
    return tasks


def _label(value: Any, where: str) -> bool:
    """NL2SQL-Bugs labels: True/"correct"/1 mean the SQL is correct."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("correct", "true", "1", "yes"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("incorrect", "false", "0", "no", "wrong"):
        return False
    raise DatasetError(f"{where}: label {value!r} is neither correct nor incorrect")


def _error_types(value: Any) -> list[str]:
    """``error_types`` as a list of names (strings, or dicts with ``error_type``)."""
    if not value:
        return []
    if isinstance(value, (str, dict)):
        value = [value]
    out = []
    for v in value:
        if isinstance(v, dict):
            name = v.get("error_type") or v.get("type") or v.get("category")
            if name:
                out.append(str(name))
        else:
            out.append(str(v))
    return out


def read_nl2sql_bugs(path: str | os.PathLike) -> tuple[list[Task], dict[str, Label]]:
    """Read NL2SQL-Bugs (a JSON list, or JSONL) of labelled SQL.

    Args:
        path: the file.

    Returns:
        The tasks (``sql`` = the labelled SQL; ``gold`` when the item carries one) and
        ``{question_id: Label}``.

    Raises:
        DatasetError: an item lacks its SQL, database or label.
    """
    path = Path(path)
    data = read_jsonl(path) if path.suffix == ".jsonl" else read_json(path)
    if not isinstance(data, list):
        raise DatasetError(f"{path}: an NL2SQL-Bugs file is a JSON list")
    tasks, labels = [], {}
    for i, item in enumerate(data):
        where = f"{path} item {i}"
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: expected a JSON object")
        qid = _question_id(item, ("id", "question_id"), where, i)
        tasks.append(Task(question_id=qid, db_id=_need(item, ("db_id",), where),
                          question=_need(item, ("question",), where),
                          sql=_need(item, ("sql", "SQL", "query"), where),
                          evidence=_optional(item, "evidence", where),
                          gold=item.get("gold") or item.get("gold_sql"),
                          difficulty=item.get("difficulty")))
        labels[qid] = Label(correct=_label(_need(item, ("label", "correct", "is_correct"), where, text=False),
                                           where),
                            error_types=_error_types(item.get("error_types") or item.get("error_type")))
    return tasks, labels


def read_tasks_jsonl(path: str | os.PathLike) -> tuple[list[Task], dict[str, Label]]:
    """Read sqlmend's task JSONL.

    Args:
        path: the file.

    Returns:
        The tasks and the labels of the lines that carry ``label``.

    A line that is not a JSON object, or whose ``question_id``/``db_id`` is missing or whose
    text fields are not text, is left out with a warning naming the line: the rest is read.
    """
    tasks, labels = [], {}
    skipped: list[str] = []
    numbers: list[int] = []
    items = read_jsonl(path, skipped, numbers)
    for lineno, item in zip(numbers, items):
        where = f"{path}:{lineno}"
        try:
            qid = _question_id(item, ("question_id",), where)
            task = Task(question_id=qid, db_id=_need(item, ("db_id",), where),
                        question=_optional(item, "question", where), sql=_optional(item, "sql", where),
                        evidence=_optional(item, "evidence", where),
                        gold=_optional(item, "gold", where) if item.get("gold") is not None else None,
                        difficulty=item.get("difficulty"), alternatives=_alternatives(item, where))
            label = (Label(correct=_label(item["label"], where), error_types=_error_types(item.get("error_types")))
                     if "label" in item else None)
        except DatasetError as exc:
            skipped.append(f"{exc}; line left out")
            continue
        tasks.append(task)
        if label is not None:
            labels[qid] = label
    warn_skipped(skipped)
    return tasks, labels


def sniff_task_format(path: str | os.PathLike) -> str:
    """Guess the format of a task file from its name and first item.

    Args:
        path: the file.

    Returns:
        One of :data:`TASK_FORMATS`.

    Raises:
        DatasetError: the format cannot be recognised.
    """
    path = Path(path)
    if path.suffix == ".jsonl":
        return "jsonl"
    data = read_json(path)
    first = data[0] if isinstance(data, list) and data else None
    if not isinstance(first, dict):
        raise DatasetError(f"{path}: not a task file (expected a non-empty JSON list of objects)")
    if "label" in first or "error_types" in first:
        return "nl2sql-bugs"
    if "SQL" in first or "evidence" in first:
        return "bird"
    if "query" in first:
        return "spider"
    raise DatasetError(f"{path}: cannot tell whether this is a Spider, BIRD or NL2SQL-Bugs file")


def read_tasks(path: str | os.PathLike, fmt: str = "auto") -> tuple[list[Task], dict[str, Label]]:
    """Read a task file of any supported format.

    Args:
        path: the file.
        fmt: "auto" or one of :data:`TASK_FORMATS`.

    Returns:
        The tasks and their labels (empty unless the format carries labels).

    Raises:
        DatasetError: unreadable file or unknown format.
    """
    fmt = sniff_task_format(path) if fmt == "auto" else fmt
    if fmt == "spider":
        return read_spider(path), {}
    if fmt == "bird":
        return read_bird(path), {}
    if fmt == "nl2sql-bugs":
        return read_nl2sql_bugs(path)
    if fmt == "jsonl":
        return read_tasks_jsonl(path)
    raise DatasetError(f"unknown task format {fmt!r} (one of {', '.join(TASK_FORMATS)})")


def _first_existing(root: Path, candidates: Iterable[str]) -> Path | None:
    return next((root / c for c in candidates if (root / c).exists()), None)


def load_dataset(name: str, data_root: str | os.PathLike | None = None,
                 db_root: str | os.PathLike | None = None) -> Dataset:
    """Load a named dataset ("spider-dev", "spider-train", "bird-dev", "nl2sql-bugs") or a task file.

    Args:
        name: a name of :data:`NAMED`, or the path of a task file (any of :data:`TASK_FORMATS`).
        data_root: the folder holding ``spider/`` (default: :func:`sqlmend.paths.data_root`).
        db_root: the databases folder, overriding the named dataset's (needed for a task file).

    Returns:
        The dataset.

    Raises:
        DatasetError: unknown name, or its files are missing.
        ConfigError: no data root can be found.
    """
    if name in NAMED:
        spec = NAMED[name]
        root = find_data_root(data_root)
        source = _first_existing(root, spec["files"])
        if source is None:
            raise DatasetError(f"dataset {name}: none of {', '.join(spec['files'])} under {root}")
        tasks, labels = read_tasks(source, spec["format"])
        dbs = Path(db_root) if db_root else _first_existing(root, spec["db_root"])
        return Dataset(name=name, tasks=tasks, db_root=dbs, source=source, labels=labels)
    path = Path(name).expanduser()
    if not path.is_file():
        raise DatasetError(f"unknown dataset {name!r}: neither one of {', '.join(NAMED)} nor a file")
    tasks, labels = read_tasks(path)
    return Dataset(name=path.stem, tasks=tasks, db_root=Path(db_root) if db_root else None,
                   source=path, labels=labels)


# --- writing ---------------------------------------------------------------

def write_jsonl(path: str | os.PathLike, records: Iterable[Mapping[str, Any]]) -> int:
    """Write records as JSON Lines (UTF-8, one object per line).

    Args:
        path: the output file (parent folders are created).
        records: the objects.

    Returns:
        The number of lines written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def task_record(task: Task, label: Label | None = None) -> dict[str, Any]:
    """The sqlmend JSONL record of a task (with its label when it has one).

    Args:
        task: the task.
        label: its correctness label, if any.

    Returns:
        A JSON-ready dict.
    """
    record = {"question_id": task.question_id, "db_id": task.db_id, "question": task.question,
              "evidence": task.evidence, "sql": task.sql, "gold": task.gold,
              "difficulty": task.difficulty}
    if task.alternatives:
        record["alternatives"] = list(task.alternatives)
    if label is not None:
        record["label"] = "correct" if label.correct else "incorrect"
        record["error_types"] = list(label.error_types)
    return record


def write_tasks(path: str | os.PathLike, dataset: Dataset, fmt: str = "jsonl") -> int:
    """Write a dataset's tasks as sqlmend JSONL, Spider JSON or BIRD JSON.

    Args:
        path: the output file.
        dataset: the tasks to write.
        fmt: "jsonl", "spider" (``db_id``/``question``/``query``) or "bird"
            (``question_id``/``db_id``/``question``/``evidence``/``SQL``/``difficulty``).

    Returns:
        The number of tasks written.

    Raises:
        DatasetError: unknown format.
    """
    if fmt == "jsonl":
        return write_jsonl(path, (task_record(t, dataset.labels.get(t.question_id)) for t in dataset))
    if fmt == "spider":
        items = [{"db_id": t.db_id, "question": t.question, "query": t.gold or t.sql} for t in dataset]
    elif fmt == "bird":
        items = [{"question_id": int(t.question_id) if t.question_id.isdigit() else t.question_id,
                  "db_id": t.db_id, "question": t.question, "evidence": t.evidence,
                  "SQL": t.gold or t.sql, "difficulty": t.difficulty} for t in dataset]
    else:
        raise DatasetError(f"cannot write tasks as {fmt!r} (jsonl, spider or bird)")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(items, f, ensure_ascii=False, indent=1)
    return len(items)

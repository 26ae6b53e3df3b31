"""Prediction files: read and write the SQL a system produced for each task of a dataset.

Formats:

* ``spider``: one SQL per line, line *i* answers task *i* of the dataset;
* ``bird``: a JSON object ``{"<idx>": "<sql>\\t----- bird -----\\t<db_id>"}`` keyed by the
  index of the task in the dataset;
* ``jsonl``: sqlmend's records, one per line, with ``question_id`` and ``sql`` (other fields kept
  by whoever wrote them, ignored here).

Every reader returns ``{question_id: sql}`` and refuses a file whose length or ids do not
match its dataset, saying which line or key.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Mapping

from sqlmend.data.datasets import Dataset, read_json, read_jsonl, warn_skipped, write_jsonl
from sqlmend.errors import DatasetError

PRED_FORMATS = ("spider", "bird", "jsonl")
BIRD_SEPARATOR = "\t----- bird -----\t"


def shared_prediction_files(dataset: str = "spider-dev",
                            data_root: str | os.PathLike | None = None) -> list[Path]:
    """The shared prediction files of a dataset: every ``*.sql`` in ``<data root>/predictions/<dataset>``.

    Args:
        dataset: the dataset name (the folder's name).
        data_root: the data folder (default: found, see :func:`sqlmend.paths.data_root`).

    Returns:
        The files, sorted by name.

    Raises:
        DatasetError: the folder holds no prediction file.
    """
    from sqlmend.paths import data_root as find

    folder = find(data_root) / "predictions" / dataset
    files = sorted(folder.glob("*.sql"))
    if not files:
        raise DatasetError(f"no prediction files in {folder}")
    return files


def sniff_pred_format(path: str | os.PathLike) -> str:
    """Guess a prediction file's format: ``.jsonl`` -> jsonl, a JSON object -> bird, else spider.

    Args:
        path: the file.

    Returns:
        One of :data:`PRED_FORMATS`.
    """
    path = Path(path)
    if path.suffix == ".jsonl":
        return "jsonl"
    if path.suffix == ".json":
        return "bird"
    try:
        with open(path, "rb") as f:
            head = f.read(64).removeprefix(b"\xef\xbb\xbf").lstrip()[:1]
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    return "bird" if head == b"{" else "spider"


def read_spider_predictions(path: str | os.PathLike, dataset: Dataset) -> dict[str, str]:
    """Read one SQL per line; line *i* (1-based) answers task *i - 1*.

    A line in the layout of Spider's gold files, ``SQL<TAB>db_id`` with its task's
    database, is read too: the database name is dropped.

    Args:
        path: the file.
        dataset: the dataset the file answers.

    Returns:
        ``{question_id: sql}``.

    Raises:
        DatasetError: the number of lines differs from the number of tasks.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    raw = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()  # the final newline
    lines, skipped = [], []
    for lineno, line in enumerate(raw, 1):
        try:
            lines.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as e:  # that question gets no SQL (its item's error); the batch goes on
            lines.append("")
            skipped.append(f"{path}:{lineno}: not valid UTF-8 (byte 0x{line[e.start]:02x} at column "
                           f"{e.start + 1}); question {lineno - 1} gets no SQL")
    n = len(dataset)
    if len(lines) > n:
        raise DatasetError(f"{path}:{n + 1}: more predictions than the {n} questions of {dataset.name} "
                           f"({len(lines)} lines)")
    if len(lines) < n:
        raise DatasetError(f"{path}: {len(lines)} lines, but {dataset.name} has {n} questions "
                           f"(line {len(lines) + 1}, question_id {dataset.tasks[len(lines)].question_id}, "
                           "is missing)")
    out: dict[str, str] = {}
    for task, line in zip(dataset.tasks, lines):
        sql, tab, db_id = line.rpartition("\t")
        out[task.question_id] = (sql if tab and db_id.strip() == task.db_id else line).strip()
    warn_skipped(skipped)
    return out


def read_bird_predictions(path: str | os.PathLike, dataset: Dataset) -> dict[str, str]:
    """Read BIRD's ``{"<idx>": "<sql>\\t----- bird -----\\t<db_id>"}``.

    Args:
        path: the JSON file.
        dataset: the dataset the file answers (index ``idx`` is task ``idx``).

    Returns:
        ``{question_id: sql}``.

    Raises:
        DatasetError: a key is not an index of the dataset, an index is missing, or a
            db_id differs from the task's.
    """
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: a BIRD prediction file is a JSON object keyed by index")
    out: dict[str, str] = {}
    for key, value in data.items():
        if not str(key).isdigit() or int(key) >= len(dataset):
            raise DatasetError(f"{path}: key {key!r} is not an index of {dataset.name} (0..{len(dataset) - 1})")
        task = dataset.tasks[int(key)]
        if not isinstance(value, str):
            raise DatasetError(f"{path}: key {key!r}: the value is not a string")
        sql, sep, db_id = value.partition(BIRD_SEPARATOR)
        if sep and db_id.strip() and db_id.strip() != task.db_id:
            raise DatasetError(f"{path}: key {key!r} names database {db_id.strip()!r}, "
                               f"but question {task.question_id} is on {task.db_id!r}")
        out[task.question_id] = sql.strip()
    if len(out) != len(dataset):
        missing = next(i for i, t in enumerate(dataset.tasks) if t.question_id not in out)
        raise DatasetError(f"{path}: {len(out)} predictions, but {dataset.name} has {len(dataset)} questions "
                           f"(key {missing!r} is missing)")
    return out


def read_jsonl_predictions(path: str | os.PathLike, dataset: Dataset) -> dict[str, str]:
    """Read sqlmend JSONL records (``question_id``, ``sql``) answering ``dataset`` into ``{question_id: sql}``.

    A line that is not JSON is left out with a warning; the questions then left without
    a prediction get an empty SQL (an error for that item alone: the batch goes on). A record
    whose id is not a task (e.g. the task line was unreadable and left out) is left out with a
    warning too; a file that answers another dataset still fails on its missing ids.

    Raises:
        DatasetError: a repeated id (naming the line), or missing ids.
    """
    out: dict[str, str] = {}
    skipped: list[str] = []
    unknown: list[str] = []
    numbers: list[int] = []
    items = read_jsonl(path, skipped, numbers)
    for lineno, item in zip(numbers, items):
        if "question_id" not in item or "sql" not in item:
            raise DatasetError(f"{path}:{lineno}: the record lacks question_id or sql")
        if not isinstance(item["sql"], (str, type(None))) or not isinstance(item["question_id"], (str, int)) \
                or isinstance(item["question_id"], bool):
            skipped.append(f"{path}:{lineno}: question_id or sql of a wrong type; line left out")
            continue
        qid = str(item["question_id"])
        if qid not in dataset:
            unknown.append(f"{path}: record {lineno}: question_id {qid!r} is not in {dataset.name}")
            continue
        if qid in out:
            raise DatasetError(f"{path}: record {lineno}: question_id {qid!r} appears twice")
        out[qid] = str(item["sql"] or "").strip()
    if skipped:  # an unreadable line: its question gets no SQL, an error for that item alone
        warn_skipped(skipped)
        out.update({q: "" for q in dataset.ids if q not in out})
    if len(out) != len(dataset):
        missing = [q for q in dataset.ids if q not in out]
        raise DatasetError(f"{unknown[0] + '; ' if unknown else ''}{path}: {len(out)} predictions, but "
                           f"{dataset.name} has {len(dataset)} questions "
                           f"(missing: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''})")
    warn_skipped([f"{u}; record left out" for u in unknown])
    return out


def load_predictions(path: str | os.PathLike, dataset: Dataset, fmt: str = "auto") -> dict[str, str]:
    """Read a prediction file of any format, checked against its dataset.

    Args:
        path: the file.
        dataset: the dataset it answers.
        fmt: "auto" or one of :data:`PRED_FORMATS`.

    Returns:
        ``{question_id: sql}`` with one entry per task.

    Raises:
        DatasetError: unreadable, unknown format, or not matching the dataset.
    """
    fmt = sniff_pred_format(path) if fmt == "auto" else fmt
    readers = {"spider": read_spider_predictions, "bird": read_bird_predictions,
               "jsonl": read_jsonl_predictions}
    if fmt not in readers:
        raise DatasetError(f"unknown prediction format {fmt!r} (one of {', '.join(PRED_FORMATS)})")
    return readers[fmt](path, dataset)


def one_line(sql: str) -> str:
    """Put a SQL on one line (each line break becomes a space), as the Spider format needs.

    Args:
        sql: the SQL.

    Returns:
        The SQL on one line.
    """
    return re.sub(r"\r\n|\r|\n", " ", sql).strip()


def write_predictions(path: str | os.PathLike, predictions: Mapping[str, str], dataset: Dataset,
                      fmt: str = "jsonl") -> int:
    """Write predictions in dataset order.

    Args:
        path: the output file (parent folders are created).
        predictions: ``{question_id: sql}``; a task without one gets an empty SQL.
        dataset: gives the order, the indices and the db_ids.
        fmt: one of :data:`PRED_FORMATS`.

    Returns:
        The number of predictions written.

    Raises:
        DatasetError: unknown format.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        return write_jsonl(path, ({"question_id": t.question_id, "db_id": t.db_id,
                                   "sql": predictions.get(t.question_id, "")} for t in dataset))
    if fmt == "spider":
        path.write_text("".join(one_line(predictions.get(t.question_id, "")) + "\n" for t in dataset),
                        encoding="utf-8")
        return len(dataset)
    if fmt == "bird":
        data = {str(i): f"{predictions.get(t.question_id, '')}{BIRD_SEPARATOR}{t.db_id}"
                for i, t in enumerate(dataset.tasks)}
        path.write_text(json.dumps(data, ensure_ascii=False, indent=4), encoding="utf-8")
        return len(data)
    raise DatasetError(f"unknown prediction format {fmt!r} (one of {', '.join(PRED_FORMATS)})")

"""The trained error-token detector, ready to score SQL (ErrorLLM §3.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmend import structure
from sqlmend.detect import model as dmodel
from sqlmend.detect.decoding import (MAX_LABELS, Detection, constrained_probs, decode,
                                     detection_from_probs)
from sqlmend.detect.tokens import TokenTable


def version_of(settings: dict) -> str:
    """A short name of a trained detector: backbone, objective, optimizer steps, examples seen."""
    train = settings.get("train", {})
    return (f"{settings.get('backbone', '?')} {train.get('objective', 'sequence')} "
            f"{settings.get('steps', '?')} steps / {settings.get('examples_seen', '?')} examples")


class ErrorTokenDetector:
    """Score SQL with a trained error-token model.

    ``mode="decode"`` runs the constrained multi-label decoding;
    ``mode="one_pass"`` flags with one forward pass when ``P(no_error)`` is below
    the calibrated ``threshold`` (stored in the folder by ``train-detector``).
    """

    def __init__(self, model: Any, tokenizer: Any, table: TokenTable, threshold: float | None = None,
                 mode: str = "decode", max_length: int = 448, max_chars: int = 1700,
                 max_labels: int = MAX_LABELS):
        self.model = model
        self.tokenizer = tokenizer
        self.table = table
        self.threshold = 0.5 if threshold is None else threshold
        self.mode = mode
        self.max_length = max_length
        self.max_chars = max_chars
        self.max_labels = max_labels
        self.folder: Path | None = None  # set by from_dir
        self.version = ""

    @classmethod
    def from_dir(cls, folder: str | Path, mode: str = "decode", backbone: str | None = None,
                 device: str = "cpu", threshold: float | None = None) -> "ErrorTokenDetector":
        """Load a detector folder written by ``sqlmend train-detector``.

        Args:
            folder: the detector folder.
            mode: ``decode`` or ``one_pass``.
            backbone: override the recorded backbone.
            device: ``cpu``, ``cuda``, ``auto``.
            threshold: override the calibrated threshold.

        Returns:
            The detector.
        """
        settings = dmodel.read_settings(folder)
        model, tok, table = dmodel.load(folder, backbone=backbone, device=device)
        train = settings.get("train", {})
        thr = threshold if threshold is not None else settings.get("threshold")
        det = cls(model, tok, table, thr, mode, train.get("max_length", 448), train.get("max_chars", 1700))
        det.folder = Path(folder)
        det.version = version_of(settings)
        return det

    def _ids(self, question: str, context: dict[str, str], sql_text: str, evidence: str) -> list[int]:
        text = dmodel.input_text(question, context, sql_text, evidence, max_chars=self.max_chars)
        return dmodel.encode(self.tokenizer, text, None, self.max_length)[0]

    def probs(self, question: str, context: dict[str, str], sql_text: str = "", evidence: str = "") -> list[float]:
        """The constrained distribution over the 33 error tokens at the first answer step.

        Args:
            question: the question.
            context: the structural context (:func:`sqlmend.structure.describe` ``.to_dict()``).
            sql_text: the SQL when the context has none.
            evidence: optional external knowledge.

        Returns:
            33 probabilities in ``table.tokens`` order.
        """
        import torch

        ids = self._ids(question, context, sql_text, evidence)
        with torch.no_grad():
            logits = self.model(input_ids=torch.tensor([ids], device=self.model.device), logits_to_keep=1).logits
        return constrained_probs(logits[0, -1], self.table).tolist()

    def probs_many(self, inputs: list[tuple[str, dict[str, str], str, str]], batch_size: int = 8) -> list[list[float]]:
        """:meth:`probs` of many inputs, in left-padded batches of similar length.

        Args:
            inputs: ``(question, context, sql_text, evidence)`` per query.
            batch_size: queries per forward pass.

        Returns:
            33 probabilities per input, in input order.
        """
        import torch

        ids = [self._ids(*x) for x in inputs]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: list[list[float]] = [[] for _ in ids]
        pad = dmodel.pad_id(self.tokenizer)
        with torch.no_grad():
            for start in range(0, len(order), max(1, batch_size)):
                chunk = order[start:start + batch_size]
                probs = constrained_probs(dmodel.next_logits(self.model, [ids[i] for i in chunk], pad), self.table)
                for i, row in zip(chunk, probs.tolist()):
                    out[i] = row
        return out

    def detect_many(self, inputs: list[tuple[str, dict[str, str], str, str]], batch_size: int = 8) -> list[Detection]:
        """:meth:`detect_context` of many inputs (batched in ``one_pass`` mode).

        Args:
            inputs: ``(question, context, sql_text, evidence)`` per query.
            batch_size: queries per forward pass.

        Returns:
            One :class:`Detection` per input, in input order.
        """
        if self.mode != "one_pass":
            return [self.detect_context(*x) for x in inputs]
        return [detection_from_probs(p, self.table, self.threshold, self.max_labels)
                for p in self.probs_many(inputs, batch_size)]

    def detect_context(self, question: str, context: dict[str, str], sql_text: str = "",
                       evidence: str = "", threshold: float | None = None) -> Detection:
        """Detect the errors of a SQL from its structural context.

        Args:
            question: the question.
            context: the structural context.
            sql_text: the SQL when the context has none.
            evidence: optional external knowledge.
            threshold: one-pass threshold for this call (default: the calibrated one).

        Returns:
            A :class:`Detection`.
        """
        if self.mode == "one_pass":
            return detection_from_probs(self.probs(question, context, sql_text, evidence), self.table,
                                        self.threshold if threshold is None else threshold, self.max_labels)
        return decode(self.model, self._ids(question, context, sql_text, evidence), self.table, self.max_labels)

    def detect(self, db: Any, question: str, sql_text: str, evidence: str = "", samples: dict | None = None,
               value_index: Any = None, threshold: float | None = None) -> Detection:
        """Detect the errors of ``sql_text`` on an open database.

        Args:
            db: the open database.
            question: the question.
            sql_text: the SQL.
            evidence: optional external knowledge.
            samples: sample values per column (computed when None).
            value_index: the database's value index (optional).
            threshold: one-pass threshold on P(no_error) for this call (above 1: the
                ranked types whatever P(no_error)).

        Returns:
            A :class:`Detection`.
        """
        if samples is None:
            samples = structure.sample_values(db)
        ctx = structure.describe(db, question, sql_text, samples=samples, value_index=value_index)
        return self.detect_context(question, ctx.to_dict(), sql_text, evidence, threshold)

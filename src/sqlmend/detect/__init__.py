"""Detectors: the ErrorLLM error-token model, its training, and the prompted baseline.

::

    from sqlmend.detect import ErrorTokenDetector
    det = ErrorTokenDetector.from_dir(folder)          # written by `sqlmend train-detector`
    found = det.detect(db, question, sql)              # Detection(types=[(type_id, score), ...])
"""

from __future__ import annotations

from sqlmend.detect.decoding import Detection, constrained_probs, decode, one_pass, target_tokens
from sqlmend.detect.detector import ErrorTokenDetector
from sqlmend.detect.prompted import PromptedDetector
from sqlmend.detect.stage import DetectorStage
from sqlmend.detect.tokens import TokenTable, add_error_tokens, init_token_rows

__all__ = ["Detection", "DetectorStage", "ErrorTokenDetector", "PromptedDetector", "TokenTable", "add_error_tokens",
           "constrained_probs", "decode", "init_token_rows", "one_pass", "target_tokens"]

"""The detector stage of the pipeline: error-token findings for later stages (ErrorLLM §3.2).

Follows the stage contract of :mod:`sqlmend.stage`. It uses the trained
error-token detector when its folder exists (options ``folder``, ``mode``),
else the prompted detector when a model is configured for the ``detector``
stage, else it skips and says why. It never rewrites SQL: its findings
(``source="detector"``, advisory) tell refinement what to fix. When the task
carries alternatives, their vote (the consensus stage's) counts beside the
detector's own P(error), the detector as one more voter (``detail["with_vote"]``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from sqlmend import taxonomy
from sqlmend.detect.decoding import Detection
from sqlmend.errors import SqlmendError
from sqlmend.paths import cache_dir
from sqlmend.stage import RunSettings, StageBase, StageContext, StageSettings
from sqlmend.types import Finding, StageTrace

_LOADED: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def default_dir() -> Path:
    """The detector folder ``sqlmend train-detector`` writes by default (under the cache)."""
    return cache_dir("detector", "smollm2")


def packaged_dir() -> Path | None:
    """The trained adapter shipped with sqlmend (``sqlmend/detect/adapter``), or None when absent."""
    folder = Path(__file__).resolve().parent / "adapter"
    return folder if (folder / "token_table.json").exists() else None


def trained_dir() -> Path:
    """The detector a run uses by default: the packaged one when present, else the cache folder."""
    return packaged_dir() or default_dir()


def findings_of(det: Detection, detector: str) -> list[Finding]:
    """Turn a detection into advisory findings (one per error type, in the detector's order).

    Args:
        det: the detection.
        detector: ``error-token`` or ``prompted``, written in the message.

    Returns:
        The findings.
    """
    return [Finding(code="detector", error_type=t, severity="advisory", source="detector", score=s,
                    message=f"{detector} detector: {taxonomy.get(t).description}",
                    evidence={"p_no_error": det.p_no_error, "rank": i + 1, "raw": det.raw})
            for i, (t, s) in enumerate(det.types)]


class DetectorStage(StageBase):
    """Semantic error detection by the error-token model (or the prompted baseline)."""

    name = "detector"
    #: Not in the default pipeline: weak on real predictions (AUROC 0.63, recall 9%; docs/benchmarks.md,
    #: "Detectors"), its advisory findings would steer refinement towards false errors.
    #: ``--stages static,memory,detector,refine,guard`` runs it.
    default_on = False

    class Settings(StageSettings):
        folder: str | None = Field(None, description="the trained detector folder (default: the adapter "
                                                     "shipped with sqlmend, else the one `sqlmend "
                                                     "train-detector` writes to the cache)")
        mode: Literal["one_pass", "decode"] = Field(
            "one_pass", description="one_pass (calibrated threshold) or decode (error tokens)")
        skip_if_static: bool = Field(False, description="skip when earlier stages already found errors")
        combine: bool = Field(False, description="flag by the combination of the detector's P(error), the "
                                                 "repair-search verifier's P(correct) of the SQL alone, the "
                                                 "static findings and what a repair search from the SQL finds "
                                                 "(logistic regression fitted on Spider train: "
                                                 "detect/combine.json, docs/benchmarks.md) instead of the "
                                                 "detector's own threshold")

    def __init__(self, settings: "DetectorStage.Settings | None" = None, run: RunSettings | None = None):
        super().__init__(settings, run)
        self.folder = Path(self.settings.folder) if self.settings.folder else trained_dir()

    def _model(self) -> Any:
        from sqlmend.detect.detector import ErrorTokenDetector

        key = (str(self.folder), self.settings.mode)
        with _LOCK:
            if key not in _LOADED:
                _LOADED[key] = ErrorTokenDetector.from_dir(self.folder, mode=self.settings.mode)
            return _LOADED[key]

    def _combined(self, ctx: StageContext, found: Detection) -> tuple[Detection, dict[str, Any]]:
        """The detection as the combination decides it, and its inputs for the trace."""
        from sqlmend.detect.combine import Combiner, feature_row, search_settings
        from sqlmend.search.verifier import FeatureVerifier

        with _LOCK:
            if ("combine", "") not in _LOADED:
                _LOADED[("combine", "")] = (Combiner.load(), FeatureVerifier())
            comb, verifier = _LOADED[("combine", "")]
        static = [f for f in ctx.findings if f.source == "static"]
        v = verifier.judge(ctx.db, ctx.sql, ctx.task.question, ctx.task.evidence, static,
                           search=search_settings() if comb.uses_search else None)
        row = feature_row(found.p_no_error, v.p_correct, [f.error_type for f in static], v.best, v.candidates)
        score = comb.score(row)
        flagged = score >= comb.threshold
        out = Detection(types=found.types if flagged else [], p_no_error=found.p_no_error,
                        raw=found.raw if flagged else taxonomy.NO_ERROR_TOKEN)
        detail = {"variant": comb.variant, "p_correct": round(v.p_correct, 4), "score": round(score, 4),
                  "threshold": comb.threshold, "flagged": flagged}
        if comb.uses_search:
            detail.update(best_correct=None if v.best is None else round(v.best, 4), candidates=v.candidates,
                          search_seconds=round(v.seconds, 4))
        return out, detail

    def run(self, ctx: StageContext) -> StageTrace:
        """Run the stage on one task.

        Args:
            ctx: the stage context.

        Returns:
            The trace with the detector's findings (no candidate).
        """
        start = time.perf_counter()
        if self.settings.skip_if_static and ctx.findings:
            return StageTrace(self.name, "skipped", note="earlier stages already found errors")
        trained = (self.folder / "token_table.json").exists()
        backend = None if trained else ctx.backend("detector")
        if not trained and backend is None:
            return StageTrace(self.name, "skipped",
                              note=f"no trained detector at {self.folder} (run `sqlmend train-detector`) "
                                   "and no model configured for the 'detector' stage")
        try:
            if trained:
                try:
                    det, kind = self._model(), "error-token"
                except ImportError as exc:  # torch / transformers / peft: the models extra
                    return StageTrace(self.name, "skipped",
                                      note=f"the trained detector needs the 'models' extra "
                                           f"(pip install 'sqlmend[models]'): missing {exc.name or exc}")
                with _LOCK:  # one forward pass at a time through the shared model
                    # combined: the ranked types whatever P(no_error); the combination decides
                    found = det.detect(ctx.db, ctx.task.question, ctx.sql, ctx.task.evidence,
                                       threshold=1.01 if self.settings.combine else None)
                if self.settings.combine:
                    found, combined = self._combined(ctx, found)
            else:
                from sqlmend.detect.prompted import PromptedDetector

                kind = "prompted"
                found = PromptedDetector(backend).detect(ctx.db, ctx.task.question, ctx.sql, ctx.task.evidence)
        except SqlmendError as e:
            return StageTrace(self.name, "failed", note=str(e), seconds=time.perf_counter() - start)
        trace = StageTrace(self.name, "ran", findings=findings_of(found, kind),
                           calls=0 if trained else 1, seconds=time.perf_counter() - start)
        adapter = f" (adapter {self.folder}: {getattr(det, 'version', '')})" if trained else ""
        trace.note = (f"{kind}{adapter}: " + (", ".join(f"{t} ({s:.2f})" for t, s in found.types) or "no error")
                      + (f"; P(no_error)={found.p_no_error:.3f}" if found.p_no_error is not None else ""))
        trace.detail["detection"] = found.to_dict()
        if trained and self.settings.combine:
            trace.detail["combined"] = combined
            trace.note += f"; combined P(error)={combined['score']:.3f} (flags >= {combined['threshold']:.3f})"
        if trained:
            trace.detail["adapter"] = {"folder": str(self.folder), "version": getattr(det, "version", "")}
        vote = ctx.vote()
        if vote is not None and found.p_no_error is not None:  # other answers given: they vote beside it
            p = vote.p_error(1.0 - found.p_no_error)
            trace.detail["with_vote"] = {"p_error": round(p, 4), "alternatives": vote.k, "agree": vote.agree}
            trace.note += f"; with the alternatives' vote ({vote.agree} of {vote.k} agree) P(error)={p:.3f}"
            for f in trace.findings:
                f.evidence["p_error_with_vote"] = round(p, 4)
        return trace

"""What the service tells its operators: Prometheus metrics and one JSON log line per request.

Metrics (``GET /metrics``, text format of ``prometheus-client``; each app has
its own registry, so replicas and tests never mix counts):

==============================================  =====================================================
``sqlmend_requests_total{endpoint,status}``     requests answered, by HTTP status
``sqlmend_request_seconds{endpoint}``           latency histogram (whole request, admission included)
``sqlmend_stage_outcomes_total{stage,status}``  pipeline stages run / skipped / failed
``sqlmend_model_calls_total{stage}``            model calls made by each stage
``sqlmend_model_tokens_total{stage,direction}`` tokens in and out, by stage
``sqlmend_guard_rejections_total{stage}``       rewrites the guard refused
``sqlmend_refused_total``                       texts refused as not one read-only query (EX03)
``sqlmend_rejected_total{reason}``              requests refused before the pipeline (auth, size, saturated, ...)
``sqlmend_in_flight``                           requests holding a slot of the concurrency gate
==============================================  =====================================================

A log line (logger ``sqlmend.service.requests``, JSON) carries the request id,
endpoint, status, database, stages run (with their status), the verdict
(``changed``, ``unchanged``, ``refused``, ``error``, or the refusal status),
milliseconds, model calls and tokens; its strings are scrubbed of server paths.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from prometheus_client import (CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics,
                               generate_latest)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from sqlmend.taxonomy import REFUSED

LOGGER = "sqlmend.service.requests"
#: Latency buckets in seconds: the static stages answer in milliseconds, model stages in seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

disable_created_metrics()  # no *_created series: they double the output and nobody graphs them

__all__ = ["CONTENT_TYPE_LATEST", "LOGGER", "Metrics", "configure_logging", "verdict_of"]


class Metrics:
    """The counters of one app, in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("sqlmend_requests", "Requests answered", ["endpoint", "status"], registry=r)
        self.latency = Histogram("sqlmend_request_seconds", "Request latency", ["endpoint"],
                                 buckets=BUCKETS, registry=r)
        self.stages = Counter("sqlmend_stage_outcomes", "Pipeline stage outcomes", ["stage", "status"],
                              registry=r)
        self.calls = Counter("sqlmend_model_calls", "Model calls", ["stage"], registry=r)
        self.tokens = Counter("sqlmend_model_tokens", "Model tokens", ["stage", "direction"], registry=r)
        self.guard_rejections = Counter("sqlmend_guard_rejections", "Rewrites refused by the guard",
                                        ["stage"], registry=r)
        self.refused = Counter("sqlmend_refused", "Texts refused as not one read-only query", registry=r)
        self.rejected = Counter("sqlmend_rejected", "Requests refused before the pipeline", ["reason"],
                                registry=r)
        self.in_flight = Gauge("sqlmend_in_flight", "Requests holding a concurrency slot", registry=r)

    def record_correction(self, body: dict[str, Any]) -> None:
        """Count the stage outcomes, model use and guard verdicts of one correction (``to_dict`` form)."""
        for trace in body.get("stages") or []:
            stage = trace.get("stage", "?")
            self.stages.labels(stage, trace.get("status", "?")).inc()
            if trace.get("calls"):
                self.calls.labels(stage).inc(trace["calls"])
            if trace.get("tokens_in"):
                self.tokens.labels(stage, "in").inc(trace["tokens_in"])
            if trace.get("tokens_out"):
                self.tokens.labels(stage, "out").inc(trace["tokens_out"])
            verdict = trace.get("verdict")
            if verdict and not verdict.get("accepted"):
                self.guard_rejections.labels(stage).inc()
        if verdict_of(body) == "refused":
            self.refused.inc()

    def exposition(self) -> bytes:
        """The registry in Prometheus text format."""
        return generate_latest(self.registry)


def verdict_of(body: dict[str, Any]) -> str:
    """``changed`` / ``unchanged`` / ``refused`` / ``error`` for one correction (``to_dict`` form)."""
    if body.get("error"):
        return "error"
    if any(f.get("error_type") == REFUSED for t in body.get("stages") or [] for f in t.get("findings") or []):
        return "refused"
    return "changed" if body.get("changed") else "unchanged"


def usage_of(body: dict[str, Any]) -> tuple[int, int, int]:
    """``(model calls, tokens in, tokens out)`` of one correction."""
    stages = body.get("stages") or []
    return (sum(t.get("calls", 0) for t in stages), sum(t.get("tokens_in", 0) for t in stages),
            sum(t.get("tokens_out", 0) for t in stages))


class JsonFormatter(logging.Formatter):
    """Format a record whose ``msg`` is a dict as one JSON line (with a UTC timestamp)."""

    def format(self, record: logging.LogRecord) -> str:
        payload = record.msg if isinstance(record.msg, dict) else {"message": record.getMessage()}
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return json.dumps({"ts": f"{stamp}.{int(record.msecs):03d}Z", "level": record.levelname.lower(),
                           **payload}, default=str)


def configure_logging(stream: TextIO | None = None, level: int = logging.INFO) -> logging.Logger:
    """Send the request log to ``stream`` (default stderr) as JSON lines, replacing an earlier stream.

    Returns:
        The request logger.
    """
    logger = logging.getLogger(LOGGER)
    logger.setLevel(level)
    logger.propagate = False
    for old in [h for h in logger.handlers if getattr(h, "_sqlmend", False)]:
        logger.removeHandler(old)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._sqlmend = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    return logger

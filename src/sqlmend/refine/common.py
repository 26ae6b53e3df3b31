"""What every refining stage (ErrorLLM's and the baselines) does the same way.

Executing the current SQL once per context, reading stage options from the
pipeline configuration, and passing a candidate through the guard.
"""

from __future__ import annotations

from typing import Any

from sqlmend import guard
from sqlmend.errors import QueryError, QueryTimeout, ReadOnlyViolation
from sqlmend.types import ExecResult, GuardVerdict, StageContext


def setting(ctx: StageContext, stage: str, key: str, default: Any) -> Any:
    """A stage option: ``config.options[stage][key]``, else a config attribute, else ``default``."""
    cfg = ctx.config
    opts = (getattr(cfg, "options", None) or {}).get(stage, {})
    if key in opts:
        return opts[key]
    return getattr(cfg, key, default) if cfg is not None else default


def execute_current(ctx: StageContext) -> tuple[ExecResult | None, str | None]:
    """Execute ``ctx.sql`` once (cached on the context) and return ``(result, error)``.

    Args:
        ctx: the stage context.

    Returns:
        The result and ``None``, or ``None`` and why it failed (engine message or time-out).
    """
    if ctx.exec_result is not None or ctx.exec_error is not None:
        return ctx.exec_result, ctx.exec_error
    try:
        ctx.exec_result = ctx.db.execute(ctx.sql, timeout=setting(ctx, "", "timeout", 30.0),
                                         max_rows=setting(ctx, "", "max_rows", 10_000))
    except QueryTimeout as exc:
        ctx.exec_error = f"timed out: {exc}"
    except QueryError as exc:
        ctx.exec_error = exc.engine_message or str(exc)
    except ReadOnlyViolation as exc:
        ctx.exec_error = f"refused (not read-only): {exc}"
    return ctx.exec_result, ctx.exec_error


def guarded(ctx: StageContext, candidate: str) -> GuardVerdict:
    """Pass a candidate through the validate-or-retain guard against ``ctx.sql``.

    Args:
        ctx: the stage context (its current SQL is the input).
        candidate: the proposed rewrite.

    Returns:
        The guard's verdict.
    """
    result, error = execute_current(ctx)
    return guard.validate(ctx.db, ctx.sql, candidate, timeout=setting(ctx, "", "timeout", 30.0),
                          max_rows=setting(ctx, "", "max_rows", 10_000),
                          original_result=result, original_error=error)

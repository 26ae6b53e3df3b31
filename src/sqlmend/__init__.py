"""sqlmend: correct the SQL written by text-to-SQL systems.

Two published methods, joined behind one guard:

* ErrorLLM -- explicit error detection (static rules, a language model with
  dedicated error tokens) followed by error-guided refinement;
* MIRA -- a per-database repair memory built from confirmed corrections and
  reused only when database evidence shows the recorded error recurs.

The first law: never turn a correct query into a wrong one.

The Python API (:mod:`sqlmend.api`)::

    import sqlmend
    fixer = sqlmend.Corrector("path/to.sqlite")
    result = fixer.correct("How many singers are from France?",
                           "SELECT count(*) FROM singer WHERE country = 'france'")
    result.sql, result.changed, result.findings, result.explain()

Its names load on first use, so ``import sqlmend`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("sqlmend")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

if TYPE_CHECKING:
    from sqlmend.api import CheckResult, CorrectionResult, Corrector
    from sqlmend.errors import ConfigError, DatabaseNotFoundError, SqlmendError
    from sqlmend.types import Correction, Finding, StageTrace

#: Public names, by the module that defines them (imported on first access).
_LAZY = {
    "Corrector": "sqlmend.api", "CorrectionResult": "sqlmend.api", "CheckResult": "sqlmend.api",
    "Correction": "sqlmend.types", "Finding": "sqlmend.types", "StageTrace": "sqlmend.types",
    "SqlmendError": "sqlmend.errors", "ConfigError": "sqlmend.errors",
    "DatabaseNotFoundError": "sqlmend.errors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sqlmend' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["__version__", *_LAZY]

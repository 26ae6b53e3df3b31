"""sqlmend: correct the SQL written by text-to-SQL systems.

Two published methods, joined behind one guard:

* ErrorLLM -- explicit error detection (static rules, a language model with
  dedicated error tokens) followed by error-guided refinement;
* MIRA -- a per-database repair memory built from confirmed corrections and
  reused only when database evidence shows the recorded error recurs.

The first law: never turn a correct query into a wrong one.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sqlmend")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["__version__"]

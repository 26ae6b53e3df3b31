"""Each package imports only packages of a lower rank (docs/architecture.md), and sqlglot only inside ``sql/``.

Every ``import`` statement of every module is read (those inside functions too). A package may
import itself and any package of a strictly lower rank: two packages never import each other,
even when they share a rank.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sqlmend

ROOT = Path(sqlmend.__file__).parent

#: Package or module (first name under ``sqlmend``) -> its rank (the rows of the layer table in
#: docs/architecture.md). Imports go to strictly lower ranks only.
LAYERS = {
    "types": 0, "errors": 0, "progress": 0, "matching": 0, "__init__": 0,
    "paths": 1, "taxonomy": 1, "sql": 1,
    "db": 2, "guard": 2,
    "stage": 3, "structure": 3, "llm": 3, "data": 3, "testing": 3,
    "rules": 4, "memory": 4, "refine": 4,
    "synth": 5, "evaluation": 5,
    "search": 6,
    "detect": 7, "consensus": 7,
    "pipeline": 8,
    "api": 9,
    "batch": 10,
    "review": 11, "service": 11,
    "mcpserver": 12,
    "bench": 13, "stress": 13,
    "cli": 14, "integrations": 14,
    "__main__": 15,
}


def _unit(parts: tuple[str, ...]) -> str:
    return parts[0].removesuffix(".py")


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "sqlmend":
                yield from (f"sqlmend.{a.name}" for a in node.names)
            else:
                yield node.module


def test_every_module_has_a_layer():
    units = {_unit(p.relative_to(ROOT).parts) for p in ROOT.rglob("*.py")}
    assert units <= set(LAYERS), sorted(units - set(LAYERS))


def _target(name: str) -> str | None:
    """The unit an imported name belongs to (``sqlmend.__version__`` is the package's ``__init__``)."""
    top = name.split(".")
    if top[0] != "sqlmend" or len(top) < 2:
        return None
    return top[1] if (ROOT / top[1]).is_dir() or (ROOT / f"{top[1]}.py").is_file() else "__init__"


def test_imports_run_downward_and_sqlglot_stays_in_sql():
    upward, sqlglot = [], []
    for path in sorted(ROOT.rglob("*.py")):
        unit = _unit(path.relative_to(ROOT).parts)
        for name in _imports(path):
            if name.split(".")[0] == "sqlglot" and unit != "sql":
                sqlglot.append(f"{path.relative_to(ROOT)} imports {name}")
            target = _target(name)
            if target is None or target == unit or unit == "__init__":
                continue
            if LAYERS.get(target, len(LAYERS)) >= LAYERS[unit]:
                upward.append(f"{path.relative_to(ROOT)} (rank {LAYERS[unit]}) imports {name} "
                              f"(rank {LAYERS.get(target)}): only strictly lower ranks may be imported")
    assert not sqlglot, sqlglot
    assert not upward, upward


"""Layers import downward only (docs/architecture.md), and sqlglot only inside ``sql/``.

Every ``import`` statement of every module is read (those inside functions too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import sqlmend

ROOT = Path(sqlmend.__file__).parent

#: Package or module (first name under ``sqlmend``) -> its layer.
LAYERS = {
    "types": 0, "errors": 0, "taxonomy": 0, "paths": 0, "progress": 0, "__init__": 0,
    "sql": 1,
    "db": 2,
    "guard": 3, "stage": 3, "structure": 3, "llm": 3,
    "rules": 4,
    "detect": 5, "synth": 5, "refine": 5, "memory": 5, "search": 5,
    "pipeline": 6,
    "bench": 7, "cli": 7, "service": 7, "review": 7,
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


def test_imports_run_downward_and_sqlglot_stays_in_sql():
    upward, sqlglot = [], []
    for path in sorted(ROOT.rglob("*.py")):
        unit = _unit(path.relative_to(ROOT).parts)
        for name in _imports(path):
            top = name.split(".")
            if top[0] == "sqlglot" and unit != "sql":
                sqlglot.append(f"{path.relative_to(ROOT)} imports {name}")
            if top[0] != "sqlmend" or len(top) < 2 or unit == "__init__":
                continue
            target = top[1]
            if target in LAYERS and LAYERS[target] > LAYERS[unit]:
                upward.append(f"{path.relative_to(ROOT)} (layer {LAYERS[unit]}) imports {name} "
                              f"(layer {LAYERS[target]})")
    assert not sqlglot, sqlglot
    assert not upward, upward

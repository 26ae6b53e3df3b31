"""docs/integrations.md's examples are the code of today: they parse, and every name they import exists (the
model packages aside, which an application brings)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
#: The model clients an example names: an application's own choice, not installed here.
MODELS = ("llama_index.llms.openai",)


def test_the_examples_parse_and_import_what_exists():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 3
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module not in MODELS:
                module = importlib.import_module(node.module)
                missing = [a.name for a in node.names if not hasattr(module, a.name)]
                assert not missing, (node.module, missing)


def test_the_cost_is_measured_with_its_command_and_date():
    page = PAGE.read_text(encoding="utf-8")
    section = page.split("## What a call costs", 1)[1].split("\n## ", 1)[0]
    assert "python -m sqlmend.integrations.cost" in section and re.search(r"Measured on \d{4}-\d\d-\d\d", section)
    rows = [line for line in section.splitlines() if line.startswith("| ") and line[2:].split(" |")[0] in
            ("langchain", "llamaindex", "vanna", "run_sql")]
    assert len(rows) == 4, section

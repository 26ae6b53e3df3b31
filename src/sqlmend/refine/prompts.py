"""Prompt files of the refinement package: YAML with ``system`` and ``user`` templates.

Templates use ``$name`` placeholders (:class:`string.Template`), so SQL and JSON
braces need no escaping.
"""

from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from sqlmend.errors import ConfigError

PROMPT_DIR = Path(__file__).with_name("prompts")


@lru_cache(maxsize=None)
def load(path: str | Path) -> dict[str, str]:
    """Read a prompt file (``system``, ``user`` and optional extra templates).

    Args:
        path: a YAML file, or a name under ``refine/prompts/`` without ``.yaml``.

    Raises:
        ConfigError: the file is missing or has no ``user`` template.
    """
    p = Path(path)
    if not p.suffix:
        p = PROMPT_DIR / f"{p}.yaml"
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"prompt file {p}: {exc}") from exc
    if "user" not in data:
        raise ConfigError(f"prompt file {p} has no 'user' template")
    return {k: str(v) for k, v in data.items()}


def render(template: str, **values: Any) -> str:
    """Fill ``$name`` placeholders; unknown ones stay as written."""
    return string.Template(template).safe_substitute({k: str(v) for k, v in values.items()})


def messages(prompt: dict[str, str], **values: Any) -> list[dict[str, str]]:
    """Build chat messages (system + user) from a prompt file's templates.

    Args:
        prompt: what :func:`load` returned.
        **values: the placeholder values.

    Returns:
        ``[{"role": "system", ...}, {"role": "user", ...}]`` (no system message if none).
    """
    out = []
    if prompt.get("system"):
        out.append({"role": "system", "content": render(prompt["system"], **values).strip()})
    out.append({"role": "user", "content": render(prompt["user"], **values).strip()})
    return out

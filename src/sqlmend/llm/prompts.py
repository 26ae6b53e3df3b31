"""Prompt files: the one template mechanism of sqlmend (refine, memory, detect, synth).

A prompt is a YAML data file ``<package>/prompts/<name>.yaml`` whose keys are
templates: ``user`` and an optional ``system`` for a chat, and any others a
caller fills itself (``example``, ``error``, ``assistant``, ``instruction``...).
Templates use ``$name`` / ``${name}`` placeholders (:class:`string.Template`), so
SQL and JSON braces need no escaping; ``$$`` writes a dollar.

>>> p = load("sqlmend.refine", "localize")
>>> sorted(p)[:2]
['system', 'user']
>>> render("Fix $sql for ${n}x", sql="SELECT {a}", n=2)
'Fix SELECT {a} for 2x'
"""

from __future__ import annotations

import string
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sqlmend.errors import ConfigError


@lru_cache(maxsize=None)
def load(package: str | Path, name: str | None = None, folder: str = "prompts") -> dict[str, str]:
    """Read a prompt (or other template) file.

    Args:
        package: the package whose ``prompts/`` folder holds it (``"sqlmend.memory"``),
            or the path of a YAML file (then no ``name``).
        name: the file name under ``prompts/``, without ``.yaml``.
        folder: the package's folder of such files (``templates`` for texts that are no prompt).

    Returns:
        ``{template name: template}``.

    Raises:
        ConfigError: the file is missing, is not YAML, or holds no template.
    """
    where = resources.files(str(package)).joinpath(folder, f"{name}.yaml") if name else Path(package)
    try:
        data = yaml.safe_load(where.read_text(encoding="utf-8")) or {}
    except (OSError, ModuleNotFoundError, yaml.YAMLError) as exc:
        raise ConfigError(f"prompt file {where}: {exc}") from exc
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"prompt file {where} holds no template")
    return {k: str(v) for k, v in data.items()}


def render(template: str, **values: Any) -> str:
    """Fill ``$name`` placeholders (values written with ``str``); unknown ones stay as written."""
    return string.Template(template).safe_substitute({k: str(v) for k, v in values.items()})


def messages(prompt: dict[str, str], **values: Any) -> list[dict[str, str]]:
    """Build chat messages (system + user) from a prompt file's templates.

    Args:
        prompt: what :func:`load` returned.
        **values: the placeholder values.

    Returns:
        ``[{"role": "system", ...}, {"role": "user", ...}]`` (no system message if none),
        each content stripped of surrounding blank space.

    Raises:
        ConfigError: the prompt has no ``user`` template.
    """
    if "user" not in prompt:
        raise ConfigError("prompt has no 'user' template")
    out = []
    if prompt.get("system"):
        out.append({"role": "system", "content": render(prompt["system"], **values).strip()})
    out.append({"role": "user", "content": render(prompt["user"], **values).strip()})
    return out

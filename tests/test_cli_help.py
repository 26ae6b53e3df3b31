"""Meta-tests of the command line: every command answers ``--help`` with a description, and the
commands the README shows under "On the command line" are real commands with real options."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from sqlmend.cli import app

runner = CliRunner()
README = Path(__file__).resolve().parents[1] / "README.md"


def _is_group(command: Any) -> bool:
    return isinstance(getattr(command, "commands", None), dict)  # typer ships its own click


def _walk(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command below ``command`` (groups included), with the words that reach it."""
    out = [(path, command)]
    if _is_group(command):
        for name, sub in sorted(command.commands.items()):
            out += _walk(sub, (*path, name))
    return out


COMMANDS = _walk(typer.main.get_command(app))


def test_the_walk_finds_the_command_tree():
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"", "correct", "bench", "bench correct", "memory"} <= paths
    assert len(paths) > 10


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=lambda v: " ".join(v) or "sqlmend"
                         if isinstance(v, tuple) else "")
def test_every_command_answers_help_with_a_description(path, command):
    assert (command.help or "").strip(), f"sqlmend {' '.join(path)} has no description"
    res = runner.invoke(app, [*path, "--help"])
    assert res.exit_code == 0, res.output
    first_line = command.help.strip().splitlines()[0]
    # rich wraps long lines: compare the first words of the description
    assert " ".join(first_line.split()[:4]) in " ".join(res.output.split())


def readme_commands(text: str) -> list[list[str]]:
    """The ``sqlmend ...`` command lines of the README's "On the command line" section, split into words.

    Args:
        text: the README.

    Returns:
        One word list per command (continuation lines joined), without the leading ``sqlmend``.
    """
    section = re.search(r"^## On the command line\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## On the command line' section"
    lines = section.group(1).replace("\\\n", " ").splitlines()
    return [shlex.split(line)[1:] for line in lines if line.strip().startswith("sqlmend ")]


def _resolve(words: list[str]) -> tuple[list[str], Any]:
    """The longest command path at the start of ``words``, and its command."""
    command = typer.main.get_command(app)
    path: list[str] = []
    for word in words:
        if not _is_group(command) or word not in command.commands:
            break
        command = command.commands[word]
        path.append(word)
    return path, command


README_COMMANDS = readme_commands(README.read_text(encoding="utf-8"))


def test_the_readme_shows_commands():
    assert len(README_COMMANDS) >= 3


@pytest.mark.parametrize("words", README_COMMANDS, ids=lambda w: " ".join(w[:3]))
def test_readme_commands_are_real(words):
    path, command = _resolve(words)
    assert path and not _is_group(command), f"not a command: sqlmend {' '.join(words)}"
    res = runner.invoke(app, [*path, "--help"])
    assert res.exit_code == 0, res.output
    known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    used = {w.split("=")[0] for w in words[len(path):] if w.startswith("--")}
    assert used <= known, f"sqlmend {' '.join(path)}: unknown options {sorted(used - known)}"


#: commands that show progress bars
PROGRESS = {"correct", "eval", "check", "synth", "train-detector", "detect", "memory build", "bench correct",
            "bench static", "bench memory", "bench detect", "bench values", "bench sql", "bench llm"}


@pytest.mark.parametrize("name", sorted(PROGRESS))
def test_every_command_with_progress_bars_takes_quiet(name):
    command = dict((" ".join(p), c) for p, c in COMMANDS)[name]
    opts = {o for param in command.params for o in param.opts}
    assert {"--quiet", "-q"} <= opts

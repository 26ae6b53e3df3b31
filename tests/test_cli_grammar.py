"""One grammar for the command line, and progress that only draws on a terminal.

* A short flag means one long option in every command and subcommand (``-q`` is ``--quiet``, ``-o`` is
  ``--out``), and a long option has one short flag. The command tree is walked through click (typer
  builds it), so a new command is checked without being listed here.
* Every command has help text and answers ``--help`` showing its short flags.
* Every progress bar goes through :mod:`sqlmend.progress`: piped or under CI a run writes a line per
  ten percent, not carriage-return updates; on a terminal it still draws a bar.
"""

from __future__ import annotations

import ast
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer
from typer.testing import CliRunner

import sqlmend
from sqlmend.cli import app
from sqlmend.progress import LineBar

#: long options whose short flag is part of the grammar: wherever the long option is, the short one is too.
GRAMMAR = {"--quiet": "-q", "--out": "-o"}


def walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command below ``command`` (groups included), with the words that reach it."""
    yield path, command
    for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
        yield from walk(sub, (*path, name))


def flags(root: Any) -> tuple[dict, dict]:
    """``{short: {long: [commands]}}`` and ``{long: {short: [commands]}}`` over the tree below ``root``."""
    by_short: dict = defaultdict(lambda: defaultdict(list))
    by_long: dict = defaultdict(lambda: defaultdict(list))
    for path, command in walk(root):
        where = " ".join(path) or "(root)"
        for param in command.params:
            opts = [*param.opts, *param.secondary_opts]
            long = next((o for o in opts if o.startswith("--")), param.name)
            for short in (o for o in opts if o.startswith("-") and not o.startswith("--")):
                by_short[short][long].append(where)
                by_long[long][short].append(where)
    return by_short, by_long


def clashes(root: Any) -> list[str]:
    """One line per short flag with two long meanings, and per long option with two short flags."""
    by_short, by_long = flags(root)

    def where(table: dict) -> str:
        return "; ".join(f"{k} in {', '.join(v)}" for k, v in sorted(table.items()))

    return ([f"{s} means {where(longs)}" for s, longs in sorted(by_short.items()) if len(longs) > 1]
            + [f"{long} is {where(shorts)}" for long, shorts in sorted(by_long.items()) if len(shorts) > 1])


ROOT = typer.main.get_command(app)
COMMANDS = list(walk(ROOT))


def test_the_walk_reaches_commands_and_subcommands():
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"correct", "check", "detect", "eval", "bench", "bench correct", "bench static", "memory build"} <= paths
    assert len(paths) > 30


def test_the_clash_finder_finds_a_clash_in_a_subcommand():
    toy, group = typer.Typer(), typer.Typer()

    @toy.command("a")
    def a(quiet: bool = typer.Option(False, "--quiet", "-q")) -> None:
        """A."""

    @group.command("b")
    def b(question: str = typer.Option("", "--question", "-q"), out: str = typer.Option("", "--out", "-O")) -> None:
        """B."""

    @group.command("c")
    def c(out: str = typer.Option("", "--out", "-o")) -> None:
        """C."""

    toy.add_typer(group, name="g")
    found = clashes(typer.main.get_command(toy))
    assert any(line.startswith("-q means --question in g b; --quiet in a") for line in found), found
    assert any(line.startswith("--out is -O in g b; -o in g c") for line in found), found


def test_no_short_flag_means_two_things():
    assert not clashes(ROOT), "\n".join(clashes(ROOT))


def test_quiet_and_out_have_their_short_flag_everywhere():
    missing = [f"sqlmend {' '.join(path)} {long} without {short}"
               for path, command in COMMANDS for param in command.params
               for long, short in GRAMMAR.items() if long in param.opts and short not in param.opts]
    assert not missing, missing
    by_short, _ = flags(ROOT)
    assert set(by_short["-q"]) == {"--quiet"} and set(by_short["-o"]) == {"--out"}


def test_every_command_has_help_text_and_its_help_shows_its_short_flags():
    runner = CliRunner()
    problems = []
    for path, command in COMMANDS:
        name = "sqlmend " + " ".join(path)
        if not (command.help or "").strip():
            problems.append(f"{name}: no help text")
        res = runner.invoke(app, [*path, "--help"], terminal_width=200)
        if res.exit_code != 0:
            problems.append(f"{name} --help: exit {res.exit_code}")
            continue
        shown = set(res.output.replace(",", " ").split())
        for param in command.params:
            for short in (o for o in param.opts if o.startswith("-") and not o.startswith("--")):
                if short not in shown:
                    problems.append(f"{name} --help does not show {short}")
    assert not problems, problems


def test_every_progress_bar_goes_through_sqlmend_progress():
    root = Path(sqlmend.__file__).parent
    direct = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "progress.py" and path.parent == root:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            direct += [f"{path.relative_to(root)} imports {n}" for n in names
                       if n.split(".")[0] == "tqdm" or n == "rich.progress"]
    assert not direct, direct


def test_a_line_bar_writes_a_line_per_tenth_and_one_at_the_end(capsys):
    bar = LineBar(total=200, desc="correct", unit="q", initial=50)  # resumed: 25% done before
    for _ in range(150):
        bar.update(1)
    bar.set_postfix(loss="0.123")
    bar.close()
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == [f"correct: {p}% {p * 2}/200 q" for p in range(30, 100, 10)] \
        + ["correct: 100% 200/200 q"]
    assert lines[-1].endswith("(loss=0.123)")
    for _ in LineBar(iter(range(5)), desc="no total"):  # no total: only the closing line
        pass
    assert capsys.readouterr().err.startswith("no total: 5 it, ")


# --- messages ----------------------------------------------------------------


def test_messages_name_their_verdict_and_type_once(spider_db):
    """``check`` prints "refused: ..." and "rewrite accepted (candidate ...)", not "refused: refused: ..." or
    "accepted (accepted: ...)"."""
    db = str(spider_db("pets_1"))
    runner = CliRunner()
    refused = runner.invoke(app, ["check", "--db", db, "--sql", "DELETE FROM Pets"])
    fixed = runner.invoke(app, ["check", "--db", db, "--question", "How many dogs?",
                                "--sql", "SELECT count(*) FROM Pets WHERE PetType = 'Dog'"])
    assert refused.exit_code == 0 and fixed.exit_code == 0, refused.output + fixed.output
    assert "EX03 [advisory] refused: not one read-only query" in refused.output
    assert "rewrite accepted (candidate executes and changes the result)" in fixed.output
    for word in ("refused", "accepted", "rejected", "error", "warning"):
        assert f"{word}: {word}" not in refused.output + fixed.output
        assert f"{word} ({word}:" not in refused.output + fixed.output


# --- a real run -------------------------------------------------------------


def _correct(tmp_path: Path, data_dir: Path, *, terminal: bool, ci: bool) -> bytes:
    """stderr+stdout of ``sqlmend correct`` on 30 tasks: piped, or stderr on a 100-column pseudo-terminal."""
    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    out = tmp_path / f"run-{terminal}-{ci}"
    cmd = [sys.executable, "-c", "from sqlmend.cli import main; main()", "correct", "--dataset", "spider-dev",
           "--pred", str(pred), "--limit", "30", "--stages", "static,guard", "--workers", "1", "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": "true"} if ci else {})
    if not terminal:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=300,
                              check=True).stdout
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    stdout = proc.stdout.read()
    assert proc.wait(timeout=300) == 0, seen + stdout
    return seen + stdout


def test_a_piped_run_writes_a_line_per_tenth(tmp_path, data_dir):
    text = _correct(tmp_path, data_dir, terminal=False, ci=False)
    lines = text.decode().splitlines()
    bars = [line for line in lines if line.startswith("correct: ")]
    assert b"\r" not in text and len(bars) == 10, lines
    assert bars[-1].startswith("correct: 100% 30/30 q") and "30 tasks:" in lines[-1]
    assert len(text) < 1024


def test_a_terminal_still_gets_a_bar_but_not_under_ci(tmp_path, data_dir):
    drawn = _correct(tmp_path, data_dir, terminal=True, ci=False)
    assert drawn.count(b"\r") > 2 and "|" in drawn.decode(errors="replace"), drawn
    under_ci = _correct(tmp_path, data_dir, terminal=True, ci=True).replace(b"\r\n", b"\n")
    assert b"\r" not in under_ci and under_ci.count(b"correct: ") == 10, under_ci

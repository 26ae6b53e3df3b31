"""Progress bars that draw only on a terminal: every bar and every message beside one goes through here.

On a terminal (stderr is a tty and ``CI`` is unset or false) :func:`bar` is a tqdm bar. Piped,
redirected to a file, or under CI (``CI=true``), it is a :class:`LineBar`: one plain line on stderr
per ten percent and one at the end, so a log holds about a dozen lines per bar instead of thousands
of carriage-return updates.

>>> import io
>>> out = io.StringIO()
>>> b = LineBar(total=20, desc="demo", unit="q", file=out)
>>> for _ in range(20):
...     b.update(1)
>>> b.close()
>>> len(out.getvalue().splitlines())
10
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Iterable, Iterator, TextIO

#: values of ``CI`` that do not mean "running under CI".
_NOT_CI = ("", "0", "false", "no", "off")


def interactive(stream: TextIO | None = None) -> bool:
    """Whether progress may redraw in place: ``stream`` (default stderr) is a terminal and ``CI`` is not set."""
    if os.environ.get("CI", "").strip().lower() not in _NOT_CI:
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class LineBar:
    """A progress bar for logs: a line per ten percent of ``total`` and one on :meth:`close`.

    It answers the part of tqdm's interface sqlmend uses (``update``, ``close``, ``set_postfix``,
    ``set_postfix_str``, ``set_description``, iteration, ``with``). Without a total it writes only
    the closing line.
    """

    def __init__(self, iterable: Iterable[Any] | None = None, total: float | None = None, desc: str = "",
                 unit: str = "it", initial: float = 0, disable: bool = False, file: TextIO | None = None,
                 **_: Any) -> None:
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.iterable, self.total, self.n, self.desc, self.unit = iterable, total, initial, desc, unit
        self.disable, self._file, self._postfix, self._closed = disable, file, "", False
        self._start = time.monotonic()
        self._tenth = self._tenth_of(initial)  # a resumed run does not report the part already done

    def _tenth_of(self, n: float) -> int:
        return min(int(10 * n / self.total), 10) if self.total else 0

    def update(self, n: float = 1) -> None:
        """Count ``n`` more done; write a line when a new tenth is reached (the last one waits for close)."""
        if self.disable or self._closed:
            return
        self.n += n
        tenth = self._tenth_of(self.n)
        if self._tenth < tenth < 10:
            self._tenth = tenth
            self._emit()

    def close(self) -> None:
        """Write the closing line (once)."""
        if self._closed:
            return
        self._closed = True
        if not self.disable:
            self._emit()

    def set_postfix(self, ordered_dict: dict[str, Any] | None = None, refresh: bool = True, **kwargs: Any) -> None:
        """Shown at the end of the next line, as tqdm shows it (``k=v, ...``)."""
        items = {**(ordered_dict or {}), **kwargs}
        self._postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self._postfix = s

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or ""

    def refresh(self) -> None:
        """Nothing to redraw."""

    def line(self) -> str:
        """The line this bar writes now, e.g. ``correct: 50% 100/200 q, 12.3 s``."""
        done = f"{self.n:g}"
        if self.total:
            done = f"{100 * self.n / self.total:.0f}% {done}/{self.total:g}"
        text = f"{self.desc}: {done} {self.unit}, {time.monotonic() - self._start:.1f} s"
        return f"{text} ({self._postfix})" if self._postfix else text

    def _emit(self) -> None:
        print(self.line(), file=self._file or sys.stderr, flush=True)

    def __iter__(self) -> Iterator[Any]:
        try:
            for x in self.iterable or ():
                yield x
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> LineBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def bar(iterable: Iterable[Any] | None = None, *, total: float | None = None, desc: str = "", unit: str = "it",
        initial: float = 0, disable: bool = False, leave: bool = True, **kwargs: Any) -> Any:
    """A progress bar: tqdm on a terminal, a :class:`LineBar` piped or under CI.

    Args:
        iterable: wrap this iterable (as ``tqdm(iterable)``), or None for a bar fed by ``update``.
        total: the number of steps (taken from ``len(iterable)`` when None and it has one).
        desc: the name at the start of the bar.
        unit: what one step is (``q``, ``sql``, ``db``).
        initial: steps already done (a resumed run).
        disable: draw nothing (``--quiet``).
        leave: keep the finished bar on a terminal (tqdm's ``leave``).
        kwargs: other tqdm options (``dynamic_ncols``...), for the terminal bar only.
    """
    if interactive():
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, disable=disable, leave=leave,
                    **kwargs)
    return LineBar(iterable, total=total, desc=desc, unit=unit, initial=initial, disable=disable,
                   file=kwargs.get("file"))


def write(message: str, file: TextIO | None = None) -> None:
    """Print a message beside the bars (stdout by default, as ``tqdm.write``) without breaking one on a terminal."""
    if interactive():
        from tqdm import tqdm

        tqdm.write(message, file=file)
    else:
        print(message, file=file or sys.stdout, flush=True)

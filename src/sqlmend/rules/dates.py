"""Dates written as text: the format a column stores them in, and a literal's date in another format.

A column of dates stored as text has one format, read from its values (:func:`stored_format`: every
distinct value indexed writes the same way in exactly one of :data:`STORED_FORMATS`). A literal
compared with it may write a date in another format (:func:`literal_dates`: ``'2024/03/01'``,
``'03/15/2024'``, ``'March 15, 2024'``...); :func:`in_format` writes it in the stored one.
"""

from __future__ import annotations

import re
from datetime import datetime

#: Formats a column may store its dates in (each value must write back byte for byte).
STORED_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S",
                  "%Y-%m-%d %H:%M:%S.%f", "%Y/%m/%d", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y", "%d-%m-%Y",
                  "%m-%d-%Y", "%Y%m%d", "%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y")
#: Formats a literal's date is read in (leading zeros optional); a time of day may follow.
LITERAL_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y", "%d-%m-%Y",
                   "%m-%d-%Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y", "%d %B %Y", "%d %b %Y",
                   "%d %B, %Y")
#: A time of day after a date: ``09:47``, ``09:47:22``, ``09:47:22.5``.
_TIME = re.compile(r"(?P<date>.*?\d)(?:[ T,]+(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,6}))?)?)?")
#: A format whose text sorts as its dates do (year, month, day, then time): a range compares right.
_SORTABLE = re.compile(r"^%Y[-/]%m[-/]%d")
#: Values of a column read to decide its format.
SAMPLE = 500


def _parse(text: str, fmt: str) -> datetime | None:
    try:
        return datetime.strptime(text, fmt)
    except ValueError:
        return None


def _writes(value: str, fmt: str) -> bool:
    parsed = _parse(value, fmt)
    return parsed is not None and parsed.strftime(fmt) == value


def stored_format(values: list[str]) -> str | None:
    """The one format every value writes in (None: no values, no such format, or more than one).

    >>> stored_format(["2024-03-15", "2023-12-01"]), stored_format(["03/15/2024", "12/01/2023"])
    ('%Y-%m-%d', '%m/%d/%Y')
    >>> stored_format(["03/04/2024"]) is None   # day first or month first: the data cannot tell
    True
    """
    values = [v for v in values[:SAMPLE] if v]
    if not values:
        return None
    fits = [f for f in STORED_FORMATS if all(_writes(v, f) for v in values)]
    return fits[0] if len(fits) == 1 else None


def date_part(fmt: str) -> str:
    """The date part of a format (``'%Y-%m-%d %H:%M:%S'`` -> ``'%Y-%m-%d'``)."""
    return re.split(r"[ T]%H", fmt, maxsplit=1)[0]


def sortable(fmt: str) -> bool:
    """Whether the format's text sorts as its dates do, so that ``<`` and ``>`` compare dates."""
    return bool(_SORTABLE.match(fmt))


def literal_dates(text: str) -> set[datetime]:
    """The dates a literal may write (two when day and month may be read either way; none: no date).

    >>> sorted(d.day for d in literal_dates("03/04/2024")), len(literal_dates("03/15/2024"))
    ([3, 4], 1)
    """
    text = text.strip()
    if not re.search(r"\d", text) or len(text) > 40:
        return set()
    m = _TIME.fullmatch(text)
    if m is None:
        return set()
    days = {d for f in LITERAL_FORMATS if (d := _parse(m.group("date"), f)) is not None}
    if m.group("h") is None:
        return days
    try:
        clock = dict(hour=int(m.group("h")), minute=int(m.group("m")), second=int(m.group("s") or 0),
                     microsecond=int((m.group("f") or "0").ljust(6, "0")))
        return {d.replace(**clock) for d in days}
    except ValueError:
        return set()


def written_in(text: str, fmt: str) -> bool:
    """Whether a literal writes its date in ``fmt``, or in its date part, byte for byte.

    >>> written_in("2024-03-15", "%Y-%m-%d %H:%M:%S"), written_in("2024/03/15", "%Y-%m-%d")
    (True, False)
    """
    text = text.strip()
    return _writes(text, fmt) or _writes(text, date_part(fmt))


_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
          r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
#: Dates a question may write: ISO, year first with slashes, day.month.year, and with the month's name.
_QUESTION_DATES = re.compile(
    rf"\b\d{{4}}[-/]\d{{1,2}}[-/]\d{{1,2}}\b|\b\d{{1,2}}\.\d{{1,2}}\.\d{{4}}\b|"
    rf"\b{_MONTH}\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b|\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTH},? \d{{4}}\b",
    re.I)


def question_dates(question: str) -> set[datetime]:
    """The days a question names unambiguously ("after March 5, 2018", "on 2018-03-05").

    >>> sorted(d.day for d in question_dates("Orders placed after 5th March 2018 or on 2019-01-02?"))
    [2, 5]
    """
    out: set[datetime] = set()
    for m in _QUESTION_DATES.finditer(question or ""):
        text = re.sub(r"(?<=\d)(st|nd|rd|th)\b|\bof |\.(?= )", "", m.group(), flags=re.I)
        days = {d.replace(hour=0, minute=0, second=0, microsecond=0) for d in literal_dates(text)}
        if len(days) == 1:
            out |= days
    return out


def has_time(text: str) -> bool:
    """Whether a literal writes a time of day."""
    return bool(re.search(r"\d:\d", text))


def in_format(day: datetime, fmt: str) -> str:
    """A date written in a format."""
    return day.strftime(fmt)

"""Spreadsheet-safe CSV/TSV cells: one rule for every writer, and its inverse for the importer.

Offer ids, SKUs, regions, raw GPU names and imported provider names come from providers, so a
cell can hold ``=HYPERLINK(...)``. A spreadsheet opening the file would run it as a formula
(CSV injection). As OWASP advises, a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or
a carriage return is written with a single quote in front, which spreadsheets show as text.
Numbers stay numbers: ``-1.5`` is a number, not a formula, and is written as it is.

A carriage return inside a text is written as a line feed: Python's CSV writer leaves a field
holding a lone CR unquoted, which splits the row for every reader. Text starting with a line
feed is quoted too, so a CR that began a text stays recognisable.

The rule is reversible up to that CR: a text that already starts with quotes followed by one of
those characters gets one more quote, so ``unescape`` (used when our own exports are imported
back) returns the original text (a CR read back as a LF).

``EXPORT_COLUMNS`` are the fixed columns of the wide history export, which its importer tells
from the provider columns.
"""

from __future__ import annotations

import re
from typing import Any, Final

#: Fixed columns of the wide export (``history --format csv``); any other column is a provider.
EXPORT_COLUMNS: Final = ("time", "gpu", "metric", "unit", "kinds", "min", "p25", "median", "providers", "offers")

#: First characters a spreadsheet reads as the start of a formula (or that hide one).
FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")
_ESCAPED: Final = re.compile(r"'*[=+\-@\t\r\n]")
_QUOTED: Final = re.compile(r"''*[=+\-@\t\r\n]")
_NUMBER: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def is_number(text: str) -> bool:
    """Whether ``text`` is a plain decimal number (``-3``, ``+1.5e-3``), which a spreadsheet reads as one."""
    return _NUMBER.fullmatch(text) is not None


def safe_cell(value: Any) -> Any:
    """``value`` as a CSV/TSV cell that no spreadsheet runs as a formula; non-text values pass."""
    if not isinstance(value, str):
        return value
    if "\r" in value:
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    if _ESCAPED.match(value) and not is_number(value):
        return "'" + value
    return value


def safe_row(values: Any) -> list[Any]:
    """Every cell of a row through ``safe_cell``."""
    return [safe_cell(v) for v in values]


def unescape(text: str) -> str:
    """The original text of a cell ``safe_cell`` wrote (other text is returned as it is)."""
    return text[1:] if _QUOTED.match(text) else text

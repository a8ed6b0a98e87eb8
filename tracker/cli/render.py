"""Tables that never cut a number: columns chosen by the width available, plain text when piped.

A command hands over its rows and its columns in display order; each column has a priority:

* ``ESSENTIAL`` columns are always shown (by default the first column and the keys in
  ``ESSENTIAL_KEYS``: GPU, provider, kind, $/GPU-h, region);
* ``DEFAULT`` columns are shown when they fit the terminal, in order, until the width is used;
* ``WIDE`` columns only with ``--wide`` (which also adds every other key the rows carry).

``--columns a,b,c`` shows exactly those (keys or headers). In a terminal the table is a Rich
table whose cells fold rather than end in "…", and whose number columns never wrap; when the
output is not a terminal (a pipe, a file) it is a plain table as wide as its content, with
every default column, so ``| grep`` and ``> file`` see complete values. ``--format tsv`` gives
the same columns with raw values (ISO times, unrounded numbers) and keys as headers.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from tracker.cells import safe_cell
from tracker.errors import ConfigError

ESSENTIAL, DEFAULT, WIDE = 0, 1, 2
#: Keys shown whatever the width: what a price row means and what it costs.
ESSENTIAL_KEYS = frozenset({"gpu", "provider", "kind", "price_per_gpu_hour", "region"})
#: Table borders: one leading edge plus, per column, two padding spaces and one edge.
_EDGE, _PER_COLUMN = 1, 3
#: Gap between columns of the plain (not a terminal) table.
_GAP = "  "


@dataclass(frozen=True)
class Column:
    """One column: the row key, its header and how much it matters (``ESSENTIAL``, ``DEFAULT``, ``WIDE``)."""

    key: str
    header: str
    priority: int = DEFAULT


ColumnSpec = Column | tuple[str, str] | tuple[str, str, int]


def as_columns(specs: Iterable[ColumnSpec], rows: Sequence[Mapping[str, Any]] = ()) -> list[Column]:
    """``(key, header)`` pairs -> ``Column``s; the first column and ``ESSENTIAL_KEYS`` are essential.
    Without specs, every key of the rows in order."""
    out: list[Column] = []
    for i, spec in enumerate(specs):
        if isinstance(spec, Column):
            out.append(spec)
            continue
        key, header, *rest = spec
        priority = rest[0] if rest else (ESSENTIAL if i == 0 or key in ESSENTIAL_KEYS else DEFAULT)
        out.append(Column(key, header, priority))
    if not out and rows:
        out = [Column(k, k, ESSENTIAL if i == 0 else DEFAULT) for i, k in enumerate(rows[0])]
    return out


def cell(value: Any) -> str:
    """A value as a table shows it: ``-`` for none, dates to the minute, small prices to 4 places."""
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        return f"{value:,.4f}" if abs(value) < 10 else f"{value:,.2f}"
    return str(value)


def plain_value(value: Any) -> Any:
    """A value as JSON, CSV and TSV carry it: ISO times, floats without binary noise."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 10)  # drop float noise, keep small ratios such as USD per TFLOP-hour
    return value


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'runpod'?)"`` for the closest choice, or ``""`` when none is close."""
    lowered = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[close[0]]!r}?)" if close else ""


def _numbers(kinds: set[type]) -> bool:
    """A column whose values are of ``kinds`` (``None`` aside) is a number column."""
    kinds = kinds - {type(None)}
    return bool(kinds) and all(issubclass(k, int | float) and not issubclass(k, bool) for k in kinds)


def _numeric(column: Column, rows: Sequence[Mapping[str, Any]]) -> bool:
    return _numbers({type(r.get(column.key)) for r in rows})


def _natural_width(column: Column, rows: Sequence[Mapping[str, Any]]) -> int:
    return max([len(column.header), *(len(cell(r.get(column.key))) for r in rows)])


def pick_columns(
    columns: Sequence[Column],
    rows: Sequence[Mapping[str, Any]],
    *,
    width: int | None,
    wide: bool = False,
    only: str | None = None,
) -> tuple[list[Column], list[Column]]:
    """(shown, hidden): ``only`` (``"a,b,c"``) exactly, ``wide`` everything, otherwise the
    essential columns plus as many default ones as fit ``width`` (``None``: no limit)."""
    if only:
        return _named(columns, rows, only), []
    if wide:
        listed = {c.key for c in columns}
        extra = [Column(k, k, WIDE) for k in (rows[0] if rows else {}) if k not in listed]
        return [*columns, *extra], []
    candidates = [c for c in columns if c.priority <= DEFAULT]
    if width is None:
        return candidates, [c for c in columns if c.priority > DEFAULT]
    used = _EDGE + sum(_natural_width(c, rows) + _PER_COLUMN for c in candidates if c.priority == ESSENTIAL)
    keep: set[str] = {c.key for c in candidates if c.priority == ESSENTIAL}
    for c in candidates:
        if c.key in keep:
            continue
        need = _natural_width(c, rows) + _PER_COLUMN
        if used + need <= width:
            keep.add(c.key)
            used += need
    return [c for c in candidates if c.key in keep], [c for c in columns if c.key not in keep]


def _named(columns: Sequence[Column], rows: Sequence[Mapping[str, Any]], only: str) -> list[Column]:
    by_name: dict[str, Column] = {}
    for k in (rows[0] if rows else {}):
        by_name[k.lower()] = Column(k, k)
    for c in columns:
        by_name[c.key.lower()] = c
        by_name.setdefault(c.header.lower(), c)
    out = []
    for name in (n.strip() for n in only.split(",")):
        if not name:
            continue
        if name.lower() not in by_name:
            keys = [c.key for c in columns] + [k for k in (rows[0] if rows else {}) if k not in {c.key for c in columns}]
            raise ConfigError(f"--columns: no column {name!r}{did_you_mean(name, keys)}; "
                              f"columns: {', '.join(keys)}")
        out.append(by_name[name.lower()])
    return out


def _texts(values: list[Any]) -> tuple[list[str], bool]:
    """One column's cells as text, and whether it is a number column. Each distinct value is
    formatted once (a year of hourly history is hundreds of thousands of cells, most of them
    repeats); a column mixing ``True`` with numbers (equal as keys) is formatted cell by cell."""
    kinds = set(map(type, values))
    numeric = _numbers(kinds)
    try:
        if bool in kinds and len(kinds) > 1:
            raise TypeError("formatted one by one")
        shown = {v: cell(v).replace("\n", " ") for v in set(values)}
        return list(map(shown.__getitem__, values)), numeric
    except (TypeError, KeyError):  # unhashable, or unequal to itself (NaN)
        return [cell(v).replace("\n", " ") for v in values], numeric


def plain_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> str:
    """Aligned plain text, as wide as its content: numbers right-aligned, nothing cut; each
    line laid out by one format string."""
    laid = [_texts([r.get(c.key) for r in rows]) for c in columns]
    widths = [max([len(c.header), *map(len, set(texts))]) for c, (texts, _n) in zip(columns, laid, strict=True)]
    layout = _GAP.join(f"{{:{'>' if numeric else '<'}{w}}}" for w, (_t, numeric) in zip(widths, laid, strict=True))
    out = [layout.format(*[c.header for c in columns]).rstrip(), layout.format(*["-" * w for w in widths]).rstrip()]
    out += [layout.format(*line).rstrip() for line in zip(*[texts for texts, _n in laid])]
    return "\n".join(out) + "\n"


def tsv(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> str:
    """Tab-separated keys and raw values; an empty field for none; tabs and newlines in text become
    spaces; a text a spreadsheet would run as a formula gets a quote in front (``tracker.cells``)."""

    def field(value: Any) -> str:
        v = plain_value(value)
        if v is None:
            return ""
        text = safe_cell(v) if isinstance(v, str) else str(v)
        return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")

    lines = ["\t".join(safe_cell(c.key) for c in columns)]
    lines += ["\t".join(field(r.get(c.key)) for c in columns) for r in rows]
    return "\n".join(lines) + "\n"


def print_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    *,
    title: str | None = None,
    wide: bool = False,
    only: str | None = None,
    console: Any = None,
    notes: TextIO | None = None,
) -> list[Column]:
    """Print rows for a person: a Rich table fitted to the terminal, or a plain table when
    stdout is not one. Returns the columns shown; a hidden-columns hint goes to ``notes``
    (stderr), so it never mixes with the data."""
    from rich.console import Console

    out = console or Console()
    terminal = out.is_terminal
    shown, hidden = pick_columns(columns, rows, width=out.width if terminal else None, wide=wide, only=only)
    if not terminal:
        if title:
            out.file.write(title + "\n")
        out.file.write(plain_table(rows, shown))
        if not rows:
            out.file.write("no rows\n")
        return shown
    _rich_table(out, rows, shown, title)
    if hidden and rows and not (wide or only):
        (notes or sys.stderr).write(
            f"{len(hidden)} more column(s) with --wide, or choose with --columns: "
            f"{', '.join(c.key for c in hidden)}\n")
    return shown


def _rich_table(out: Any, rows: Sequence[Mapping[str, Any]], shown: Sequence[Column], title: str | None) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title)
    for c in shown:
        numeric = _numeric(c, rows)
        # Numbers never wrap and keep their full width; text folds onto a second line instead of "…".
        table.add_column(c.header, justify="right" if numeric else "left", no_wrap=numeric,
                         min_width=_natural_width(c, rows) if numeric else None, overflow="fold")
    for r in rows:
        table.add_row(*[Text(cell(r.get(c.key))) for c in shown])
    numbers = _EDGE + sum(_natural_width(c, rows) + _PER_COLUMN for c in shown if _numeric(c, rows))
    # When even the number columns do not fit (--wide, --columns), let the line run long
    # (the terminal wraps it) rather than let Rich squeeze a number.
    out.print(table, width=max(out.width, numbers) if numbers > out.width else None)
    if not rows:
        out.print("[dim]no rows[/dim]")

"""Tables that never cut a number: columns chosen by the width available, plain text when piped.

A command hands over its rows (``Rows``: one mapping per row, or the same rows as columns) and its
columns in display order; each column has a priority:

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

import csv
import difflib
import io
import math
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, TextIO

from tracker.cells import safe_cell
from tracker.errors import ConfigError
from tracker.repeats import Repeats

ESSENTIAL, DEFAULT, WIDE = 0, 1, 2
#: Keys shown whatever the width: what a price row means and what it costs.
ESSENTIAL_KEYS = frozenset({"gpu", "provider", "kind", "price_per_gpu_hour", "region"})
#: Table borders: one leading edge plus, per column, two padding spaces and one edge.
_EDGE, _PER_COLUMN = 1, 3
#: Gap between columns of the plain (not a terminal) table.
_GAP = "  "
#: A text column wraps down to its longest word, but no narrower than ``_MIN_TEXT`` and no wider than
#: ``_LONGEST_WORD`` (a longer word, a URL, folds).
_MIN_TEXT, _LONGEST_WORD = 6, 24


@dataclass(frozen=True)
class Column:
    """One column: the row key, its header and how much it matters (``ESSENTIAL``, ``DEFAULT``, ``WIDE``)."""

    key: str
    header: str
    priority: int = DEFAULT


ColumnSpec = Column | tuple[str, str] | tuple[str, str, int]
#: A command's rows: one mapping per row, or the same rows as columns (key -> values in row
#: order), the form a long table is built in (a year of hourly history), which a table reads
#: column by column as it is instead of taking each value back out of a mapping per row (and a
#: column given as ``tracker.repeats.Repeats`` run by run).
Rows = Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]]


def row_keys(rows: Rows) -> list[str]:
    """The keys of the first row (every column's key of rows given as columns)."""
    if isinstance(rows, Mapping):
        return list(rows)
    return list(rows[0]) if rows else []


def as_columns(specs: Iterable[ColumnSpec], rows: Rows = ()) -> list[Column]:
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
    if not out:
        out = [Column(k, k, ESSENTIAL if i == 0 else DEFAULT) for i, k in enumerate(row_keys(rows))]
    return out


def cell(value: Any) -> str:
    """A value as a table shows it: ``-`` for none, dates to the minute, small prices to 4 places."""
    if value is None:
        return "-"
    if isinstance(value, datetime):  # as strftime("%Y-%m-%d %H:%M UTC") writes it, faster (hourly years)
        return f"{value.isoformat(' ', 'minutes')[:16]} UTC" if value.year >= 1000 else value.strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        return f"{value:,.4f}" if abs(value) < 10 else f"{value:,.2f}"
    return str(value)


def quantity(value: Any) -> str:
    """A number that stands for itself (a key/value table's row): cents from 1 up, 4 places below."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:,.2f}" if abs(value) >= 1 or value == 0 else f"{value:.4f}"
    return cell(value)


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


def _distinct(values: list[Any]) -> Collection[Any]:
    """A column's values each once, which is all a cell's text or field depends on (a year of
    hourly history is hundreds of thousands of cells, most of them repeats); all of them where
    two could share a key (values of two types, such as ``True`` and ``1`` or ``1`` and
    ``1.0``; NaN, which another NaN object than the one a set kept never finds) or a value is
    unhashable."""
    try:
        distinct = set(values)
    except TypeError:
        return values
    if len(set(map(type, values)) - {type(None)}) > 1 or any(v != v for v in distinct):
        return values
    return distinct


def _each(values: list[Any], distinct: Collection[Any], convert: Callable[[Any], Any]) -> list[Any]:
    """``convert`` of every value, called once per distinct value (``_distinct``)."""
    if distinct is values:
        return list(map(convert, values))
    return list(map({v: convert(v) for v in distinct}.__getitem__, values))


def _numeric(distinct: Collection[Any]) -> bool:
    """Whether a column (its values each once, ``_distinct``) holds numbers only, ``None`` aside
    (judged by the values' types, each once)."""
    types = set(map(type, distinct)) - {type(None)}
    return bool(types) and all(issubclass(t, int | float) and t is not bool for t in types)


def _decimals(values: Iterable[Any]) -> int:
    """The decimal places one column shows all its numbers with: none when all are whole (counts, GB),
    2 when every value is exact to the cent, else 4 when any value is below 10, else 2
    (``2``, ``2.1200`` and ``1,978.90`` never share a column)."""
    floats = [abs(v) for v in values if isinstance(v, float) and math.isfinite(v)]
    if all(v.is_integer() for v in floats):
        return 0
    if all(abs(v - round(v, 2)) <= 1e-9 * max(1.0, v) for v in floats):
        return 2
    return 4 if min((v for v in floats if v), default=0.0) < 10 else 2


def column_texts(column: Column, rows: Rows) -> list[str]:
    """The cells of one column as a table shows them: every number in one format (the same
    decimal places, thousands separated), anything else as ``cell`` writes it, one line each."""
    return _Cells(rows).texts(column)[0]


def _formatter(distinct: Collection[Any]) -> Callable[[Any], str]:
    """How each value of a column (its values each once: ``_distinct``) is written (an infinity
    or NaN formats as ``cell`` writes it: ``inf``, ``nan``)."""
    spec = f",.{_decimals(distinct)}f"
    whole = not any(isinstance(v, float) for v in distinct)

    def text(value: Any) -> str:
        if type(value) is float:  # the common case first (a float column is never ``whole``)
            return format(value, spec)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value) if whole else format(value, spec)
        return cell(value).replace("\n", " ")

    return text


class _Cells:
    """The rows of one table, each column read and its texts formatted once however often the
    layout asks, each distinct value once (a year of hourly history is half a million cells); a
    column given as ``Repeats`` is read, formatted and padded once per run, and spelled out row
    by row only as the lines are written."""

    def __init__(self, rows: Rows) -> None:
        self.rows = rows
        self.count = len(next(iter(rows.values()), ())) if isinstance(rows, Mapping) else len(rows)
        self._read: dict[str, tuple[list[Any], Collection[Any], list[int] | None]] = {}
        self._texts: dict[str, tuple[list[str], set[str]]] = {}

    def _values(self, column: Column) -> tuple[list[Any], Collection[Any], list[int] | None]:
        """The column's values (one per run of a ``Repeats``), those each once (``_distinct``),
        and how many rows each run holds (``None``: one value per row)."""
        if column.key not in self._read:
            rows, key = self.rows, column.key
            counts = None
            if isinstance(rows, Mapping):
                given = rows.get(key)
                if isinstance(given, Repeats):
                    values, counts = [v for v, _n in given.runs], [n for _v, n in given.runs]
                else:
                    values = list(given) if given is not None else [None] * self.count
            else:
                try:
                    values = list(map(itemgetter(key), rows))
                except KeyError:  # a row without the key shows none
                    values = [r.get(key) for r in rows]
            self._read[column.key] = values, _distinct(values), counts
        return self._read[column.key]

    def _spelled(self, column: Column, per_value: list[Any]) -> list[Any]:
        """``per_value`` (one item per value ``_values`` read) one item per row."""
        counts = self._values(column)[2]
        return per_value if counts is None else list(chain.from_iterable(map(repeat, per_value, counts)))

    def converted(self, column: Column, convert: Callable[[Any], Any]) -> list[Any]:
        """``convert`` of every cell in row order, called once per distinct value."""
        values, distinct, _counts = self._values(column)
        return self._spelled(column, _each(values, distinct, convert))

    def raw(self, column: Column) -> list[Any]:
        """Every cell as CSV and TSV carry it: ``plain_value``, then ``safe_cell``."""
        return self.converted(column, lambda v: safe_cell(plain_value(v)))

    def _value_texts(self, column: Column) -> tuple[list[str], set[str]]:
        """The text of each value ``_values`` read, and those texts each once (all a width depends on)."""
        if column.key not in self._texts:
            values, distinct, _counts = self._values(column)
            texts = _each(values, distinct, _formatter(distinct))
            self._texts[column.key] = texts, set(texts)
        return self._texts[column.key]

    def texts(self, column: Column) -> tuple[list[str], set[str]]:
        """Every cell's text in row order, and those texts each once (all a width depends on)."""
        texts, distinct = self._value_texts(column)
        return self._spelled(column, texts), distinct

    def padded(self, column: Column, width: int) -> Iterable[str]:
        """Every cell's text padded to ``width`` (numbers to the right), each distinct text padded once."""
        pad = str.rjust if self.numeric(column) else str.ljust
        texts, distinct = self._value_texts(column)
        return self._spelled(column, list(map({t: pad(t, width) for t in distinct}.__getitem__, texts)))

    def numeric(self, column: Column) -> bool:
        return _numeric(self._values(column)[1])

    def natural(self, column: Column) -> int:
        return max([len(column.header), *map(len, self._value_texts(column)[1])])

    def narrowest(self, column: Column) -> int:
        """How narrow a column may get: a number never narrower than its widest value (its header
        wraps at spaces); text down to its longest word (at least ``_MIN_TEXT``, at most
        ``_LONGEST_WORD``, past which a word such as a URL folds), never wider than it needs."""
        texts = self._value_texts(column)[1]
        if self.numeric(column):
            return max([*(len(w) for w in column.header.split()), *(len(t) for t in texts)])
        words = [len(w) for t in [column.header, *texts] for w in t.split()]
        return min(self.natural(column), max(_MIN_TEXT, min(max(words, default=0), _LONGEST_WORD)))


def plain_rows(rows: Rows) -> list[dict[str, Any]]:
    """One mapping per row of the values as JSON carries them (``plain_value``); rows given as
    columns are converted a column at a time, each distinct value once."""
    if not isinstance(rows, Mapping):
        return [{k: plain_value(v) for k, v in r.items()} for r in rows]
    cells = _Cells(rows)
    cols = [cells.converted(Column(k, k), plain_value) for k in rows]
    return [dict(zip(rows, values, strict=True)) for values in zip(*cols, strict=True)]


def fit_widths(columns: Sequence[Column], rows: Rows, width: int,
               cells: _Cells | None = None) -> list[int]:
    """Each column's width in a table ``width`` wide: natural when everything fits, otherwise the
    widest columns wrap first, each down to its narrowest (numbers keep their width, their headers wrap)."""
    cells = cells or _Cells(rows)
    widths = [cells.natural(c) for c in columns]
    floors = [cells.narrowest(c) for c in columns]
    excess = _EDGE + sum(w + _PER_COLUMN for w in widths) - width
    while excess > 0:
        shrinkable = [i for i, (w, f) in enumerate(zip(widths, floors, strict=True)) if w > f]
        if not shrinkable:
            break
        i = max(shrinkable, key=lambda j: widths[j])
        step = min(excess, widths[i] - floors[i], max(1, widths[i] - max([widths[j] for j in shrinkable if j != i],
                                                                            default=floors[i])))
        widths[i] -= step
        excess -= step
    return widths


def pick_columns(
    columns: Sequence[Column],
    rows: Rows,
    *,
    width: int | None,
    wide: bool = False,
    only: str | None = None,
    cells: _Cells | None = None,
) -> tuple[list[Column], list[Column]]:
    """(shown, hidden): ``only`` (``"a,b,c"``) exactly, ``wide`` everything, otherwise the
    essential columns plus as many default ones as fit ``width`` (``None``: no limit) whole.

    When even the essential columns do not fit, their text wraps (``fit_widths``); when wrapping
    is not enough, the last essential text columns move out (named by the hint below the table),
    so a number is never pushed off the screen."""
    if only:
        return _named(columns, rows, only), []
    if wide:
        listed = {c.key for c in columns}
        extra = [Column(k, k, WIDE) for k in row_keys(rows) if k not in listed]
        return [*columns, *extra], []
    candidates = [c for c in columns if c.priority <= DEFAULT]
    if width is None:
        return candidates, [c for c in columns if c.priority > DEFAULT]
    cells = cells or _Cells(rows)
    essential = [c for c in candidates if c.priority == ESSENTIAL]
    while len(essential) > 1 and _EDGE + sum(cells.narrowest(c) + _PER_COLUMN for c in essential) > width:
        texts = [c for c in essential[1:] if not cells.numeric(c)]
        if not texts:
            break
        essential.remove(texts[-1])
    keep: set[str] = {c.key for c in essential}
    if len(essential) < sum(c.priority == ESSENTIAL for c in candidates):
        return essential, [c for c in columns if c.key not in keep]  # room for nothing more
    used = _EDGE + sum(cells.natural(c) + _PER_COLUMN for c in essential)
    for c in candidates:
        if c.key in keep or c.priority == ESSENTIAL:
            continue
        need = cells.natural(c) + _PER_COLUMN
        if used + need <= width:
            keep.add(c.key)
            used += need
    return [c for c in candidates if c.key in keep], [c for c in columns if c.key not in keep]


def _named(columns: Sequence[Column], rows: Rows, only: str) -> list[Column]:
    by_name: dict[str, Column] = {}
    for k in row_keys(rows):
        by_name[k.lower()] = Column(k, k)
    for c in columns:
        by_name[c.key.lower()] = c
        by_name.setdefault(c.header.lower(), c)
    out = []
    for name in (n.strip() for n in only.split(",")):
        if not name:
            continue
        if name.lower() not in by_name:
            keys = [c.key for c in columns] + [k for k in row_keys(rows) if k not in {c.key for c in columns}]
            raise ConfigError(f"--columns: no column {name!r}{did_you_mean(name, keys)}; "
                              f"columns: {', '.join(keys)}")
        out.append(by_name[name.lower()])
    return out


def plain_table(rows: Rows, columns: Sequence[Column], cells: _Cells | None = None) -> str:
    """Aligned plain text, as wide as its content: numbers right-aligned, nothing cut; each
    column's distinct texts padded once, each line their join."""
    cells = cells or _Cells(rows)
    widths = [cells.natural(c) for c in columns]
    laid = [cells.padded(c, w) for c, w in zip(columns, widths, strict=True)]
    pads = [str.rjust if cells.numeric(c) else str.ljust for c in columns]
    head = [pad(c.header, w) for c, w, pad in zip(columns, widths, pads, strict=True)]
    out = [_GAP.join(head).rstrip(), _GAP.join("-" * w for w in widths).rstrip(),
           *map(str.rstrip, map(_GAP.join, zip(*laid)))]
    return "\n".join(out) + "\n"


def tsv(rows: Rows, columns: Sequence[Column]) -> str:
    """Tab-separated keys and raw values; an empty field for none; tabs and newlines in text become
    spaces; a text a spreadsheet would run as a formula gets a quote in front (``tracker.cells``)."""

    def field(v: Any) -> str:
        return "" if v is None else str(v).replace("\t", " ").replace("\r", " ").replace("\n", " ")

    cells = _Cells(rows)
    fields = [list(map(field, cells.raw(c))) for c in columns]
    lines = ["\t".join(safe_cell(c.key) for c in columns)]
    lines += list(map("\t".join, zip(*fields))) if fields else [""] * cells.count
    return "\n".join(lines) + "\n"


def csv_text(rows: Rows, keys: Sequence[str]) -> str:
    """CSV of the values of ``keys`` (the header first), raw as TSV carries them (``_Cells.raw``)."""
    cells = _Cells(rows)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([safe_cell(k) for k in keys])
    writer.writerows(zip(*[cells.raw(Column(k, k)) for k in keys]) if keys else [()] * cells.count)
    return buf.getvalue()


def print_table(
    rows: Rows,
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
    cells = _Cells(rows)
    shown, hidden = pick_columns(columns, rows, width=out.width if terminal else None, wide=wide, only=only,
                                 cells=cells)
    if not terminal:
        if title:
            out.file.write(title + "\n")
        out.file.write(plain_table(rows, shown, cells))
        if not cells.count:
            out.file.write("no rows\n")
        return shown
    _rich_table(out, cells, shown, title)
    if hidden and cells.count and not (wide or only):
        import textwrap  # the hint wraps between names at the terminal's width, never inside one

        hint = f"{len(hidden)} more column(s) with --wide, or choose with --columns: {', '.join(c.key for c in hidden)}"
        (notes or sys.stderr).write(textwrap.fill(hint, width=max(out.width, 40), break_long_words=False,
                                                  break_on_hyphens=False) + "\n")
    return shown


def _rich_table(out: Any, cells: _Cells, shown: Sequence[Column], title: str | None) -> None:
    from rich.table import Table
    from rich.text import Text

    rows = cells.rows
    table = Table(title=title)
    widths = fit_widths(shown, rows, out.width, cells)
    texts = [cells.texts(c)[0] for c in shown]
    for c, w in zip(shown, widths, strict=True):
        numeric = cells.numeric(c)
        # Every width is fixed here: a number column is never narrower than its widest value, so
        # only its header wraps; text folds onto further lines instead of ending in "…".
        table.add_column(c.header, justify="right" if numeric else "left", width=w, overflow="fold")
    for i in range(cells.count):
        table.add_row(*[Text(t[i]) for t in texts])
    needed = _EDGE + sum(w + _PER_COLUMN for w in widths)
    # When even the number columns do not fit (--wide, --columns), let the line run long
    # (the terminal wraps it) rather than let Rich squeeze a number.
    width = out.width
    out.width = max(width, needed)  # Rich never prints wider than its console: it would squeeze a number
    try:
        out.print(table)
    finally:
        out.width = width
    if not cells.count:
        out.print("[dim]no rows[/dim]")

"""Shared helpers for scrapers that read a provider's HTML pricing page.

Not a provider (``scrapers.registry`` skips a module named ``html``). Pages change without
notice, so HTML scrapers locate data by what a human reads -- table headers, labels, units,
"$2.49/hr" -- never by generated CSS class names, and raise ``layout_changed(...)`` (a
``ParseError``) as soon as an expected landmark is gone instead of returning a partial result.

API
---
Money
    ``parse_money(text, default_currency="USD") -> Money | None``
        Reads one price as printed: "$2.49/hr", "$0.000694 / sec", "from $1.99", "2,49 €",
        "US$ 1,234.50 per month", "$3.90/GPU-hr", "$1.99 - $2.49/h", "2.24*", "Contact sales".
        Returns ``None`` when the text holds no price at all ("", "-", "––", "N/A").
        ``Money(amount, currency, per, is_from, contact_sales, amount_max, per_gpu)``:

        - ``amount``: the (lower) number, ``None`` only when ``contact_sales``;
        - ``currency``: ISO code from the symbol/code, else ``default_currency``;
        - ``per``: ``"hour" | "second" | "minute" | "day" | "month" | "year" | None`` (``None`` = no unit printed);
        - ``is_from``: "from $1.99", "starting at", "as low as", "$1.99+";
        - ``contact_sales``: "Contact sales/us", "Talk to sales", "Request a quote", "Custom pricing";
        - ``amount_max``: upper end of a range ("$1.99 - $2.49"), else ``None``;
        - ``per_gpu``: the unit itself says per GPU ("/GPU-hr", "per GPU hour").
    ``read_money(text, where, required=False) -> (Money | None, extra)``
        One offer's price cell: ``(parse_money(text), {})``; ``(None, {})`` for a blank cell
        (``is_blank``: "", "-", "––", "N/A": "not offered"; unless ``required``, then a reason);
        ``(None, unreadable(...))`` for a cell holding text that is no price ("TBA", "$1e999"), and
        ``(money with the amount negated, unreadable(...))`` for "-$2.50", the reason naming
        ``where`` (``cell_field(column, row)``: "'On-demand' of 'NVIDIA H100'"), so that row alone
        is quarantined and the rest of the page is kept.
    ``hourly(money, assume="hour") -> float``
        The amount converted to per hour (second x3600, minute x60, day /24, month /730, year /8760);
        ``assume`` is the unit when none is printed (pass ``None`` to insist on a printed one).
        Raises ``ValueError`` for contact-sales prices (check ``money.amount`` first).
    ``parse_number(text) -> float | None`` and ``parse_gb(text) -> float | None`` ("80GB", "1.8 TB" -> 1800,
        "1.5 TiB" -> 1536, "24 GiB") for spec cells.

Documents and tables
    ``soup(html) -> BeautifulSoup`` (lxml parser); ``text_of(node) -> str`` (whitespace collapsed,
    nbsp -> space); ``norm_label(text)`` (lower-case, hyphens/underscores as spaces, for comparing labels).
    ``is_hidden(node) -> bool``: the node or an ancestor is hidden by markup (``hidden`` attribute,
    inline ``display:none``/``visibility:hidden``, or a utility class ``hide``,
    ``hidden``, ``d-none``, ``sr-only``, ``w-condition-invisible``): stale duplicate cards on Webflow pages.
    ``visible_text(node) -> str``: like ``text_of`` but leaves out text under hidden elements.
    ``find_tables(doc, *labels) -> list[Tag]``: every ``<table>`` whose header cells include every
    label (matching as ``header_index`` does); falls back to the element around loose ``<th>`` cells
    (recorded excerpts often start inside a table). ``find_table`` returns the first or ``None``.
    ``header_cells(table) -> list[str]``: texts of the header row (the ``thead`` row, ``th`` or ``td``
    cells alike / first all-``th`` row / loose ``th``).
    ``header_index(table, *labels, provider="") -> dict[str, int]``: column index of each label; a
    header equal to the label wins over one that contains it as whole words ("On demand" finds
    "On-demand price"; "RAM" never finds "VRAM"). Missing label ->
    ``layout_changed(provider, "no 'X' column ...")``. ``column_index(table, label) -> int | None``
    for optional columns.
    ``body_rows(table) -> list[list[Tag]]``: cells (``td`` and ``th``) of every row outside ``thead``
    that has a ``td``.

Errors
    ``layout_changed(provider, what) -> ParseError`` with message ``"<provider>: layout changed: <what>"``;
    ``raise`` it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from scrapers._lazy import lazy_module
from scrapers.base import unreadable
from tracker.errors import ParseError
from tracker.kinds import HOURS_PER_MONTH

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag
    from bs4.element import PageElement
#: BeautifulSoup (with lxml) is loaded when a page is first parsed, not when a scraper is imported.
bs4 = lazy_module("bs4")

__all__ = [
    "children",
    "is_comment",
    "is_document",
    "is_tag",
    "is_text",
    "slug",
    "page_soup",
    "HOURS_PER_MONTH",
    "Money",
    "body_rows",
    "cell_field",
    "column_index",
    "find_table",
    "find_tables",
    "header_cells",
    "header_index",
    "hourly",
    "is_blank",
    "is_hidden",
    "visible_text",
    "layout_changed",
    "norm_label",
    "parse_gb",
    "parse_money",
    "parse_number",
    "read_money",
    "soup",
    "text_of",
]


_PER_HOUR_FACTOR: Final = {
    "hour": 1.0,
    "second": 3600.0,
    "minute": 60.0,
    "day": 1 / 24,
    "month": 1 / HOURS_PER_MONTH,
    "year": 1 / (12 * HOURS_PER_MONTH),
}

_SYMBOLS: Final = (
    ("US$", "USD"),
    ("CA$", "CAD"),
    ("C$", "CAD"),
    ("A$", "AUD"),
    ("$", "USD"),
    ("€", "EUR"),
    ("£", "GBP"),
    ("₹", "INR"),
    ("¥", "JPY"),
    ("₩", "KRW"),
)
_CODES: Final = frozenset(
    {"USD", "EUR", "GBP", "CAD", "AUD", "CHF", "JPY", "CNY", "INR", "SEK", "NOK", "DKK", "PLN", "SGD", "KRW", "HKD", "NZD"}
)

# A number not glued to a word ("SXM6 180GB" is 180, not 6180); space/apostrophe thousands only in groups of 3.
_NUMBER = r"(?<![A-Za-z\d.,])(?:\d{1,3}(?:[\u00a0\u202f' ]\d{3})+(?:[.,]\d+)?(?!\d)|\d[\d,.]*\d|\d)"
_NUMBER_RE: Final = re.compile(_NUMBER)
#: A number in exponent notation ("1e999", "2.5E+3"): no price page prints one.
_EXPONENT_RE: Final = re.compile(r"(?<![A-Za-z\d.])\d+(?:\.\d+)?[eE][+-]?\d+\b")
_SYMBOL_RE: Final = "|".join(re.escape(s) for s, _ in _SYMBOLS)
_CODE_RE: Final = "|".join(sorted(_CODES))
# A currency marker before or after the number, e.g. "$2.49", "2,49 €", "USD 1.20", "1.20 USD".
_MONEY_RE: Final = re.compile(
    rf"(?P<pre>{_SYMBOL_RE}|\b(?:{_CODE_RE})\b)\s*(?P<n1>{_NUMBER})"
    rf"|(?P<n2>{_NUMBER})\s*(?P<post>{_SYMBOL_RE}|\b(?:{_CODE_RE})\b)"
)
_RANGE_SEP_RE: Final = re.compile(r"^\s*(?:-|–|—|to)\s*$", re.IGNORECASE)
_CONTACT_RE: Final = re.compile(
    r"contact\s+(?:sales|us)|talk\s+to\s+(?:sales|us)|request\s+(?:a\s+)?quote|get\s+a\s+quote|custom\s+pricing|on\s+request",
    re.IGNORECASE,
)
_FROM_RE: Final = re.compile(r"\b(?:from|starting\s+(?:at|from)|starts\s+at|as\s+low\s+as)\b", re.IGNORECASE)
_UNIT_RES: Final = (
    ("second", re.compile(r"(?:/|\bper\b|\ba\b)\s*(?:gpu[\s\-/]*)?(?:s|sec|secs|second|seconds)\b|\bgpu[\s\-]*(?:sec|second)s?\b", re.IGNORECASE)),
    ("minute", re.compile(r"(?:/|\bper\b|\ba\b)\s*(?:gpu[\s\-/]*)?(?:min|mins|minute|minutes)\b|\bgpu[\s\-]*minutes?\b", re.IGNORECASE)),
    ("hour", re.compile(r"(?:/|\bper\b|\ban\b)\s*(?:gpu[\s\-/]*)?(?:h|hr|hrs|hour|hours)\b|\bgpu[\s\-]*(?:hr|hour)s?\b|\bhourly\b", re.IGNORECASE)),
    ("day", re.compile(r"(?:/|\bper\b|\ba\b)\s*(?:gpu[\s\-/]*)?(?:d|day|days)\b|\bdaily\b", re.IGNORECASE)),
    ("month", re.compile(r"(?:/|\bper\b|\ba\b)\s*(?:gpu[\s\-/]*)?(?:mo|mon|month|months)\b|\bmonthly\b", re.IGNORECASE)),
    ("year", re.compile(r"(?:/|\bper\b|\ba\b)\s*(?:yr|year|years|annum)\b|\b(?:yearly|annually)\b", re.IGNORECASE)),
)
_PER_GPU_RE: Final = re.compile(r"(?:/|\bper\b)\s*gpu\b|\bgpu[\s\-]*(?:hr|hour|sec|second|min|minute)s?\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Money:
    """One printed price. ``amount`` is ``None`` only for "Contact sales"-style cells."""

    amount: float | None
    currency: str = "USD"
    per: str | None = None
    is_from: bool = False
    contact_sales: bool = False
    amount_max: float | None = None
    per_gpu: bool = False


def _to_float(raw: str) -> float | None:
    """'1,234.50' / '1.234,50' / '2,49' / '0.000694' / '1 234,5' -> float."""
    s = re.sub(r"[\s\u00a0\u202f']", "", raw)
    if not s:
        return None
    if "," in s and "." in s:
        if s.rfind(",") > s.rfind("."):
            s = s.replace(".", "").replace(",", ".")
        else:
            s = s.replace(",", "")
    elif "," in s:
        parts = s.split(",")
        # "1,234" / "12,345,678": thousands separators; "2,49" / "0,5": decimal comma.
        if len(parts) > 2 or (len(parts[1]) == 3 and parts[0] not in ("0", "")):
            s = s.replace(",", "")
        else:
            s = s.replace(",", ".")
    elif s.count(".") > 1:
        s = s.replace(".", "")
    try:
        return float(s)
    except ValueError:
        return None


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u00a0", " ").replace("\u202f", " ")).strip()


def parse_number(text: str | None) -> float | None:
    """First number in ``text`` ("1,472" -> 1472.0, "30 vCPU" -> 30.0), or ``None``."""
    if not text:
        return None
    m = _NUMBER_RE.search(_clean(text))
    return _to_float(m.group(0)) if m else None


def parse_gb(text: str | None) -> float | None:
    """A memory size in GB: "80GB" -> 80, "1.8 TB" -> 1800, "1.5 TiB" -> 1536, "24 GiB" -> 24, "512 MB" -> 0.512.

    GB and GiB are taken as printed (pages mix them for the same machines); a decimal TB/MB is
    1000 of the next unit and a binary TiB/MiB 1024, so "1.8 TB" agrees with the "1800 GiB" the
    rows beside it print instead of becoming 1843.2.
    """
    if not text:
        return None
    m = re.search(rf"({_NUMBER})\s*(TB|TiB|GB|GiB|G|MB|MiB)\b", _clean(text), re.IGNORECASE)
    if not m:
        return None
    value = _to_float(m.group(1))
    if value is None:
        return None
    unit = m.group(2).upper()
    scale = 1024 if unit.endswith("IB") else 1000
    if unit.startswith("T"):
        return value * scale
    if unit.startswith("M"):
        return value / scale
    return value


def _currency(marker: str | None, default: str) -> str:
    if not marker:
        return default
    for symbol, code in _SYMBOLS:
        if marker == symbol:
            return code
    return marker.upper()


#: A minus sign (ASCII or U+2212) right before an amount or its currency marker, at the start of
#: the text or after a space or parenthesis (so "A100-$2" and ranges "1 - 2" are not negatives).
_MINUS_BEFORE_RE: Final = re.compile(r"(?:^|[\s($€£])[-\u2212]\s*(?:[$€£]|USD|EUR|GBP)?\s*$", re.IGNORECASE)


def _number_start(s: str, start: int, end: int) -> int:
    """Where the digits of the amount matched at ``s[start:end]`` begin (after any currency marker)."""
    m = re.search(r"[\d.]", s[start:end])
    return start + m.start() if m else start


def parse_money(text: str | None, default_currency: str = "USD") -> Money | None:
    """Parse one printed price (see the module docstring); ``None`` when there is no price."""
    if text is None:
        return None
    s = _clean(text)
    if not s:
        return None
    exponent = _EXPONENT_RE.search(s)
    if exponent:  # "$1e999" would otherwise read as $1: a wrong price, never a guess
        raise ValueError(f"unreadable amount {exponent.group(0)!r} in price {s!r}")
    matches = list(_MONEY_RE.finditer(s))
    amounts: list[tuple[float, int, int]] = []  # (value, start, end)
    currency = default_currency
    if matches:
        first = matches[0]
        currency = _currency(first.group("pre") or first.group("post"), default_currency)
        for m in matches[:2]:
            value = _to_float(m.group("n1") or m.group("n2"))
            if value is not None:
                amounts.append((value, m.start(), m.end()))
        # "$1.99 - 2.49/hr": a bare second number right after a range separator.
        if len(amounts) == 1:
            tail = s[amounts[0][2]:]
            m2 = re.match(rf"(\s*(?:-|–|—|to)\s*)({_NUMBER})", tail, re.IGNORECASE)
            if m2:
                value = _to_float(m2.group(2))
                if value is not None:
                    end = amounts[0][2] + m2.end()
                    amounts.append((value, amounts[0][2] + m2.start(2), end))
    else:
        # No currency marker: a bare number ("2.24*", "0.55") in the default currency.
        for m in list(_NUMBER_RE.finditer(s))[:2]:
            value = _to_float(m.group(0))
            if value is not None:
                amounts.append((value, m.start(), m.end()))
    contact = bool(_CONTACT_RE.search(s))
    if not amounts:
        return Money(None, currency, contact_sales=True) if contact else None
    amount, start, end = amounts[0]
    if _MINUS_BEFORE_RE.search(s[:_number_start(s, start, end)]):
        amount = -amount  # "-$2.50", "$-2.50", "−2.50": a negative figure, which validation refuses by name
    amount_max = None
    if len(amounts) > 1 and _RANGE_SEP_RE.match(s[end : amounts[1][1]]):
        amount_max = amounts[1][0]
        end = amounts[1][2]
    after = s[end:]
    per = None
    first_at = len(after) + 1
    for unit, rx in _UNIT_RES:  # the unit printed nearest the amount wins
        um = rx.search(after)
        if um and um.start() < first_at:
            per, first_at = unit, um.start()
    is_from = bool(_FROM_RE.search(s[:start])) or after.lstrip().startswith("+")
    return Money(
        amount=amount,
        currency=currency,
        per=per,
        is_from=is_from,
        contact_sales=False,
        amount_max=amount_max,
        per_gpu=bool(_PER_GPU_RE.search(after)),
    )


_BLANK_RE: Final = re.compile(r"^[\s\-–—‒−]*$|^n/?a$", re.IGNORECASE)


def is_blank(text: str | None) -> bool:
    """A cell that prints no value at all: empty, dashes, "N/A"."""
    return not text or bool(_BLANK_RE.match(text))


def cell_field(column: str, row: str) -> str:
    """How a quarantine reason names one cell of a page: ``'On-demand' of 'NVIDIA H100'``."""
    return f"{column!r} of {row!r}"


def read_money(
    text: str | None, where: str, default_currency: str = "USD", *, required: bool = False
) -> tuple[Money | None, dict[str, str]]:
    """One offer's printed price (see the module docstring): a cell that holds text but no price
    (or, when ``required``, a blank one: pages that print no "not offered") quarantines that offer
    with ``where`` named, instead of failing the page or reading as "not offered"; whether *every*
    row's price became unreadable (the layout changed) is ``Scraper.readable``'s call."""
    try:
        money = parse_money(text, default_currency)
    except ValueError:
        money = None
    if money is not None and money.amount is not None and money.amount < 0:  # parse_money keeps the sign
        return money, unreadable("price", where, text or "", "a negative price")
    if money is not None:
        return money, {}
    if is_blank(text) and not required:
        return None, {}
    return None, unreadable("price", where, text or "", "not a price")


def hourly(money: Money, assume: str | None = "hour") -> float:
    """``money.amount`` per hour; ``assume`` is the unit when the text printed none."""
    if money.amount is None:
        raise ValueError("price is 'contact sales': no amount to convert")
    per = money.per or assume
    if per is None:
        raise ValueError(f"price {money.amount} has no time unit")
    return money.amount * _PER_HOUR_FACTOR[per]


# --- documents and tables ---------------------------------------------------------------


def page_soup(provider: str, raw: object) -> BeautifulSoup:
    """The parsed page a page scraper's ``fetch`` returned; anything but non-empty HTML text is
    ``layout_changed`` (a parser never turns an empty or foreign payload into "no offers")."""
    if not isinstance(raw, (str, bytes)):
        raise layout_changed(provider, f"expected the page's HTML text, got {type(raw).__name__}")
    if not raw.strip():
        raise layout_changed(provider, "the page is empty")
    return soup(raw)


def soup(html: str | bytes) -> BeautifulSoup:
    """Parse a page with lxml (fast and lenient with broken markup)."""
    return bs4.BeautifulSoup(html, "lxml")


def text_of(node: PageElement | None) -> str:
    """Visible text of ``node`` with whitespace collapsed ('' for ``None``)."""
    if node is None:
        return ""
    raw = node.get_text(" ") if is_tag(node) else str(node)
    return _clean(raw)


_HIDDEN_CLASSES: Final = frozenset({"hide", "hidden", "is-hidden", "d-none", "sr-only", "visually-hidden", "w-condition-invisible"})
_HIDDEN_STYLE_RE: Final = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


def slug(text: str) -> str:
    """A stable sku from a printed name: lower case, runs of anything else than letters and
    digits as one dash (``"H100 SXM (80GB)"`` -> ``"h100-sxm-80gb"``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def is_tag(node: Any) -> bool:
    """Whether ``node`` is an element (not text, a comment or None): ``isinstance(node, Tag)``
    without importing BeautifulSoup into the caller."""
    return isinstance(node, bs4.Tag)


def is_text(node: Any) -> bool:
    """Whether ``node`` is plain text (not a comment, CDATA or an element)."""
    return type(node) is bs4.element.NavigableString


def is_comment(node: Any) -> bool:
    """Whether ``node`` is an HTML comment."""
    return isinstance(node, bs4.element.Comment)


def is_document(node: Any) -> bool:
    """Whether ``node`` is the parsed document itself (the root, above every element)."""
    return isinstance(node, bs4.BeautifulSoup)


def children(tag: Tag) -> list[Tag]:
    """The element children of ``tag`` (text between them left out)."""
    return [c for c in tag.children if is_tag(c)]


def _hidden_here(el: Tag) -> bool:
    return (
        el.has_attr("hidden")
        or bool(_HIDDEN_STYLE_RE.search(str(el.get("style", ""))))
        or bool(_HIDDEN_CLASSES.intersection(el.get("class") or ()))
    )


def is_hidden(node: PageElement | None) -> bool:
    """Whether ``node`` or one of its ancestors is hidden by the markup itself (no CSS is evaluated)."""
    el = node if is_tag(node) else getattr(node, "parent", None)
    while is_tag(el):
        if _hidden_here(el):
            return True
        el = el.parent
    return False


def visible_text(node: PageElement | None) -> str:
    """``text_of(node)`` without the text of hidden descendants (see ``is_hidden``)."""
    if node is None or is_hidden(node):
        return ""
    if not is_tag(node):
        return _clean(str(node))
    parts: list[str] = []

    def walk(el: Tag) -> None:
        for child in el.children:
            if is_tag(child):
                if child.name not in ("script", "style", "template") and not _hidden_here(child):
                    walk(child)
            elif type(child) in (bs4.element.NavigableString, bs4.element.CData):
                parts.append(str(child))

    walk(node)
    return _clean(" ".join(parts))


def norm_label(text: str) -> str:
    """Comparable form of a label: lower-case, '-'/'_' as spaces, whitespace collapsed."""
    return _clean(re.sub(r"[-_‐–]", " ", text)).lower()


def _row_cells(tr: Tag) -> list[Tag]:
    return [c for c in tr.find_all(["td", "th"], recursive=False)]


def header_cells(table: Tag) -> list[str]:
    """Header texts: the ``thead`` row, else the first row made only of ``th``, else loose ``th`` cells.

    A ``thead`` row counts whatever its cells are (``th`` or ``td``, mixed too: an empty ``<td>``
    above the name column keeps the indices aligned with the body rows); with several rows in
    ``thead`` the last one, the one right above the data, names the columns.
    """
    thead = table.find("thead")
    if is_tag(thead):
        rows = [cells for tr in thead.find_all("tr") if (cells := _row_cells(tr))]
        cells = rows[-1] if rows else thead.find_all(["th", "td"])
        if cells:
            return [text_of(c) for c in cells]
    for tr in table.find_all("tr"):
        cells = _row_cells(tr)
        if cells and all(c.name == "th" for c in cells):
            return [text_of(c) for c in cells]
        if cells:
            break
    return [text_of(c) for c in table.find_all("th")]


def _match(headers: list[str], label: str) -> int | None:
    want = norm_label(label)
    normed = [norm_label(h) for h in headers]
    for i, h in enumerate(normed):
        if h == want:
            return i
    whole_words = re.compile(rf"(?<!\w){re.escape(want)}(?!\w)")  # "ram" must not match "vram"
    for i, h in enumerate(normed):
        if whole_words.search(h):
            return i
    return None


def column_index(table: Tag, label: str) -> int | None:
    """Index of the column headed ``label`` (as ``header_index`` matches), or ``None`` if absent."""
    return _match(header_cells(table), label)


def header_index(table: Tag, *labels: str, provider: str = "") -> dict[str, int]:
    """Column index of each label (exact header match first, then "header contains label")."""
    headers = header_cells(table)
    found: dict[str, int] = {}
    for label in labels:
        i = _match(headers, label)
        if i is None:
            raise layout_changed(provider or "html", f"no {label!r} column (headers: {headers})")
        found[label] = i
    return found


def find_tables(doc: Tag, *labels: str) -> list[Tag]:
    """Every table whose headers include every label (pages often repeat one table per GPU family
    or per tab); for excerpts without a ``<table>``, the element around the loose ``<th>`` cells."""
    candidates: list[Tag] = list(doc.find_all("table"))
    if not candidates:
        for th in doc.find_all("th"):
            parent = th.parent
            if is_tag(parent) and parent not in candidates:
                candidates.append(parent)
    found = []
    for table in candidates:
        headers = header_cells(table)
        if headers and all(_match(headers, label) is not None for label in labels):
            found.append(table)
    return found


def find_table(doc: Tag, *labels: str) -> Tag | None:
    """The first of ``find_tables(doc, *labels)``, or ``None``."""
    tables = find_tables(doc, *labels)
    return tables[0] if tables else None


def body_rows(table: Tag) -> list[list[Tag]]:
    """Cells of each data row (rows holding at least one ``td``, outside ``thead``), in document order.

    Header rows inside ``thead`` are headers even when made of ``td`` cells, never data.
    """
    rows = []
    for tr in table.find_all("tr"):
        section = tr.find_parent(["thead", "tbody", "tfoot", "table"])
        if section is not None and section.name == "thead":
            continue
        cells = _row_cells(tr)
        if any(c.name == "td" for c in cells):
            rows.append(cells)
    return rows


def layout_changed(provider: str, what: str) -> ParseError:
    """``ParseError("<provider>: layout changed: <what>")`` -- raise it when a landmark is gone."""
    return ParseError(f"{provider}: layout changed: {what}")


class GpuRow(NamedTuple):
    """One data row of a page's GPU table: its table, the column of each header asked for, its
    cells, the GPU as printed and the memory the row states (``None``: not stated)."""

    table: Tag
    col: dict[str, int]
    cells: list[Tag]
    gpu: str
    memory_gb: float | None


def gpu_table_rows(provider: str, raw: object, gpu: str, memory: str, *labels: str) -> Iterator[GpuRow]:
    """Every row of every table of the page ``raw`` headed ``gpu``, ``memory`` and ``labels``: the
    preamble the pages priced per GPU-hour in a table share. No such table, a table without rows,
    a row shorter than its headers or one naming no GPU is a changed layout (``ParseError``)."""
    tables = find_tables(page_soup(provider, raw), gpu, memory, *labels)
    if not tables:
        names = [repr(h) for h in (gpu, memory, *labels)]
        raise layout_changed(provider, f"no table with {', '.join(names[:-1])} and {names[-1]} columns")
    for table in tables:
        col = header_index(table, gpu, memory, *labels, provider=provider)
        rows = body_rows(table)
        if not rows:
            raise layout_changed(provider, "the GPU table has no rows")
        for cells in rows:
            if len(cells) <= max(col.values()):
                raise layout_changed(provider, f"row {text_of(cells[0])!r} has {len(cells)} cells")
            name = text_of(cells[col[gpu]])
            if not name:
                raise layout_changed(provider, "a GPU row names no GPU")
            yield GpuRow(table, col, cells, name, parse_gb(text_of(cells[col[memory]])))


def hourly_price(text: str, where: str) -> tuple[float | None, str, dict[str, Any]]:
    """A printed price cell read as ``(price per hour, currency, extra)``: an amount without a unit
    is per hour; "Contact sales" is no price (``extra["contact_sales"]``); text that is no price
    leaves the offer to be quarantined (``extra`` says why, naming ``where``)."""
    money, bad = read_money(text, where, required=True)
    extra: dict[str, Any] = dict(bad)
    if money is not None and money.amount is not None:
        return round(hourly(money, assume="hour"), 6), money.currency, extra
    if money is not None:
        extra["contact_sales"] = True
    return None, money.currency if money is not None else "USD", extra


def printed_once(seen: dict[Any, float | None], key: Any, price: float | None, provider: str, what: str) -> bool:
    """Whether a page prints the row ``key`` for the first time (remembering its price in
    ``seen``): a row repeated at the same price is one offer (``False`` the second time); at
    another price the page is ambiguous, a changed layout (``ParseError`` naming ``what``)."""
    if key in seen:
        if seen[key] != price:
            raise layout_changed(provider, f"two different prices for {what}")
        return False
    seen[key] = price
    return True

"""Tests of the shared HTML-page helpers in ``scrapers/html.py``."""

from __future__ import annotations

import pytest

from scrapers.base import UNREADABLE_PRICE
from scrapers.html import (
    HOURS_PER_MONTH,
    Money,
    body_rows,
    cell_field,
    column_index,
    find_table,
    find_tables,
    header_cells,
    header_index,
    hourly,
    layout_changed,
    norm_label,
    parse_gb,
    parse_money,
    parse_number,
    read_money,
    soup,
    text_of,
)
from tracker.errors import ParseError


@pytest.mark.parametrize(
    ("text", "amount", "currency", "per"),
    [
        ("$2.49/hr", 2.49, "USD", "hour"),
        ("$3.64/h", 3.64, "USD", "hour"),
        ("$0.000694 / sec", 0.000694, "USD", "second"),
        ("$0.001097 <span>/ sec</span>".replace("<span>", "").replace("</span>", ""), 0.001097, "USD", "second"),
        ("2,49 €", 2.49, "EUR", None),
        ("1.234,56 €/month", 1234.56, "EUR", "month"),
        ("US$ 1,234.50 per month", 1234.5, "USD", "month"),
        ("$1,234", 1234.0, "USD", None),
        ("0,5 €", 0.5, "EUR", None),
        ("EUR 0.99/h", 0.99, "EUR", "hour"),
        ("£1.10 per hour", 1.10, "GBP", "hour"),
        ("$0.02/min", 0.02, "USD", "minute"),
        ("$10 per day", 10.0, "USD", "day"),
        ("$8,760 per year", 8760.0, "USD", "year"),
        ("$4.30", 4.30, "USD", None),
        ("  $\u00a029.10/h  ", 29.10, "USD", "hour"),
    ],
)
def test_parse_money_amount_currency_unit(text: str, amount: float, currency: str, per: str | None) -> None:
    money = parse_money(text)
    assert money is not None
    assert money.amount == pytest.approx(amount)
    assert money.currency == currency
    assert money.per == per
    assert not money.contact_sales


def test_from_prices_are_flagged() -> None:
    for text in ("from $1.99", "Starting at $1.99/hr", "as low as $1.99", "$1.99+"):
        money = parse_money(text)
        assert money is not None and money.amount == 1.99 and money.is_from, text
    assert not parse_money("$1.99")  .is_from  # type: ignore[union-attr]


def test_contact_sales_has_no_amount() -> None:
    for text in ("Contact sales", "Contact us", "Talk to sales", "Request a quote"):
        money = parse_money(text)
        assert money == Money(None, "USD", contact_sales=True), text


def test_no_price_at_all_is_none() -> None:
    for text in ("", "   ", "–", "––", "-", "N/A", None):
        assert parse_money(text) is None, text


def test_ranges_keep_both_ends() -> None:
    money = parse_money("$1.99 - $2.49/h")
    assert money is not None and (money.amount, money.amount_max, money.per) == (1.99, 2.49, "hour")
    money = parse_money("$1.99–2.49 per hour")
    assert money is not None and (money.amount, money.amount_max) == (1.99, 2.49)
    money = parse_money("€1 to €3 / month")
    assert money is not None and (money.amount, money.amount_max, money.currency, money.per) == (1, 3, "EUR", "month")


def test_per_gpu_units_are_flagged() -> None:
    money = parse_money("$3.90/GPU-hr")
    assert money is not None and money.per == "hour" and money.per_gpu
    money = parse_money("Starting at $0.5/GPU/hour")
    assert money is not None and money.per == "hour" and money.per_gpu and money.is_from
    money = parse_money("$2.49/hr")
    assert money is not None and not money.per_gpu


def test_nearest_unit_wins() -> None:
    money = parse_money("$2.49/hr, billed per second")
    assert money is not None and money.per == "hour"


def test_bare_numbers_use_the_default_currency() -> None:
    money = parse_money("2.24*", default_currency="EUR")
    assert money == Money(2.24, "EUR")


def test_hourly_converts_units() -> None:
    assert hourly(Money(0.001, per="second")) == pytest.approx(3.6)
    assert hourly(Money(0.05, per="minute")) == pytest.approx(3.0)
    assert hourly(Money(2.0, per="hour")) == 2.0
    assert hourly(Money(48.0, per="day")) == pytest.approx(2.0)
    assert hourly(Money(730.0, per="month")) == pytest.approx(730.0 / HOURS_PER_MONTH)
    assert hourly(Money(8760.0, per="year")) == pytest.approx(1.0)
    assert hourly(Money(2.5)) == 2.5  # no unit printed: assume hourly
    with pytest.raises(ValueError, match="no time unit"):
        hourly(Money(2.5), assume=None)
    with pytest.raises(ValueError, match="contact sales"):
        hourly(Money(None, contact_sales=True))


def test_numbers_and_sizes() -> None:
    assert parse_number("1,472") == 1472
    assert parse_number(" 30 vCPU") == 30
    assert parse_number("1.8 TB/s") == 1.8
    assert parse_number("/") is None
    assert parse_number(None) is None
    assert parse_gb("80GB") == 80
    assert parse_gb("B200 SXM6 180GB") == 180
    assert parse_gb("24 GiB") == 24
    assert parse_gb("1.8 TB") == 1800  # decimal TB: agrees with the "1800 GiB" printed beside it
    assert parse_gb("1.5 TiB") == 1536
    assert parse_gb("512 MB") == pytest.approx(0.512)
    assert parse_gb("512 MiB") == 0.5
    assert parse_gb("no size") is None


TABLE = """
<html><body>
<table class="x1"><tr><th>Plan</th><th>Price</th></tr><tr><td>cpu</td><td>$1</td></tr></table>
<table class="a8Zk2">
  <thead><tr><th>Instance&nbsp;name</th><th>GPU</th><th>On-demand price</th><th>Spot price</th><th>Price</th></tr></thead>
  <tbody>
    <tr><td>1H100</td><td>H100 80GB</td><td>$2.00/h</td><td>$0.80/h</td><td>x</td></tr>
    <tr><th>2H100</th><td>H100 80GB</td><td>$4.00/h</td><td>–</td><td>y</td></tr>
  </tbody>
</table>
</body></html>
"""


def test_tables_are_found_by_their_headers() -> None:
    doc = soup(TABLE)
    table = find_table(doc, "instance name", "on demand price")
    assert table is not None
    assert header_cells(table) == ["Instance name", "GPU", "On-demand price", "Spot price", "Price"]
    idx = header_index(table, "Instance name", "On demand", "spot", "price", provider="demo")
    assert idx == {"Instance name": 0, "On demand": 2, "spot": 3, "price": 4}  # exact header beats "contains"
    rows = body_rows(table)
    assert [text_of(r[0]) for r in rows] == ["1H100", "2H100"]
    assert parse_money(text_of(rows[0][idx["spot"]])) == Money(0.8, per="hour")
    assert parse_money(text_of(rows[1][idx["spot"]])) is None
    assert find_table(doc, "instance name", "dynamic price") is None
    assert find_tables(doc, "price") == [doc.find_all("table")[0], table]
    assert find_tables(doc, "nothing like this") == []
    assert column_index(table, "Spot") == 3
    assert column_index(table, "RAM") is None  # whole words only: no match inside "price" or "name"
    assert column_index(soup("<table><tr><th>VRAM</th><th>RAM</th></tr></table>").table, "ram") == 1
    assert column_index(soup("<table><tr><th>VRAM</th></tr></table>").table, "ram") is None


def test_missing_column_is_a_layout_change_naming_the_provider() -> None:
    table = find_table(soup(TABLE), "instance name")
    assert table is not None
    with pytest.raises(ParseError, match=r"^demo: layout changed: no 'Dynamic price' column"):
        header_index(table, "Dynamic price", provider="demo")


def test_loose_header_cells_of_an_excerpt_form_a_table() -> None:
    excerpt = "<th>Instance name</th> <th>Spot price</th> </tr></thead><tbody><tr><td>1A</td><td>$1/h</td></tr></tbody></table>"
    table = find_table(soup(excerpt), "Instance name", "Spot price")
    assert table is not None
    assert header_index(table, "spot price") == {"spot price": 1}
    assert [[text_of(c) for c in r] for r in body_rows(table)] == [["1A", "$1/h"]]


def test_helpers() -> None:
    err = layout_changed("lambda", "no price table")
    assert isinstance(err, ParseError) and str(err) == "lambda: layout changed: no price table"
    assert norm_label("  On-demand\u00a0Price ") == "on demand price"
    assert text_of(None) == ""
    assert text_of(soup("<p> a <b>b</b>\n c </p>").p) == "a b c"


@pytest.mark.parametrize(("raw", "what"), [(None, "got NoneType"), ({"html": 1}, "got dict"), ("", "the page is empty"),
                                           ("  \n ", "the page is empty")])
def test_page_soup_refuses_what_is_not_a_page(raw: object, what: str) -> None:
    from scrapers.html import page_soup

    with pytest.raises(ParseError, match=rf"^demo: layout changed: .*{what}"):
        page_soup("demo", raw)


TD_HEADER_TABLE = """
<table>
  <thead><tr><td></td><td>VRAM</td><td>Price</td></tr></thead>
  <tbody>
    <tr><th>H100</th><td>80 GB</td><td>$2.99</td></tr>
    <tr><th>A100</th><td>40 GB</td><td>$1.29</td></tr>
  </tbody>
</table>
"""


def test_a_thead_row_of_td_cells_is_the_header_only() -> None:
    table = soup(TD_HEADER_TABLE).find("table")
    assert header_cells(table) == ["", "VRAM", "Price"]
    assert header_index(table, "VRAM", "Price") == {"VRAM": 1, "Price": 2}
    assert [[text_of(c) for c in row] for row in body_rows(table)] == [
        ["H100", "80 GB", "$2.99"],
        ["A100", "40 GB", "$1.29"],
    ]


def test_mixed_thead_cells_keep_their_column_positions() -> None:
    table = soup(TD_HEADER_TABLE.replace("<td>VRAM</td><td>Price</td>", "<th>VRAM</th><th>Price</th>")).find("table")
    assert header_index(table, "VRAM", "Price") == {"VRAM": 1, "Price": 2}  # the empty <td> still counts
    assert len(body_rows(table)) == 2


def test_the_last_thead_row_names_the_columns() -> None:
    two_rows = TD_HEADER_TABLE.replace("<thead>", '<thead><tr><td colspan="3">Instances</td></tr>')
    table = soup(two_rows).find("table")
    assert header_cells(table) == ["", "VRAM", "Price"] and len(body_rows(table)) == 2


@pytest.mark.parametrize("text", ["$1e999", "$1.5e3/hr", "2E+2 USD"])
def test_exponent_notation_is_refused_not_read_as_its_mantissa(text: str) -> None:
    # "$1e999" used to read as $1.00: a wrong price stored as if printed.
    with pytest.raises(ValueError, match="unreadable amount"):
        parse_money(text)


def test_exponent_like_model_names_are_not_amounts() -> None:
    money = parse_money("H100e5 from $2.49/hr")
    assert money is not None and money.amount == 2.49


def test_read_money_leaves_an_unreadable_cell_for_quarantine_naming_it() -> None:
    where = cell_field("Spot price", "1B200.30V")
    assert read_money("$0.80/h", where) == (parse_money("$0.80/h"), {})
    assert read_money("–", where) == (None, {}) and read_money("", where) == (None, {}) and read_money("N/A", where) == (None, {})
    assert read_money("Contact sales", where)[0].contact_sales  # type: ignore[union-attr]
    assert read_money("call us", where) == (None, {UNREADABLE_PRICE: "price field 'Spot price' of '1B200.30V' holds 'call us', not a price"})
    assert read_money("$1e999", where)[1] == {UNREADABLE_PRICE: "price field 'Spot price' of '1B200.30V' holds '$1e999', not a price"}
    money, bad = read_money("-$2.50/h", where)
    assert money is not None and money.amount == -2.5
    assert bad == {UNREADABLE_PRICE: "price field 'Spot price' of '1B200.30V' holds '-$2.50/h', a negative price"}
    assert read_money("$1.99 - $2.49", where)[1] == {}  # a range, not a negative price
    assert read_money("", where, required=True) == (None, {UNREADABLE_PRICE: "price field 'Spot price' of '1B200.30V' holds '', not a price"})


def test_hourly_price_reads_a_printed_cell() -> None:
    from scrapers.html import hourly_price

    assert hourly_price("$2.50/hr", "'Price' of 'H100'") == (2.5, "USD", {})
    assert hourly_price("€1.20", "'Price' of 'L40S'")[:2] == (1.2, "EUR")
    price, _currency, extra = hourly_price("Contact sales", "'Price' of 'B200'")
    assert price is None and extra == {"contact_sales": True}
    price, _currency, extra = hourly_price("soon-ish", "'Price' of 'B300'")
    assert price is None and "'Price' of 'B300'" in extra["unreadable_price"]


def test_gpu_table_rows_read_each_row_and_refuse_a_changed_table() -> None:
    from scrapers.html import gpu_table_rows

    page = ("<table><tr><th>GPU</th><th>Memory</th><th>Price</th></tr>"
            "<tr><td>H100</td><td>80 GB</td><td>$2.00</td></tr><tr><td>L4</td><td>24GB</td><td>-</td></tr></table>")
    rows = list(gpu_table_rows("acme", page, "GPU", "Memory", "Price"))
    assert [(r.gpu, r.memory_gb, r.col["Price"]) for r in rows] == [("H100", 80.0, 2), ("L4", 24.0, 2)]
    with pytest.raises(ParseError, match="acme: layout changed: no table with 'GPU', 'VRAM' and 'Price' columns"):
        list(gpu_table_rows("acme", page, "GPU", "VRAM", "Price"))
    with pytest.raises(ParseError, match="acme: layout changed: a GPU row names no GPU"):
        list(gpu_table_rows("acme", page.replace("<td>L4</td>", "<td></td>"), "GPU", "Memory", "Price"))

"""Our own CSV exports obey the archive formats' rule: the same observations give the same
stored history whatever the split into files and the order of the import commands. The
exports come from a store filled with the real H100 archive sample: its hourly price history,
and its price lists as of several moments; each is cut into files that are imported one
command at a time in every order (one file twice), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import permutations
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import reads
from db.engine import make_engine
from db.migrate import init_db
from db.reader import in_transaction
from db.spans import epoch
from tests.analysis.seq import HOUR, T0
from tests.analysis.test_history import store_day_one
from tests.conftest import read
from tests.pipeline.imports.test_archives import H100_FILE, H100_GAP
from tests.pipeline.imports.test_import_order import clear, history, intervals, span
from tracker.analysis.grid import Filters
from tracker.analysis.history import price_history
from tracker.cli.common import Format, emit
from tracker.errors import ConfigError
from tracker.pipeline.imports import import_files

SINCE, UNTIL = span(H100_FILE)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """The store the exports are taken from: the archive sample, imported once."""
    eng = make_engine(f"sqlite:///{tmp_path_factory.mktemp('source') / 'source.db'}")
    init_db(eng)
    import_files(eng, [H100_FILE], max_gap=H100_GAP)
    yield eng
    eng.dispose()


def write_csv(rows: list[dict], capsys: pytest.CaptureFixture[str], path: Path) -> list[str]:  # type: ignore[type-arg]
    """``rows`` as the CLI's CSV output, written to ``path``; its lines."""
    capsys.readouterr()
    emit(rows, Format.csv)
    path.write_text(capsys.readouterr().out)
    return path.read_text().splitlines(keepends=True)


def cut(lines: list[str], tmp_path: Path, stem: str, n: int, *, interleaved: bool = False) -> list[Path]:
    """The body of a CSV in ``n`` files with its header each: consecutive runs, or every n-th row."""
    header, body = lines[0], lines[1:]
    size = -(-len(body) // n)
    chunks = [body[i::n] for i in range(n)] if interleaved else [body[i * size:(i + 1) * size] for i in range(n)]
    out = []
    for i, chunk in enumerate(chunks):
        path = tmp_path / f"{stem}{'-every' if interleaved else ''}{n}_{i}.csv"
        path.write_text(header + "".join(chunk))
        out.append(path)
    return out


def check_orders(engine: Engine, whole: Path, orders: list[list[Path]]) -> list[tuple[object, ...]]:
    """Each order of separate imports stores the intervals and answers the history of one import of ``whole``."""
    clear(engine)
    first = import_files(engine, [whole])
    assert not first.bad_rows and first.stored > 0
    once, read_back = intervals(engine), history(engine, "H100-SXM", SINCE, UNTIL)
    for order in orders:
        clear(engine)
        for path in order:
            assert not import_files(engine, [path]).bad_rows
        names = [p.name for p in order]
        assert intervals(engine) == once, names
        for got, want in zip(history(engine, "H100-SXM", SINCE, UNTIL), read_back, strict=True):
            pd.testing.assert_frame_equal(got, want, obj=str(names))
    again = import_files(engine, [order[0]])
    assert again.stored == 0 and again.already_stored == again.observations > 0
    assert intervals(engine) == once
    clear(engine)
    together = import_files(engine, list(reversed(orders[0])))  # the files of one order in one command
    assert not together.bad_rows and intervals(engine) == once
    return once


def test_a_history_export_in_any_split_and_order(source: Engine, engine: Engine, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    exported = read(source, price_history, Filters.of(gpus=["H100-SXM"], kinds=None), since=SINCE, until=UNTIL,
                             resolution="hour")
    whole = tmp_path / "history.csv"
    lines = write_csv(exported.rows(), capsys, whole)
    assert len(lines) > 100
    runs, every = cut(lines, tmp_path, "history", 3), cut(lines, tmp_path, "history", 3, interleaved=True)
    orders = [list(p) for p in permutations(runs)]
    orders += [[runs[2], runs[0], runs[2], runs[1]], [every[1], every[0], every[2]], [runs[1], every[0], whole]]
    once = check_orders(engine, whole, orders)
    # the history read back is the exported one: each provider's price in every hourly bucket
    cols = [c for c in exported.wide().columns if c not in ("offers", "kinds")]
    got = read(engine, price_history,  Filters.of(gpus=["H100-SXM"], kinds=None), since=SINCE, until=UNTIL,
                        resolution="hour").wide()
    pd.testing.assert_frame_equal(got[cols], exported.wide()[cols])
    assert len(once) > 40


def test_price_lists_of_several_moments_in_any_order(source: Engine, engine: Engine, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``prices --at`` of five moments: each row an interval (price_since to observed_at); the same
    offer's rows in different files join into the same intervals whatever the order."""
    step = (UNTIL - SINCE - timedelta(hours=4)) / 4
    moments: list[datetime] = [SINCE + timedelta(hours=2) + k * step for k in range(5)]
    files, everything, starts = [], [], set()
    for k, at in enumerate(moments):
        with Session(source) as s:
            rows = reads.latest_prices(in_transaction(s.connection()), at=at)
        assert rows, at
        starts |= {(r["provider"], r["sku"], epoch(r["price_since"]), r["price_per_hour"]) for r in rows}
        lines = write_csv(rows, capsys, tmp_path / f"prices{k}.csv")
        files.append(tmp_path / f"prices{k}.csv")
        everything += lines[1:] if everything else lines
    whole = tmp_path / "prices-all.csv"
    whole.write_text("".join(everything))
    halves = cut(everything, tmp_path, "prices-all", 2, interleaved=True)
    orders = [list(reversed(files)), [files[2], files[4], files[0], files[3], files[1]],
              [files[3], files[0], files[3], files[4], files[1], files[2]], [halves[1], halves[0]]]
    once = check_orders(engine, whole, orders)
    # each exported price_since starts one interval, even where the price before it was the same
    assert {(r[0], r[1], r[12], r[9]) for r in once} == starts and len(once) == len(starts)
    assert len({(p, sku, price) for p, sku, _t, price in starts}) < len(starts)
    # every stored interval lies within one the source has for the offer, at its price
    source_runs = [(r[0], r[1], r[9], r[12], r[13]) for r in intervals(source)]
    assert once and all(any((prov, sku, price) == (r[0], r[1], r[9]) and lo <= r[12] and r[13] <= hi
                            for prov, sku, price, lo, hi in source_runs) for r in once)


def test_price_lists_of_every_hour_give_back_the_intervals_of_the_store(engine: Engine, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A day of hourly collections (tests.analysis.test_history.store_day_one: an outage, a
    delisting at one price and a return at that price, a price drop), exported as ``prices --at``
    half past every hour: in any order the import stores exactly the intervals of that store."""
    day = make_engine(f"sqlite:///{tmp_path / 'day.db'}")
    init_db(day)
    store_day_one(day)
    files = []
    for h in range(12):
        with Session(day) as s:
            rows = reads.latest_prices(in_transaction(s.connection()), at=T0 + h * HOUR + HOUR / 2)
        write_csv(rows, capsys, tmp_path / f"at{h:02}.csv")
        files.append(tmp_path / f"at{h:02}.csv")
    want = sorted((r[0], r[1], r[9], r[12], r[13]) for r in intervals(day))
    day.dispose()
    # delta's 2.90: listed 00:00-01:00, delisted, back at 04:00 at the same price: two intervals
    assert [(first, last) for p, sku, _v, first, last in want if sku == "d1"] == [
        (epoch(T0), epoch(T0 + HOUR)), (epoch(T0 + 4 * HOUR), epoch(T0 + 11 * HOUR))]
    for order in (files, list(reversed(files)), [*files[6:], *files[:6]], [files[k] for k in (5, 0, 11, 3, 8, 1, 10, 2,
                                                                                           9, 4, 7, 6, 3)]):
        clear(engine)
        counts = []
        for path in order:
            result = import_files(engine, [path])
            assert not result.bad_rows
            counts.append((result.new_offers, result.prices_changed, result.returned))
        got = sorted((r[0], r[1], r[9], r[12], r[13]) for r in intervals(engine))
        assert got == want, [p.name for p in order]
        if order is files:  # oldest first, each command counts what it adds (an interval it extends is no news)
            # new: a1, a8, b1, d1, d2, then g1 at 08:00; changed: beta's 2.70 at 05:00, alpha's 2.50 at 06:00;
            # returned: delta's 2.90 at 04:00, after its delisting
            assert tuple(sum(c[k] for c in counts) for k in range(3)) == (6, 2, 1), counts


def test_exports_of_two_formats_in_one_command_are_refused(engine: Engine, tmp_path: Path) -> None:
    prices = tmp_path / "p.csv"
    prices.write_text("provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at\n"
                      "alpha,a1,on_demand,H100 SXM,1,2.2,USD,2026-01-01T00:00:00+00:00\n")
    history_csv = tmp_path / "h.csv"
    history_csv.write_text("time,gpu,metric,unit,kinds,min,p25,median,providers,offers,alpha\n"
                           "2026-01-01T00:00:00+00:00,H100-SXM,price,USD/GPU-h,all,2.2,2.2,2.2,1,1,2.2\n")
    with pytest.raises(ConfigError, match="h.csv is a history CSV, p.csv a prices one"):
        import_files(engine, [prices, history_csv])
    assert intervals(engine) == []

"""Real archive samples (tests/fixtures/history-archives, see its README): the stored history
answers what the files say, checked against arithmetic done here on the raw files."""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db.models import Provider, ScrapeRun
from tests.conftest import fixture_path, read
from tracker.analysis.grid import Filters
from tracker.analysis.history import price_history
from tracker.analysis.trends import all_time_lows
from tracker.errors import ConfigError
from tracker.pipeline.imports import ImportResult, import_files
from tracker.pipeline.imports.aliases import provider_name

H100_FILE = fixture_path("history-archives/tugot17_H100_80GB_SXM5_until_2025-10-25.jsonl")
GH200_FILE = fixture_path("history-archives/tugot17_GH200_96GB_first_150_lines.jsonl")
EWYLUDA = sorted(fixture_path("history-archives").glob("ewyluda_*.csv"))
#: The H100 file's collector ran about every 4 hours then; its longest gaps are about 5.5 hours.
H100_GAP = timedelta(hours=5)
ALL_KINDS = Filters.of(gpus=["H100-SXM"], kinds=None)


def snapshots(path: Path) -> list[tuple[datetime, dict[str, float]]]:
    """(time to the second, {project provider: cheapest price}) per line, read straight from the file."""
    out = []
    for line in path.read_text().splitlines():
        doc = json.loads(line)
        at = datetime.fromisoformat(doc["timestamp"]).astimezone(UTC).replace(microsecond=0)
        out.append((at, {provider_name(p): float(v["min"]) for p, v in doc["by_provider"].items()}))
    return sorted(out)


def stored_intervals(engine: Engine) -> list[tuple[object, ...]]:
    with Session(engine) as s:
        rows = s.connection().execute(text(
            "SELECT o.provider, o.sku, o.region, o.kind, i.price_per_hour, i.first_seen, "
            "i.last_seen, i.ends_at, i.observations "
            "FROM price_interval i JOIN offer o ON o.id = i.offer_id"
        )).all()
    return sorted(tuple(r) for r in rows)


def check_a_days_minimum_is_the_minimum_observed_that_day(engine: Engine) -> None:
    expected: dict[date, float] = {}
    for at, prices in snapshots(H100_FILE):
        day = at.date()
        expected[day] = min(expected.get(day, float("inf")), *prices.values())
    h = read(engine, price_history,  ALL_KINDS, since=datetime(2025, 10, 19, tzinfo=UTC),
                      until=datetime(2025, 10, 25, 23, tzinfo=UTC), resolution="day")
    got = {t.date(): v for t, v in zip(h.market["time"], h.market["min"], strict=True) if not math.isnan(v)}
    assert got == pytest.approx(expected)
    # the first day's minimum is primecompute's $1.00 from the first snapshot on
    assert expected[date(2025, 10, 19)] == 1.0


def test_a_late_price_does_not_land_in_the_next_day(engine: Engine, tmp_path: Path) -> None:
    """Handmade two-line file in the tugot17 structure: $0.97 last seen at 23:35, $1.00 from 00:05."""
    lines = [
        {"timestamp": "2025-11-10T23:35:00+00:00", "gpu_type": "H100_80GB", "socket_type": "SXM5",
         "by_provider": {"lambdalabs": {"count": 1, "min": 0.97, "avg": 0.97}}},
        {"timestamp": "2025-11-11T00:05:00+00:00", "gpu_type": "H100_80GB", "socket_type": "SXM5",
         "by_provider": {"lambdalabs": {"count": 1, "min": 1.00, "avg": 1.00}}},
    ]
    path = tmp_path / "handmade_late_price.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    import_files(engine, [path])
    for every in ("day", "hour"):
        h = read(engine, price_history,  ALL_KINDS, since=datetime(2025, 11, 10, 23, tzinfo=UTC),
                          until=datetime(2025, 11, 11, 1, tzinfo=UTC), resolution=every)
        by_time = {t: v for t, v in zip(h.market["time"], h.market["min"], strict=True) if not math.isnan(v)}
        assert by_time[datetime(2025, 11, 11, tzinfo=UTC)] == pytest.approx(1.00), every


def check_an_all_time_low_with_its_provider_and_time(engine: Engine) -> None:
    rows = [(price, at, provider) for at, prices in snapshots(H100_FILE) for provider, price in prices.items()]
    low = min(p for p, _, _ in rows)
    first_at, first_provider = min((at, prov) for p, at, prov in rows if p == low)
    got = read(engine, all_time_lows,  ALL_KINDS)[0]
    assert got["all_time_low"] == pytest.approx(low)
    assert got["all_time_low_provider"] == first_provider
    assert got["all_time_low_at"] == first_at


def real_changes(snaps: list[tuple[datetime, dict[str, float]]], provider: str, max_gap: timedelta) -> tuple[int, int]:
    """(price changes, returns after a gap) of one provider: a change needs the provider in two
    consecutive snapshots at most ``max_gap`` apart; anything else after its first sighting is a return."""
    changes = returns = 0
    seen = False
    for (t0, before), (t1, after) in pairwise(snaps):
        if provider not in after:
            continue
        if provider in before and t1 - t0 <= max_gap:
            changes += abs(before[provider] - after[provider]) > 1e-9
        elif seen or provider in before:
            returns += 1
        seen = seen or provider in before
    return changes, returns


def check_a_providers_real_price_changes_and_returns(engine: Engine, result: ImportResult, provider: str) -> None:
    changes, returns = real_changes(snapshots(H100_FILE), provider, H100_GAP)
    with Session(engine) as s:
        run = s.exec(select(ScrapeRun).where(ScrapeRun.provider == provider)).one()
    assert (run.prices_changed, run.returned_offers) == (changes, returns)
    total = [real_changes(snapshots(H100_FILE), p, H100_GAP) for p in result.providers]
    assert result.prices_changed == sum(c for c, _ in total)
    assert result.returned == sum(r for _, r in total)


def check_no_interval_spans_a_gap_in_the_snapshots(engine: Engine) -> None:
    times = [at for at, _ in snapshots(H100_FILE)]
    gaps = [(a, b) for a, b in pairwise(times) if b - a > H100_GAP]
    assert gaps, "the sample has gaps longer than its cadence"
    for provider, _sku, _r, _k, _p, first, last, _end, _n in stored_intervals(engine):
        for a, b in gaps:
            assert not (first <= a.timestamp() and b.timestamp() <= last), (provider, a, b)


def check_the_market_minimum_after_a_gap_counts_every_provider(engine: Engine) -> None:
    """Across a gap no price is carried: the hour after the gap shows what was observed then."""
    snaps = snapshots(H100_FILE)
    (before, _), (after, prices) = max(pairwise(snaps), key=lambda pair: pair[1][0] - pair[0][0])
    assert after - before > H100_GAP
    h = read(engine, price_history,  ALL_KINDS, since=before, until=after, resolution="hour")
    by_time = {t.to_pydatetime(): (v, n) for t, v, n in zip(h.market["time"], h.market["min"], h.market["providers"],
                                                           strict=True)}
    hour = after.replace(minute=0, second=0)
    assert by_time[hour] == (pytest.approx(min(prices.values())), len(prices))
    inside = [v for t, (v, _n) in by_time.items() if before.replace(minute=0, second=0) + timedelta(hours=1) < t < hour]
    assert inside and all(math.isnan(v) for v in inside), "the hours inside the gap have no price"


def test_one_file_or_many_in_any_order_twice_or_once(engine: Engine, sqlite_engine: Engine, tmp_path: Path) -> None:
    import_files(engine, [H100_FILE], max_gap=H100_GAP)
    once = stored_intervals(engine)
    lines = H100_FILE.read_text().splitlines(keepends=True)
    random.Random(13).shuffle(lines)
    parts = [tmp_path / f"part{i}.jsonl" for i in range(3)]
    for i, part in enumerate(parts):
        part.write_text("".join(lines[i::3]) + lines[0])  # a line repeated in two files is one snapshot
    import_files(sqlite_engine, list(reversed(parts)), max_gap=H100_GAP)
    assert stored_intervals(sqlite_engine) == once
    again = import_files(engine, parts, max_gap=H100_GAP)
    assert again.stored == 0 and again.already_stored == again.observations
    assert stored_intervals(engine) == once


def test_consecutive_imports_of_a_split_archive_equal_one_import(engine: Engine, sqlite_engine: Engine,
                                                                 tmp_path: Path) -> None:
    import_files(engine, [GH200_FILE])
    lines = GH200_FILE.read_text().splitlines(keepends=True)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(lines[:70]))
    second.write_text("".join(lines[70:]))
    import_files(sqlite_engine, [first])
    import_files(sqlite_engine, [second])
    assert stored_intervals(sqlite_engine) == stored_intervals(engine)


def check_aliases_and_external_providers(engine: Engine, result: ImportResult) -> None:
    assert "lambda" in result.providers and "lambdalabs" not in result.providers
    assert result.external_providers == ["dc_roan", "primecompute"]
    with Session(engine) as s:
        dc = s.get(Provider, "dc_roan")
        lam = s.get(Provider, "lambda")
    assert dc is not None and dc.last_success_at == snapshots(H100_FILE)[-1][0]
    assert dc.interval_s == 1800  # the archive's cadence
    assert lam is not None and lam.interval_s is None  # a scraped provider keeps its own


def test_future_timestamps_and_bad_lines_are_reported_by_line(engine: Engine, tmp_path: Path) -> None:
    lines = H100_FILE.read_text().splitlines()[:3]
    future = json.loads(lines[1])
    future["timestamp"] = "2099-01-01T00:00:00+00:00"
    path = tmp_path / "with_bad_lines.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(future), "{not json", lines[2]]) + "\n")
    result = import_files(engine, [path], max_gap=H100_GAP)
    assert [(b.line, b.file) for b in result.bad_rows] == [(2, path.name), (3, path.name)]
    assert "in the future" in result.bad_rows[0].reason
    assert result.rows == 4 and result.snapshots >= 2


def test_ewyluda_daily_files(engine: Engine) -> None:
    result = import_files(engine, EWYLUDA)
    assert result.format == "ewyluda" and not result.bad_rows
    assert "vastai" in result.providers and "vast" not in result.providers
    # Crusoe's H100 on 2026-10-10, read from the file: NVIDIA H100 80GB HGX, 1 GPU, $3.90
    rows = [r for r in EWYLUDA[1].read_text().splitlines() if ",crusoe," in r and "H100 80GB HGX" in r]
    assert len(rows) == 1 and rows[0].split(",")[11] == "3.9"
    h = read(engine, price_history,  Filters.of(gpus=["H100-SXM"], providers=["crusoe"]),
                      since=datetime(2026, 10, 10, tzinfo=UTC), until=datetime(2026, 10, 10, 23, tzinfo=UTC))
    assert h.market["min"].tolist() == [pytest.approx(3.9)]
    # the two files are eleven days apart: more than the daily cadence allows, so every offer seen in
    # both comes back after a gap, none counts as a changed price
    assert result.prices_changed == 0
    assert result.returned > 0


def test_ewyluda_header_without_a_needed_column_names_it(engine: Engine, tmp_path: Path) -> None:
    text_ = EWYLUDA[0].read_text().splitlines()
    header = text_[0].replace(",usd_per_hour,", ",price,")
    path = tmp_path / "renamed.csv"
    path.write_text("\n".join([header, *text_[1:3]]) + "\n")
    with pytest.raises(ConfigError, match="usd_per_hour"):
        import_files(engine, [path], fmt="ewyluda")


def test_unresolvable_gpu_names_are_kept_raw_and_reported(engine: Engine, tmp_path: Path) -> None:
    lines = EWYLUDA[0].read_text().splitlines()
    row = lines[1].split(",")
    row[6], row[7] = "Mystery-9000", "mystery-9000-box"
    path = tmp_path / "with_an_unknown_gpu.csv"
    path.write_text("\n".join([lines[0], lines[1], ",".join(row)]) + "\n")
    result = import_files(engine, [path])
    assert result.unmapped == {"Mystery-9000": 1}
    with Session(engine) as s:
        raw = s.connection().execute(text("SELECT gpu, gpu_raw FROM offer WHERE gpu_raw = 'Mystery-9000'")).all()
    assert [tuple(r) for r in raw] == [(None, "Mystery-9000")]


def check_history_counts_by_provider_match_the_file(engine: Engine) -> None:
    """Each provider's stored observations equal the lines that list it."""
    expected: dict[str, int] = defaultdict(int)
    for _at, prices in snapshots(H100_FILE):
        for p in prices:
            expected[p] += 1
    got: dict[str, int] = defaultdict(int)
    for provider, *_rest, n in stored_intervals(engine):
        got[str(provider)] += int(n)  # type: ignore[call-overload]
    assert got == expected


def test_the_h100_archive(engine: Engine) -> None:
    """One import of the real H100 sample, every check above against the file's own arithmetic."""
    result = import_files(engine, [H100_FILE], max_gap=H100_GAP)
    check_a_days_minimum_is_the_minimum_observed_that_day(engine)
    check_an_all_time_low_with_its_provider_and_time(engine)
    for provider in ("lambda", "dc_roan", "runpod", "primecompute"):
        check_a_providers_real_price_changes_and_returns(engine, result, provider)
    check_no_interval_spans_a_gap_in_the_snapshots(engine)
    check_the_market_minimum_after_a_gap_counts_every_provider(engine)
    check_aliases_and_external_providers(engine, result)
    check_history_counts_by_provider_match_the_file(engine)

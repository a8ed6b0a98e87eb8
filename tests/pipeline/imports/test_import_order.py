"""The same observations give the same stored history whatever the split into files and the
order of the import commands: every order of separate imports (newest first, interleaved, a
file twice) of the real archive samples stores exactly the intervals one import of the whole
stores, and the roll-ups read back the same history; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from itertools import permutations
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.engine import Engine

from tests.conftest import read
from tests.pipeline.imports.test_archives import (
    EWYLUDA,
    GH200_FILE,
    H100_FILE,
    H100_GAP,
)
from tracker.analysis.grid import Filters
from tracker.analysis.history import price_history
from tracker.pipeline.imports import import_files

TABLES = ("price_interval_open", "price_interval_past", "quarantine", "rollup_hour_run",
          "rollup_hour_open", "rollup_series", "rollup_day", "offer", "snapshot_time", "scrape_run",
          "provider", "label")


def clear(engine: Engine) -> None:
    with engine.begin() as conn:
        for t in TABLES:
            conn.execute(text(f"DELETE FROM {t}"))


def intervals(engine: Engine) -> list[tuple[object, ...]]:
    """Every stored interval, every column (label ids and offer ids as the names they stand for),
    whether it is its offer's current one, and its stated start when before ``first_seen``."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT o.provider, o.sku, o.region, o.kind, o.term_months, lg.name, lk.name, lc.name, lp.name, "
            "i.price_per_hour, i.price_per_gpu_hour, i.available, i.first_seen, "
            "i.last_seen, i.ends_at, i.observations, s.offer_id IS NOT NULL, i.stated_start "
            "FROM price_interval i JOIN offer o ON o.id = i.offer_id JOIN label lp ON lp.id = i.provider_id "
            "LEFT JOIN label lg ON lg.id = i.gpu_id JOIN label lk ON lk.id = i.kind_id "
            "JOIN label lc ON lc.id = i.currency_id LEFT JOIN price_interval_open s ON s.id = i.id"
        )).all()
    return sorted((tuple(None if v is None else bool(v) if k == 11 else v for k, v in enumerate(r)) for r in rows),
                  key=repr)


def history(engine: Engine, gpu: str, since: datetime, until: datetime) -> list[pd.DataFrame]:
    """The stored history as the analysis reads it back (roll-ups for whole buckets)."""
    return [read(engine, price_history,  Filters.of(gpus=[gpu], kinds=None), since=since, until=until, resolution=r).wide()
            for r in ("hour", "day")]


def parts(lines: list[str], tmp_path: Path, n: int, *, interleaved: bool = False) -> list[Path]:
    """``lines`` in ``n`` files: consecutive runs (oldest file first), or every n-th line."""
    size = -(-len(lines) // n)
    chunks = [lines[i::n] for i in range(n)] if interleaved else [lines[i * size:(i + 1) * size] for i in range(n)]
    out = []
    for i, chunk in enumerate(chunks):
        path = tmp_path / f"{'every' if interleaved else 'part'}{n}_{i}.jsonl"
        path.write_text("".join(chunk))
        out.append(path)
    return out


def span(path: Path) -> tuple[datetime, datetime]:
    times = [datetime.fromisoformat(json.loads(x)["timestamp"]).astimezone(UTC) for x in path.read_text().splitlines()]
    return min(times) - timedelta(hours=2), max(times) + timedelta(hours=2)


def test_every_order_of_separate_imports_of_the_h100_archive(engine: Engine, tmp_path: Path) -> None:
    import_files(engine, [H100_FILE], max_gap=H100_GAP)
    once, read_back = intervals(engine), history(engine, "H100-SXM", *span(H100_FILE))
    assert len(once) > 40
    lines = H100_FILE.read_text().splitlines(keepends=True)
    runs, every = parts(lines, tmp_path, 3), parts(lines, tmp_path, 3, interleaved=True)
    orders = [list(p) for p in permutations(runs)]  # every order, newest first among them
    orders += [[runs[2], runs[0], runs[2], runs[1]], [every[1], every[0], every[2]], [runs[1], every[0], H100_FILE]]
    for order in orders:
        clear(engine)
        for path in order:
            import_files(engine, [path], max_gap=H100_GAP)
        names = [p.name for p in order]
        assert intervals(engine) == once, names
        for got, want in zip(history(engine, "H100-SXM", *span(H100_FILE)), read_back, strict=True):
            pd.testing.assert_frame_equal(got, want, obj=str(names))
    again = import_files(engine, [runs[1]], max_gap=H100_GAP)
    assert again.stored == 0 and again.already_stored == again.observations > 0


def test_newest_first_for_the_gh200_and_ewyluda_samples(engine: Engine, tmp_path: Path) -> None:
    lines = GH200_FILE.read_text().splitlines(keepends=True)
    for files, gpu in ((parts(lines, tmp_path, 4), "GH200"), (EWYLUDA, "H100-SXM")):
        clear(engine)
        import_files(engine, list(files))
        once = intervals(engine)
        for order in (list(reversed(files)), [files[-1], *files]):
            clear(engine)
            for path in order:
                import_files(engine, [path])
            assert intervals(engine) == once, [p.name for p in order]


H100_LINES = H100_FILE.read_text().splitlines(keepends=True)

# a split of the archive: each line goes to one to three of four files; the files are imported
# in a drawn order, some of them twice
splits = st.tuples(
    st.lists(st.sets(st.integers(0, 3), min_size=1, max_size=3), min_size=len(H100_LINES), max_size=len(H100_LINES)),
    st.permutations(range(4)),
    st.lists(st.integers(0, 3), max_size=2),
)


@pytest.fixture
def h100_once(engine: Engine) -> list[tuple[object, ...]]:
    import_files(engine, [H100_FILE], max_gap=H100_GAP)
    return intervals(engine)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(split=splits)
def test_any_split_in_any_order(engine: Engine, h100_once: list[tuple[object, ...]], tmp_path: Path,
                                split: tuple[list[set[int]], list[int], list[int]]) -> None:
    owners, order, twice = split
    files = []
    for f in range(4):
        path = tmp_path / f"split{f}.jsonl"
        path.write_text("".join(line for line, to in zip(H100_LINES, owners, strict=True) if f in to))
        files.append(path)
    clear(engine)
    for f in [*order, *twice]:
        if files[f].stat().st_size:
            import_files(engine, [files[f]], max_gap=H100_GAP)
    assert intervals(engine) == h100_once


def test_an_import_stored_before_snapshot_times_were_kept(engine: Engine) -> None:
    """The migration keeps the snapshot times the stored intervals name; importing the archive
    again fills in the rest and gives back exactly the history of one import."""
    from db.migrate import current_revision, head_revision, upgrade
    from tests.db.test_rollup_runs_migration import downgrade

    import_files(engine, [H100_FILE], max_gap=H100_GAP)
    once = intervals(engine)
    downgrade(engine, "0006")  # every interval's row holds its true values, as before 0007
    with engine.begin() as conn:
        named = {int(t) for row in conn.execute(text(
            "SELECT i.first_seen, i.last_seen, i.ends_at FROM price_interval i")).all()
                 for t in row if t is not None}
        every = {int(t) for (t,) in conn.execute(text("SELECT at FROM snapshot_time")).all()}
        conn.execute(text("DROP TABLE snapshot_time"))
        conn.execute(text("UPDATE alembic_version SET version_num = '0004'"))
    assert named < every  # intervals name some snapshots, not those inside a run
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as conn:
        kept = {int(t) for (t,) in conn.execute(text("SELECT at FROM snapshot_time")).all()}
    assert kept == named
    assert intervals(engine) == once
    import_files(engine, [H100_FILE], max_gap=H100_GAP)
    assert intervals(engine) == once


def held(engine: Engine) -> list[tuple[object, ...]]:
    """Observations held for confirmation: (provider, sku, time, price)."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT provider, sku, observed_at, price_per_hour FROM quarantine "
                                 "WHERE reason LIKE '%held until%'")).all()
    return sorted((p, s, str(t)[:19], float(v)) for p, s, t, v in rows)


def test_price_jumps_are_judged_in_time_order_whatever_the_import_order(engine: Engine, tmp_path: Path) -> None:
    """A jump is held until the next snapshot confirms it; which one is a jump depends on the
    snapshot before in time, so a later import of older snapshots judges stored ones again."""
    glitchy = [2.0, 2.0, 20.0, 2.0, 2.0, 2.1, 30.0, 30.0, 30.0, 2.5, 2.5, 0.3, 2.5, 2.5]
    steady = [3.0, 3.0, 3.0, 0.5, 0.5, 3.0, 3.0, 3.0, 3.1, 3.1, 3.1, 3.1, 3.1, 3.1]
    start = datetime(2025, 7, 1, 6, 0, 11, tzinfo=UTC)
    lines = [json.dumps({"timestamp": (start + i * timedelta(minutes=30)).isoformat(), "gpu_type": "H100_80GB",
                         "socket_type": "SXM5", "by_provider": {"primecompute": {"count": 1, "min": a, "avg": a},
                                                                "dc_roan": {"count": 1, "min": b, "avg": b}}}) + "\n"
             for i, (a, b) in enumerate(zip(glitchy, steady, strict=True))]
    whole = tmp_path / "jumps.jsonl"
    whole.write_text("".join(lines))
    import_files(engine, [whole])
    once, held_once = intervals(engine), held(engine)
    # held in time order (a move of more than x5 waits for the next snapshot): dc_roan's 0.5 and its 3.0 back
    # (each confirmed next); primecompute's 20.0 (then 2.0 again), 30.0 and 2.5 (confirmed next), 0.3
    assert [(p, v) for p, _s, _t, v in held_once] == [("dc_roan", 0.5), ("dc_roan", 3.0), ("primecompute", 20.0),
                                                     ("primecompute", 30.0), ("primecompute", 2.5), ("primecompute", 0.3)]
    runs, every = parts(lines, tmp_path, 3), parts(lines, tmp_path, 4, interleaved=True)
    orders = [list(p) for p in permutations(runs)] + [list(reversed(every)), [every[2], every[0], every[2], every[3], every[1]]]
    for order in orders:
        clear(engine)
        for path in order:
            import_files(engine, [path])
        names = [p.name for p in order]
        assert intervals(engine) == once, names
        assert held(engine) == held_once, names


@pytest.mark.parametrize(("prices", "files"), [
    # 1.0 held, then confirmed in a later import; 60.0 between them, imported last, is a jump too
    ([10.0, 1.0, 60.0, 1.0], {"older": [0, 1], "newest": [3], "between": [2]}),
    # 7.0 then confirms the held 7.0 after 42.0 is held; 1.0 before them, imported last, makes 7.0 a jump
    ([1.0, 7.0, 42.0, 7.0], {"newer": [2, 3], "middle": [1], "oldest": [0]}),
])
def test_a_re_cut_that_holds_every_later_price_leaves_the_older_one_current(
        engine: Engine, tmp_path: Path, prices: list[float], files: dict[str, list[int]]) -> None:
    """In time order every price after the first is a jump of more than x5 from it, and none is
    confirmed by the next: all are held and the first price stays the offer's current one. The
    separate imports first accept one of them (a confirmed jump), which the last import holds
    again: the history is still the one import of all four snapshots stores (handmade prices)."""
    start = datetime(2025, 7, 1, 6, 0, 11, tzinfo=UTC)
    lines = [json.dumps({"timestamp": (start + i * timedelta(minutes=30)).isoformat(), "gpu_type": "H100_80GB",
                         "socket_type": "SXM5", "by_provider": {"primecompute": {"count": 1, "min": p, "avg": p}}}) + "\n"
             for i, p in enumerate(prices)]
    paths = []
    for name, picked in files.items():
        paths.append(tmp_path / f"handmade-{name}.jsonl")
        paths[-1].write_text("".join(lines[i] for i in picked))
    import_files(engine, paths)
    once, held_once = intervals(engine), held(engine)
    assert [(r[9], r[16]) for r in once] == [(prices[0], True)]
    assert [v for _p, _s, _t, v in held_once] == prices[1:]
    clear(engine)
    for path in paths:
        import_files(engine, [path])
    assert intervals(engine) == once
    assert held(engine) == held_once

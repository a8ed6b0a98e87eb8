"""The gap of an imported series follows its own snapshot spacing unless ``--max-gap`` is given,
and the summary warns when the spacing exceeds the gap. The archive is the real tugot17 H100
sample (tests/fixtures/history-archives/README.md): its snapshots are about 4 hours apart,
while the format's collector ran every 30 minutes (gap 1 hour)."""

from __future__ import annotations

import json
import statistics
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

from db.engine import make_engine
from db.migrate import init_db
from tests.conftest import fixture_path
from tracker.pipeline.imports import import_files
from tracker.pipeline.imports.snapshots import SPACING_GAP

H100_FILE = fixture_path("history-archives/tugot17_H100_80GB_SXM5_until_2025-10-25.jsonl")
SERIES = "tugot17:H100_80GB_SXM5"


def _spacing_s() -> float:
    """The file's median spacing, from its own timestamps (low median of an even count, as the store takes it)."""
    times = sorted(datetime.fromisoformat(json.loads(line)["timestamp"].replace("Z", "+00:00")).timestamp()
                   for line in H100_FILE.read_text().splitlines() if line.strip())
    steps = sorted(int(b) - int(a) for a, b in zip(times, times[1:], strict=False))
    assert 3.5 * 3600 < statistics.median(steps) < 4.5 * 3600  # about 4 hours, as the archive says
    return float(steps[len(steps) // 2])


def _intervals(engine: Engine) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT o.provider, i.price_per_hour, i.first_seen, i.ends_at FROM price_interval i "
            "JOIN offer o ON o.id = i.offer_id ORDER BY 1, 3")).all()]


def test_a_series_takes_its_own_spacing_as_its_gap(engine: Engine, tmp_path: Path) -> None:
    own = import_files(engine, [H100_FILE])
    gap = timedelta(seconds=SPACING_GAP * _spacing_s())
    assert own.gaps == {SERIES: gap} and own.summary()["series_gaps"] == f"{SERIES} {gap.total_seconds() / 3600:.3g}h"
    assert not own.wide_spacing and own.summary()["warnings"] == "-"
    # the same history as the gap given by hand
    other = make_engine(f"sqlite:///{tmp_path / 'given.db'}")
    init_db(other)
    given = import_files(other, [H100_FILE], max_gap=gap)
    assert (own.prices_changed, own.returned) == (given.prices_changed, given.returned) == (29, 15)
    assert _intervals(engine) == _intervals(other)
    other.dispose()


def test_a_gap_narrower_than_the_spacing_is_warned(engine: Engine) -> None:
    result = import_files(engine, [H100_FILE], max_gap=timedelta(hours=1))
    assert (result.prices_changed, result.returned) == (0, 140)  # every snapshot starts anew
    assert result.wide_spacing == {SERIES: timedelta(seconds=_spacing_s())} and not result.gaps
    warning = result.summary()["warnings"]
    assert warning.startswith(f"{SERIES}: snapshots about 3.94h apart, more than the gap 1h")


def test_the_command_prints_the_warning_and_the_series_gap(sqlite_engine: Engine) -> None:
    from tests.pipeline.imports.test_import_command import run

    out, err = run(sqlite_engine, "import", str(H100_FILE), "--max-gap", "1h", "--format", "json")
    assert f"warning {SERIES}: snapshots about 3.94h apart, more than the gap 1h" in " ".join(err.split())
    assert json.loads(out)[0]["prices_changed"] == 0

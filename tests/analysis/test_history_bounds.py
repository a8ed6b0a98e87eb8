"""Bounded history questions: a grid of more than ``MAX_BUCKETS`` buckets and dates out of range
are one clear line (CLI exit 2), never minutes of work or a traceback."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from tests.analysis.test_history import store_day_one
from tests.conftest import read, run_main
from tracker.analysis.grid import MAX_BUCKETS, Filters, Resolution, check_range
from tracker.analysis.history import price_history
from tracker.errors import ConfigError, QueryTooLarge


def test_the_bucket_bound_is_checked_before_any_work(engine: Engine) -> None:
    since = datetime(2020, 1, 1, tzinfo=UTC)
    assert check_range(Resolution.hour, since, since.replace(month=12)) < MAX_BUCKETS
    with pytest.raises(QueryTooLarge, match="10,000"):
        read(engine, price_history,  Filters(), since=since, until=datetime(2022, 1, 1, tzinfo=UTC), resolution="hour")
    with pytest.raises(ConfigError, match="1970-01-01"):
        read(engine, price_history,  Filters(), since=datetime(1, 1, 1, tzinfo=UTC), resolution="week")
    with pytest.raises(ConfigError, match="2199-12-31"):
        read(engine, price_history,  Filters(), until=datetime(9999, 1, 1, tzinfo=UTC), resolution="week")


def test_cli_answers_a_too_large_grid_and_bad_dates_in_one_line(engine: Engine, capsys: Any) -> None:
    store_day_one(engine)
    url = engine.url.render_as_string(hide_password=False)
    for args, words in [
        (["--since", "3y", "--every", "1h"], "10,000 one history may have"),
        (["--since", "0001-01-01", "--every", "1w"], "1970-01-01"),
        (["--since", "99999999999d"], "--since"),
        (["--since", "30d", "--until", "9999-01-01"], "in the future"),  # refused before the grid bound
    ]:
        code, _, err = run_main(capsys, "--db", url, "history", "--gpu", "H100", *args)
        assert code == 2, (args, err)
        assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err

"""A retired provider (``Scraper.retired``) is never collected, by name or by default, live or
replayed, scheduled or not; its stored history stays readable; listings show it apart, with
the date and the reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from scrapers.base import Retired
from scrapers.cudo import CudoScraper
from scrapers.registry import all_scrapers
from tests.conftest import run_main
from tracker.config.settings import Settings
from tracker.errors import ConfigError
from tracker.pipeline.collect import collect, selected_scrapers
from tracker.pipeline.replay import BUNDLED_RECORDINGS, RecordingInfo
from tracker.service.scheduler import plan_providers as plan


class StillActiveCudo(CudoScraper):
    """Cudo as it was collected before its retirement (to put history in a store)."""

    retired = None


def test_cudo_is_retired_with_its_date_and_reason() -> None:
    assert CudoScraper.retired == Retired(datetime(2026, 3, 31).date(), CudoScraper.retired.reason)  # type: ignore[union-attr]
    assert "shut down" in CudoScraper.retired.reason and "gpuhunt" in CudoScraper.retired.reason  # type: ignore[union-attr]


def test_retired_providers_are_not_collected_by_default_nor_scheduled() -> None:
    settings = Settings()
    assert "cudo" in all_scrapers()  # still registered: its history has a name to be read by
    assert "cudo" not in {c.name for c in selected_scrapers(settings)}
    assert "cudo" not in {p.name for p in plan(settings)}
    assert "cudo" not in {p.name for p in plan(settings, replay=True)}
    with pytest.raises(ConfigError, match=r"^cudo is retired since 2026-03-31 .*shut down"):
        selected_scrapers(settings, ["cudo"])
    with pytest.raises(ConfigError, match="cudo is retired"):
        plan(settings, ["cudo"])


def test_asking_to_scrape_a_retired_provider_is_one_line(capsys: Any, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 't.db'}"
    for extra in ((), ("--replay",)):
        code, out, err = run_main(capsys, "--db", db, "scrape", "--provider", "cudo", *extra)
        assert code == 2 and out == ""
        assert err.strip().startswith("error: cudo is retired since 2026-03-31") and len(err.strip().splitlines()) == 1
        assert "Traceback" not in err


def test_a_retired_class_passed_directly_is_refused(engine: Engine) -> None:
    with pytest.raises(ConfigError, match="cudo is retired"):
        collect(engine, Settings(), classes=[CudoScraper], replay=True)


def test_its_stored_history_stays_readable_and_it_is_listed_apart(capsys: Any, tmp_path: Path, db_url: str) -> None:
    from tracker.pipeline.store import open_store

    settings = Settings(database=db_url)
    engine = open_store(settings, db_url)
    try:  # cudo's last collection, before it was retired (its bundled handmade sample, dated)
        [result] = collect(engine, settings, classes=[StillActiveCudo], replay=True)
        assert result.status == "ok" and result.offers_seen > 0
    finally:
        engine.dispose()
    code, out, _ = run_main(capsys, "--db", db_url, "prices", "--provider", "cudo", "--format", "json")
    assert code == 0 and len(json.loads(out)) == result.offers_seen - result.quarantined
    code, out, _ = run_main(capsys, "--db", db_url, "prices", "--provider", "cudo", "--at",
                            datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), "--format", "json")
    assert code == 0
    code, out, _ = run_main(capsys, "--db", db_url, "providers", "--format", "json")
    rows = json.loads(out)
    cudo = next(r for r in rows if r["provider"] == "cudo")
    assert (cudo["status"], cudo["retired"], cudo["retired_on"]) == ("retired", True, "2026-03-31")
    assert cudo["note"].startswith("retired since 2026-03-31: CUDO Compute's public platform shut down")
    assert cudo["last_success"] is not None  # its history is there
    names = [r["provider"] for r in rows]
    assert names.index("cudo") > max(names.index(r["provider"]) for r in rows if not r["retired"] and not r["external"])
    # and a replay of every recording leaves it out
    code, out, _ = run_main(capsys, "--db", db_url, "scrape", "--replay", "--provider", "lambda", "--format", "json",
                            "--no-alerts", "--mix-replay")
    assert code == 0 and [r["provider"] for r in json.loads(out)] == ["lambda"]


def test_replaying_every_recording_skips_the_retired(tmp_path: Path) -> None:
    """``scrape --replay`` without --provider takes every recorded active provider."""
    assert (BUNDLED_RECORDINGS / "cudo" / "manifest.json").is_file()  # its recording stays, for its tests
    assert RecordingInfo("cudo", None, "handmade").observed_at is None

"""Replay: manifests map requests to recorded bodies; unknown requests fail loudly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from db import reads
from db.reader import in_transaction
from tracker.errors import ConfigError
from tracker.pipeline.replay import ReplayTransport, load_manifest


def write_recording(root: Path) -> Path:
    d = root / "demo"
    d.mkdir(parents=True)
    (d / "p1.json").write_text(json.dumps({"page": 1}))
    (d / "p2.json").write_text(json.dumps({"page": 2}))
    (d / "manifest.json").write_text(json.dumps({
        "source": "test", "recorded": "2026-01-01",
        "responses": [
            {"method": "GET", "url": "https://api.demo.test/skus", "query": {"pageToken": "abc"}, "file": "p2.json",
             "headers": {"Link": '<https://api.demo.test/skus?page=3>; rel="next"'}},
            {"method": "GET", "url": "https://api.demo.test/skus", "file": "p1.json"},
            {"method": "POST", "url": "https://api.demo.test/graphql", "body_contains": "gpuTypes", "file": "p1.json", "status": 201},
        ],
    }))
    return root


def get(transport: ReplayTransport, method: str, url: str, **kw: object) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport) as c:
            return await c.request(method, url, **kw)  # type: ignore[arg-type]

    return asyncio.run(go())


def test_requests_are_answered_from_the_manifest(tmp_path: Path) -> None:
    t = ReplayTransport.for_provider("demo", write_recording(tmp_path))
    assert get(t, "GET", "https://api.demo.test/skus?key=x").json() == {"page": 1}
    second = get(t, "GET", "https://api.demo.test/skus", params={"pageToken": "abc"})
    assert second.json() == {"page": 2}
    assert second.headers["Link"] == '<https://api.demo.test/skus?page=3>; rel="next"'  # recorded headers are served
    assert get(t, "POST", "https://api.demo.test/graphql", json={"query": "{ gpuTypes { id } }"}).status_code == 201
    missing = get(t, "POST", "https://api.demo.test/graphql", json={"query": "{ pods }"})
    assert missing.status_code == 404 and "no recording for POST" in missing.text
    assert len(t.requests) == 4


def test_a_bad_manifest_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"responses": [{"method": "GET"}]}))
    with pytest.raises(ConfigError, match="not a valid manifest"):
        load_manifest(tmp_path)


# --- what a replay is: its recording's date and kind ---------------------------------------------

from datetime import UTC, datetime  # noqa: E402

from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session  # noqa: E402

from db.spans import utcnow  # noqa: E402
from scrapers.registry import get_scraper  # noqa: E402
from tracker.alerts.message import replay_note  # noqa: E402
from tracker.config.settings import Settings  # noqa: E402
from tracker.pipeline.collect import collect  # noqa: E402
from tracker.pipeline.replay import (  # noqa: E402
    BUNDLED_RECORDINGS,
    recorded_providers,
    recording_info,
)


def manifest_with(root: Path, provider: str, **fields: object) -> Path:
    shutil_copy = root / provider
    shutil_copy.mkdir(parents=True)
    (shutil_copy / "manifest.json").write_text(json.dumps({"source": "test", "responses": [], **fields}))
    return root


@pytest.mark.parametrize(
    ("recorded", "observed"),
    [
        ("2024-11-05", datetime(2024, 11, 5, tzinfo=UTC)),
        ("2026-08", datetime(2026, 8, 1, tzinfo=UTC)),
        ("2026", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-09-28T14:18:05Z", datetime(2026, 9, 28, 14, 18, 5, tzinfo=UTC)),
        (None, None),
    ],
)
def test_the_manifest_says_when_a_recording_was_made(tmp_path: Path, recorded: str | None, observed: datetime | None) -> None:
    info = recording_info("demo", manifest_with(tmp_path, "demo", recorded=recorded, fixture="recording"))
    assert info is not None and info.recorded == recorded and info.observed_at == observed
    assert info.mark() == {"recorded": recorded, "fixture": "recording"}


@pytest.mark.parametrize("fields", [{"recorded": "handmade"}, {"recorded": "2026-13-01"}, {"recorded": "2026-01-01", "fixture": "real"}])
def test_a_bad_recorded_date_or_fixture_kind_is_a_config_error(tmp_path: Path, fields: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="replay: .*manifest.json: '(recorded|fixture)' should be"):
        recording_info("demo", manifest_with(tmp_path, "demo", **fields))


@pytest.mark.parametrize("provider", recorded_providers())
def test_every_bundled_manifest_says_what_it_is(provider: str) -> None:
    """The manifest's fixture kind is the scraper's (the README table's), and a recording has its date."""
    info = recording_info(provider)
    assert info is not None
    assert info.fixture == get_scraper(provider).fixture_kind
    manifest = json.loads((BUNDLED_RECORDINGS / provider / "manifest.json").read_text())
    if info.fixture == "recording":
        assert info.recorded is not None or "recorded_note" in manifest, "a recording needs its date or a note why not"
    else:  # a reference, handmade or API-reference fixture says so in its manifest's source
        assert info.recorded is None and info.fixture.upper() in manifest["source"].upper().replace("API REFERENCE", "API-REFERENCE")


def handmade_provider() -> str:
    """An active provider whose bundled recording is a handmade sample."""
    from scrapers.registry import all_scrapers

    return next(n for n, c in all_scrapers().items() if c.fixture_kind == "handmade" and c.retired is None)


def _replay(engine: Engine, *providers: str) -> None:
    results = collect(engine, Settings(), list(providers), replay=True)
    assert [r.status for r in results] == ["ok"] * len(providers), [r.error_message for r in results]


def test_replayed_prices_are_stored_at_the_recording_date_and_marked(engine: Engine) -> None:
    before = utcnow().replace(microsecond=0)  # the store keeps whole seconds
    sample = handmade_provider()
    _replay(engine, "oci", sample)
    with Session(engine) as s:
        rows = reads.latest_prices(in_transaction(s.connection()))
        providers = reads.providers(in_transaction(s.connection()))
    oci = [r for r in rows if r["provider"] == "oci"]
    assert oci and all(r["observed_at"] == datetime(2026, 10, 1, tzinfo=UTC) for r in oci)  # not the replay time
    assert all((r["replay"], r["recorded"], r["fixture"]) == (True, "2026-10-01", "recording") for r in oci)
    handmade = [r for r in rows if r["provider"] == sample]  # a handmade sample has no recording date
    assert handmade and all((r["replay"], r["recorded"], r["fixture"]) == (True, None, "handmade") for r in handmade)
    assert all(r["observed_at"] >= before for r in handmade)
    assert providers["oci"].last_success_at == datetime(2026, 10, 1, tzinfo=UTC)


def test_replaying_twice_extends_the_same_intervals(engine: Engine) -> None:
    _replay(engine, "oci")
    _replay(engine, "oci")
    with Session(engine) as s:
        rows = reads.latest_prices(in_transaction(s.connection()), providers=["oci"])
        intervals = s.connection().exec_driver_sql("SELECT count(*), max(observations) FROM price_interval").one()
    assert intervals[0] == len([r for r in rows if r["price_per_hour"] is not None])
    assert intervals[1] == 2


def test_a_live_collection_is_not_marked(engine: Engine) -> None:
    from scrapers.oci import OciScraper
    from tests.conftest import load_json
    from tracker.pipeline.collect import _normalised, _start_runs, _store, observation_time

    scraper = OciScraper(env={})
    offers = scraper.parse({"products": [load_json("oci/oci_cetools_products_gpu_items_2026-10-01.json")],
                            "shapes": load_json("oci/oci_cost_estimator_shapes_excerpt.json")})
    [(run_id, started)] = _start_runs(engine, [(scraper, False, utcnow())])
    settings, observed = Settings(), observation_time(started, None)
    assert observed == started  # a live collection is observed when its run started
    _store(engine, run_id, scraper, offers, _normalised(offers, settings, observed, None), settings, observed, started)
    with Session(engine) as s:
        rows = reads.latest_prices(in_transaction(s.connection()), providers=["oci"])
    assert rows and all(not r["replay"] and r["recorded"] is None for r in rows)
    assert all(abs((r["observed_at"] - started).total_seconds()) < 1 for r in rows)  # the run's own time


def test_alert_and_digest_lines_say_a_price_is_replayed() -> None:
    assert replay_note({"replay": False}) == ""
    assert replay_note({"replay": True, "recorded": "2024-11-05", "fixture": "recording"}) == (
        ", REPLAYED from the 2024-11-05 recording, not a live price"
    )
    assert "handmade sample" in replay_note({"replay": True, "recorded": None, "fixture": "handmade"})

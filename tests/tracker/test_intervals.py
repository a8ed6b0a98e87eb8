"""One collection interval per provider: what the scheduler runs on, what the collector stores,
the analysis's tolerance for "price at t", status, ``/api/providers``, ``/metrics``, the alerts'
staleness and holding and the CLI's "nothing is current" note all come from
``Settings.interval_for`` (config ``[providers.X] interval`` > the scraper's own declared
non-default interval > ``default_interval``), whatever ``default_interval`` is."""

from __future__ import annotations

import tomllib
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.models import Provider
from db.reader import in_transaction
from db.spans import from_epoch, utcnow
from scrapers.base import Scraper
from scrapers.registry import all_scrapers
from tests.fakes import make_fake
from tracker.alerts.data import gpu_specs, provider_status, value_at
from tracker.alerts.rules import parse_rules
from tracker.analysis.grid import scrape_intervals
from tracker.cli.common import State
from tracker.cli.timetravel import warn_if_stale
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.reads.data import ReadContext, providers
from tracker.service.scheduler import Runtime, plan_providers, provider_interval
from tracker.service.status import provider_statuses
from tracker.web.context import WebContext
from tracker.web.metrics import StoreCollector

#: Configurations and the intervals (seconds) they give: lambda and vastai declare nothing, aws
#: declares a day (its bulk offer file).
CONFIGS = {
    "no config": ("", {"lambda": 3600, "vastai": 3600, "aws": 86400}),
    "default_interval 2h": ('default_interval = "2h"\n', {"lambda": 7200, "vastai": 7200, "aws": 86400}),
    "default_interval 30m, sections": (
        'default_interval = "30m"\n[providers.lambda]\nenabled = true\n[providers.vastai]\ninterval = "15m"\n'
        '[providers.aws]\ninterval = "6h"\n',
        {"lambda": 1800, "vastai": 900, "aws": 6 * 3600}),
}


def settings_of(text: str) -> Settings:
    return Settings(**tomllib.loads(text))


@pytest.fixture(params=list(CONFIGS))
def config(request: pytest.FixtureRequest) -> tuple[Settings, dict[str, int]]:
    text, expected = CONFIGS[request.param]
    return settings_of(text), expected


def test_the_analysis_tolerance_is_the_scheduled_interval(config: tuple[Settings, dict[str, int]],
                                                          sqlite_engine: Engine) -> None:
    settings, expected = config
    tolerance = scrape_intervals(settings)
    scrapers = all_scrapers()
    for name, seconds in expected.items():
        assert provider_interval(settings, scrapers[name]) == seconds, name
        assert tolerance(name) == timedelta(seconds=seconds), name
    active = {name: cls for name, cls in scrapers.items() if cls.retired is None}  # a retired one is never planned
    planned = {p.name: p.interval for p in plan_providers(settings, list(active))}
    runtime = Runtime(sqlite_engine, settings)
    for name, cls in active.items():
        scheduled = provider_interval(settings, cls)
        assert planned[name] == scheduled, name
        assert tolerance(name) == timedelta(seconds=scheduled), name
        assert runtime.plan(name).interval == scheduled, name  # a job not planned by this process


def test_a_plugin_follows_the_same_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scraper from an entry point is not in the built-in table: the registry finds it, and
    only an interval it declares apart from the base class's counts as declared."""
    daily = make_fake("dailycloud")
    daily.default_interval_s = 86400
    hourly = make_fake("hourlycloud")
    assert hourly.default_interval_s == Scraper.default_interval_s
    plugins = {"dailycloud": daily, "hourlycloud": hourly}
    monkeypatch.setattr("scrapers.registry.find", plugins.get)
    settings = settings_of('default_interval = "2h"\n')
    tolerance = scrape_intervals(settings)
    assert provider_interval(settings, daily) == tolerance("dailycloud").total_seconds() == 86400
    assert provider_interval(settings, hourly) == tolerance("hourlycloud").total_seconds() == 7200
    # a provider no scraper knows (an imported archive's) keeps default_interval
    assert tolerance("someimport") == timedelta(hours=2)


def test_readers_of_the_store_report_the_scheduled_interval(engine: Engine,
                                                            config: tuple[Settings, dict[str, int]]) -> None:
    settings, expected = config
    scrapers = all_scrapers()
    listed = {p["provider"]: p["interval_s"] for p in providers(ReadContext.create(settings, engine))}
    status = {s.provider: s.interval_s for s in provider_statuses(engine, settings)}
    families = {f.name: f for f in StoreCollector(WebContext.create(settings, engine)).collect()}
    metric = {s.labels["provider"]: s.value for s in families["gpu_tracker_provider_interval_seconds"].samples}
    for name, seconds in expected.items():
        assert listed[name] == status[name] == metric[name] == seconds, name
    for name, cls in scrapers.items():
        scheduled = provider_interval(settings, cls)
        assert listed[name] == metric[name] == scheduled, name
        if name in status:
            assert status[name] == scheduled, name


@pytest.fixture
def aws_a_day_old(engine: Engine, db_url: str) -> str:
    """A store holding aws's real recording, its last collection 20 hours ago: aws collects once a
    day, so its prices are current; an hourly provider's would have gone stale."""
    [result] = collect(engine, Settings(), ["aws"], replay=True)
    assert result.status == "ok", result.error_message
    with Session(engine) as s:
        aws = s.get(Provider, "aws")
        assert aws is not None
        aws.last_success_at = utcnow() - timedelta(hours=20)
        s.add(aws)
        s.commit()
    return db_url


def test_staleness_and_holding_follow_the_declared_interval(engine: Engine, aws_a_day_old: str) -> None:
    settings = Settings(database=aws_a_day_old)
    assert settings.interval_for("aws") == 86400
    with Session(engine) as s:
        assert provider_status(in_transaction(s.connection()), settings, utcnow())["aws"] == "fresh"
    st = State(db_url=aws_a_day_old, _settings=settings)
    try:
        assert warn_if_stale(st) is None
    finally:
        st.close()
    # an alert's value at a moment: aws's price holds until its next daily collection, not for an hour
    [rule] = parse_rules([{"name": "h100", "gpu": "H100", "below": 100.0}])
    with Session(engine) as s:
        [(last_seen,)] = s.connection().execute(text(
            "SELECT MAX(last_seen) FROM price_interval")).all()
        later = from_epoch(int(last_seen)) + timedelta(hours=12)
        assert value_at(in_transaction(s.connection()), rule, settings, later, gpu_specs(settings)) is not None

"""The reads of ``providers`` and ``alerts list`` (``db.reads``, ``db.reads``)
give what the ORM reads give, on the store's own driver (``db.direct``) and on SQLAlchemy's
connection alike; the rows here are handmade."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import Session, select

from db import direct, reads
from db.engine import session_scope
from db.models import AlertRule, AlertState, Provider, ScrapeRun
from db.reader import in_transaction
from db.reads import added_rule_tables, alert_states, imported_providers
from scrapers.registry import all_scrapers
from tracker.alerts import rule_states
from tracker.alerts.rules import config_rules
from tracker.alerts.store import add_rule
from tracker.config.settings import Settings
from tracker.pipeline.imports.aliases import external_providers

T0 = datetime(2026, 3, 1, 10, 0, 0, 250_000, tzinfo=UTC)


def _providers_and_runs(engine) -> None:  # noqa: ANN001
    with session_scope(engine) as s:
        s.add(Provider(name="lambda", display_name="Lambda", last_run_at=T0 + timedelta(hours=2), last_status="failed",
                       last_success_at=T0 + timedelta(hours=1), consecutive_failures=1, interval_s=3600))
        s.add(Provider(name="runpod", display_name="RunPod", last_run_at=T0, last_status="ok", last_success_at=T0))
        s.add(Provider(name="dc_roan", display_name="DC Roan", last_run_at=T0, last_status="ok", last_success_at=T0))
        s.add(Provider(name="shouting", display_name="", last_run_at=T0, last_status="ok", last_success_at=T0))
        s.add(Provider(name="never"))
        s.flush()
        s.add(ScrapeRun(provider="lambda", started_at=T0 + timedelta(hours=1), status="ok"))
        s.add(ScrapeRun(provider="lambda", started_at=T0 + timedelta(hours=2), status="failed", error_class="FetchError",
                        error_message="HTTP 500 from the pricing API"))
        s.add(ScrapeRun(provider="runpod", started_at=T0, status="ok"))
        s.add(ScrapeRun(provider="runpod", started_at=T0, status="ok", source="import", error_message="import of an archive"))
        s.add(ScrapeRun(provider="dc_roan", started_at=T0, status="ok", source="import",
                        error_message="import of ewyluda day.csv"))
        # a live run whose message reads like an import's: the source says what it was, on both paths
        s.add(ScrapeRun(provider="shouting", started_at=T0, status="ok", error_message="Import Of something"))


def test_provider_reads_equal_the_orms(engine) -> None:  # noqa: ANN001
    _providers_and_runs(engine)
    url = engine.url.render_as_string(hide_password=False)
    reader = direct.open_reader(url, [])
    assert reader is not None, "a current store opens directly"
    try:
        with Session(engine) as s, engine.connect() as conn:
            orm_rows = reads.providers(in_transaction(s.connection()))
            orm_runs = reads.latest_run_per_provider(in_transaction(s.connection()))
            orm_external = external_providers(in_transaction(s.connection()))
            for source in (reader, in_transaction(conn)):
                rows = reads.providers(source)
                assert rows.keys() == orm_rows.keys() == {"lambda", "runpod", "dc_roan", "shouting", "never"}
                for name, row in rows.items():
                    for key in row._fields:
                        assert getattr(row, key) == getattr(orm_rows[name], key), (name, key)
                assert rows["lambda"].last_run_at == T0 + timedelta(hours=2) and rows["lambda"].last_run_at.tzinfo
                runs = reads.latest_run_per_provider(source)
                assert {n: (r.status, r.error_message) for n, r in runs.items()} == {
                    n: (r.status, r.error_message) for n, r in orm_runs.items()}
                assert runs["lambda"].error_message == "HTTP 500 from the pricing API"
                imported = imported_providers(source)
                assert {n for n in rows if n in imported and n not in all_scrapers()} == set(orm_external)
                assert "dc_roan" in imported and "runpod" in imported
    finally:
        reader.close()


def test_alert_reads_equal_the_orms(engine) -> None:  # noqa: ANN001
    settings = Settings(alerts=[{"name": "cfg-h100", "gpu": "H100", "below": 5.0, "notify": ["console"]}])
    with session_scope(engine) as s:
        add_rule(settings, s, {"name": "added-a100", "gpu": ["A100*", "H200"], "above": 0.5, "notify": ["log"],
                               "kinds": "all", "rearm": "5%", "resolved": True})
        add_rule(settings, s, {"name": "added-low", "gpu": "H100", "new_low": True, "notify": ["log"], "for": 2})
        s.add(AlertState(rule="cfg-h100", fingerprint=config_rules(settings)[0].fingerprint(), state="firing", pending_count=0, last_value=1.99,
                         last_evaluated_at=T0, last_fired_at=T0 - timedelta(minutes=5)))
        s.add(AlertState(rule="added-low", fingerprint="stale", state="pending", pending_count=1, last_value=2.0,
                         last_evaluated_at=T0, last_resolved_at=T0 - timedelta(days=1)))
    url = engine.url.render_as_string(hide_password=False)
    reader = direct.open_reader(url, [])
    assert reader is not None
    try:
        with Session(engine) as s, engine.connect() as conn:
            orm_tables = [dict(r.definition) for r in s.exec(select(AlertRule).order_by(AlertRule.created_at)).all()]
            orm_states = {a.rule: a for a in s.exec(select(AlertState)).all()}
            for source in (reader, in_transaction(conn)):
                assert added_rule_tables(source) == orm_tables and [t["name"] for t in orm_tables] == [
                    "added-a100", "added-low"]
                states = alert_states(source)
                assert states.keys() == orm_states.keys() == {"cfg-h100", "added-low"}
                for name, row in states.items():
                    for key in row._fields:
                        assert getattr(row, key) == getattr(orm_states[name], key), (name, key)
        listed = rule_states(reader, settings)
        with engine.connect() as conn:
            assert listed == rule_states(in_transaction(conn), settings)
        assert [r["name"] for r in listed] == ["cfg-h100", "added-a100", "added-low"]
        assert (listed[0]["state"], listed[0]["last_value"]) == ("firing", 1.99)
        assert listed[2]["state"] == "armed", "a state of another fingerprint no longer applies"
    finally:
        reader.close()

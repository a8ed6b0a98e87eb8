"""/metrics through prometheus_client's own parser, on the replayed store of tests/web/conftest.py
(every bundled recording once, then lambda failing on a changed page), and the example alerting
rules in deploy/prometheus/alerts.yml checked against what /metrics exposes."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from scrapers.registry import all_scrapers
from tests.web.conftest import BROKEN_PROVIDER, Store, TestClient, get_json
from tracker.kinds import KINDS

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"


def exposition(client: TestClient, accept: str | None = None) -> dict[str, list[Sample]]:
    r = client.get("/metrics", headers={"accept": accept} if accept else {})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f.samples for f in text_string_to_metric_families(r.text)}
    assert families and all(name.startswith("gpu_tracker_") for name in families)
    return families


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def value(samples: list[Sample], **labels: str) -> float:
    [match] = [s.value for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
    return match


@pytest.fixture(scope="module")
def metrics(client: TestClient) -> dict[str, list[Sample]]:
    return exposition(client)


def test_per_provider_figures_match_the_api(client: TestClient, metrics: dict[str, list[Sample]]) -> None:
    providers = {p["provider"]: p for p in get_json(client, "/api/providers")}
    runpod = providers["runpod"]
    assert value(metrics["gpu_tracker_provider_offers"], provider="runpod") == runpod["offers"] == len(
        get_json(client, "/api/prices?provider=runpod&kind=all"))
    assert value(metrics["gpu_tracker_provider_up"], provider="runpod") == 1
    assert value(metrics["gpu_tracker_provider_consecutive_failures"], provider="runpod") == 0
    assert value(metrics["gpu_tracker_provider_interval_seconds"], provider="runpod") == runpod["interval_s"]
    last_success = value(metrics["gpu_tracker_provider_last_success_timestamp_seconds"], provider="runpod")
    assert last_success == pytest.approx(_epoch(runpod["last_success_at"]), abs=0.01)
    assert value(metrics["gpu_tracker_scrape_duration_seconds"], provider="runpod") >= 0
    assert value(metrics["gpu_tracker_provider_up"], provider=BROKEN_PROVIDER) == 0
    assert value(metrics["gpu_tracker_provider_consecutive_failures"], provider=BROKEN_PROVIDER) == 1
    states = {s.labels["gpu_tracker_provider_status"]: s.value for s in metrics["gpu_tracker_provider_status"]
              if s.labels["provider"] == BROKEN_PROVIDER}
    assert states == {"ok": 0, "partial": 0, "failed": 1, "skipped": 0, "running": 0}
    assert {s.labels["provider"] for s in metrics["gpu_tracker_provider_offers"]} == set(all_scrapers())


def test_prices_are_the_api_minimums(client: TestClient, metrics: dict[str, list[Sample]]) -> None:
    h100 = [r for r in get_json(client, "/api/prices?gpu=H100-SXM&kind=on_demand,community") if r["currency"] == "USD"]
    assert value(metrics["gpu_tracker_gpu_cheapest_usd_per_gpu_hour"], gpu="H100-SXM") == pytest.approx(
        h100[0]["price_per_gpu_hour"])
    assert value(metrics["gpu_tracker_gpu_offers"], gpu="H100-SXM") == len(h100)
    # the keyless RunPod replay has no spot price: Vast.ai's bid floors are the spot prices here
    spot = [r for r in get_json(client, "/api/prices?gpu=H100-SXM&provider=vastai&kind=spot") if r["currency"] == "USD"]
    assert spot
    assert value(metrics["gpu_tracker_min_price_usd_per_gpu_hour"], gpu="H100-SXM", provider="vastai",
                 kind="spot") == pytest.approx(spot[0]["price_per_gpu_hour"])


def test_the_index_gauge_is_the_api_index(client: TestClient, metrics: dict[str, list[Sample]]) -> None:
    rows = [r for r in get_json(client, "/api/index?gpu=H100-SXM&since=7d")["rows"] if r["gpu"] == "H100-SXM"]
    assert rows
    assert value(metrics["gpu_tracker_gpu_index_usd_per_gpu_hour"], gpu="H100-SXM") == pytest.approx(rows[-1]["index"])
    assert value(metrics["gpu_tracker_gpu_index_providers"], gpu="H100-SXM") == rows[-1]["providers"]


def test_label_cardinality_is_bounded(metrics: dict[str, list[Sample]]) -> None:
    """Labels come from the scrapers, the catalog and the kinds, never from offers."""
    allowed = {"provider", "gpu", "kind", "version", "gpu_tracker_provider_status"}
    gpus = {s.labels["gpu"] for s in metrics["gpu_tracker_min_price_usd_per_gpu_hour"]}
    for name, samples in metrics.items():
        for s in samples:
            assert set(s.labels) <= allowed, (name, s.labels)
    mins = metrics["gpu_tracker_min_price_usd_per_gpu_hour"]
    assert {s.labels["kind"] for s in mins} <= set(KINDS)
    assert len(mins) <= len(gpus) * len(all_scrapers()) * len(KINDS)
    assert len({tuple(sorted(s.labels.items())) for s in mins}) == len(mins)  # one series per key


def test_openmetrics_when_asked(client: TestClient) -> None:
    r = client.get("/metrics", headers={"accept": "application/openmetrics-text; version=1.0.0"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/openmetrics-text")
    assert r.text.rstrip().endswith("# EOF")


SELECTOR = re.compile(r"\b(gpu_tracker_[a-z0-9_]+)\b(\{([^}]*)\})?")
MATCHER = re.compile(r'([a-z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def test_alert_rules_use_only_exposed_metrics_and_labels(metrics: dict[str, list[Sample]]) -> None:
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    assert {r["alert"] for r in rules} >= {"GpuTrackerProviderStale", "GpuTrackerProviderFailing", "GpuTrackerH100Below2"}
    for rule in rules:
        selectors = SELECTOR.findall(rule["expr"])
        assert selectors, rule["alert"]
        for name, _, matchers in selectors:
            assert name in metrics, f"{rule['alert']}: {name} is not exposed by /metrics"
            for label, op, pattern in MATCHER.findall(matchers):
                samples = metrics[name]
                assert all(label in s.labels for s in samples), f"{rule['alert']}: {name} has no label {label}"
                if op == "=~":  # the rule matches something on the replayed store
                    assert any(re.fullmatch(pattern, s.labels[label]) for s in samples), (rule["alert"], pattern)
                elif op == "=":
                    assert any(s.labels[label] == pattern for s in samples), (rule["alert"], pattern)


def test_metrics_need_the_api_token_once_one_is_set(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prometheus scrapes with `authorization: {credentials: <token>}`; without it, 401."""
    from tracker.web import create_app

    token = "metrics-token-0123456789abcdef"
    monkeypatch.setenv("GPU_TRACKER_API_TOKEN", token)
    with TestClient(create_app(store.settings, store.engine), base_url="http://127.0.0.1:8000") as c:
        assert c.get("/metrics").status_code == 401
        r = c.get("/metrics", headers={"authorization": f"Bearer {token}"})
        assert r.status_code == 200 and token not in r.text
        assert "gpu_tracker_provider_offers" in {f.name for f in text_string_to_metric_families(r.text)}

"""The JSON API, /metrics, /healthz and the dashboard pages on a store filled by the real
replay path (every bundled recording once, then lambda failing on a changed page)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import pytest
from sqlmodel import Session
from typer.testing import CliRunner

from db.reader import in_transaction
from scrapers.registry import all_scrapers
from tests.web.conftest import (
    BROKEN_PROVIDER,
    GCP_ENV,
    GCP_SECRET,
    NOTIFY_SECRET,
    Store,
    TestClient,
    get_json,
)
from tracker.catalog.specs import family_of
from tracker.catalog.value import DEFAULT_BASIS
from tracker.cli import app as cli_app

PRICE_KEYS = {"provider", "gpu", "gpu_raw", "gpu_count", "gpu_memory_gb", "kind", "term_months", "region", "country",
              "sku", "price_per_hour", "price_per_gpu_hour", "currency", "available", "available_count", "observed_at",
              "price_since", "replay", "recorded", "fixture", "via", "original_price_per_hour", "original_currency",
              "usd_rate", "usd_rate_date", "source", "age_s", "vcpus", "ram_gb"}


def _dt(v: str) -> datetime:
    return datetime.fromisoformat(v.replace("Z", "+00:00"))


# --- /api/prices ------------------------------------------------------------------------------


def test_prices_are_the_cli_rows_cheapest_first(client: TestClient, store: Store) -> None:
    api = get_json(client, "/api/prices?gpu=H100")
    result = CliRunner().invoke(cli_app, ["--db", store.url, "prices", "--gpu", "H100", "--format", "json"])
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)
    assert len(api) == len(cli) >= 10
    assert set(api[0]) == set(cli[0]) == PRICE_KEYS
    for a, c in zip(api, cli, strict=True):
        for key in PRICE_KEYS:
            if key in ("observed_at", "price_since"):
                assert _dt(a[key]) == _dt(c[key])
            elif key == "age_s":  # read a moment apart
                assert abs(a[key] - c[key]) <= 5
            elif isinstance(c[key], float):
                assert a[key] == pytest.approx(c[key], rel=1e-9), key
            else:
                assert a[key] == c[key], key
    assert all(r["replay"] is True and r["fixture"] in ("recording", "reference", "handmade") for r in api)
    assert all(r["source"].startswith("replay ") and r["age_s"] >= 0 for r in api)
    assert all(r["recorded"] for r in api if r["fixture"] == "recording")
    per_gpu = [r["price_per_gpu_hour"] for r in api]
    assert per_gpu == sorted(per_gpu)
    assert {family_of(r["gpu"]) for r in api} == {"H100"}
    assert len({r["provider"] for r in api}) >= 5


def test_price_filters(client: TestClient) -> None:
    exact = get_json(client, "/api/prices?gpu=H100-SXM&kind=on-demand")
    assert exact and {r["gpu"] for r in exact} == {"H100-SXM"} and {r["kind"] for r in exact} == {"on_demand"}

    vastai_spot = get_json(client, "/api/prices?provider=vastai&kind=spot")  # the keyless RunPod replay has no spot
    assert vastai_spot and {(r["provider"], r["kind"]) for r in vastai_spot} == {("vastai", "spot")}

    two = get_json(client, "/api/prices?provider=runpod,vastai&gpu=RTX-4090")
    assert {r["provider"] for r in two} <= {"runpod", "vastai"} and {r["gpu"] for r in two} == {"RTX-4090"}
    assert get_json(client, "/api/prices?provider=runpod&provider=vastai&gpu=RTX-4090") == two

    region = next(r["region"] for r in get_json(client, "/api/prices?provider=azure"))
    in_region = get_json(client, f"/api/prices?region={region}")
    assert in_region and {r["region"] for r in in_region} == {region}

    assert len(get_json(client, "/api/prices?limit=3")) == 3
    everything = get_json(client, "/api/prices")
    assert any(r["gpu"] is None for r in everything) or all(r["gpu"] for r in everything)  # unmapped rows allowed
    assert len(everything) > len(get_json(client, "/api/prices?gpu=H100"))


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("/api/prices?gpu=H900", "H900"),
        ("/api/prices?kind=hourly", "hourly"),
        ("/api/prices?provider=acme", "acme"),
        ("/api/prices?limit=0", "limit"),
        ("/api/value?basis=int4", "int4"),
        ("/api/history?gpu=H100&since=soon", "since"),
        ("/api/history?gpu=H100&every=month", "every"),
        ("/api/history?gpu=H100&metric=vibes", "metric"),
        ("/api/trends?gpu=Voodoo5", "Voodoo5"),
        ("/api/runs?status=great", "great"),
        ("/api/gpus?gpu=nonesuch", "nonesuch"),
        ("/api/index?method=mean-1", "mean-1"),
        ("/api/index?every=1w", "every"),
        ("/api/index?gpu=H900", "H900"),
        ("/api/index?method=ewyluda-1.3&kind=spot", "kind"),
    ],
)
def test_bad_filters_are_400_with_a_detail(client: TestClient, url: str, needle: str) -> None:
    r = client.get(url)
    assert r.status_code == 400, (url, r.status_code, r.text)
    body = r.json()
    assert set(body) == {"detail"} and isinstance(body["detail"], str)
    assert needle in body["detail"]
    assert not body["detail"].startswith("--")  # CLI flag names are translated to parameters


# --- catalog, value, history, trends ----------------------------------------------------------


def test_gpus_is_the_catalog(client: TestClient) -> None:
    every = get_json(client, "/api/gpus")
    ids = [g["gpu"] for g in every]
    assert "H100-SXM" in ids and "MI300X" in ids and len(ids) == len(set(ids))
    h100 = get_json(client, "/api/gpus?gpu=H100")
    assert {g["gpu"] for g in h100} == {"H100-SXM", "H100-PCIe", "H100-NVL"}
    sxm = next(g for g in h100 if g["gpu"] == "H100-SXM")
    assert sxm["vram_gb"] == 80 and sxm["fp16_dense_tflops"] > 900 and sxm["sources"][0].startswith("http")


def test_value_ranks_by_cost_per_tflop_on_the_named_basis(client: TestClient) -> None:
    v = get_json(client, "/api/value")
    assert v["basis"] == DEFAULT_BASIS and DEFAULT_BASIS in v["unit"] and v["kinds"] == ["on_demand", "community"]
    rows = v["rows"]
    assert len(rows) >= 10 and all(r["basis"] == DEFAULT_BASIS for r in rows)
    costs = [r["cost_per_tflop_hour"] for r in rows if r["cost_per_tflop_hour"] is not None]
    assert costs == sorted(costs)
    assert all(r["cost_per_tflop_hour"] is not None for r in rows[: len(costs)])  # rows without a figure last
    sxm = next(r for r in rows if r["gpu"] == "H100-SXM")
    assert sxm["cost_per_tflop_hour"] == pytest.approx(sxm["price_per_gpu_hour"] / sxm["tflops"], rel=1e-6)
    cheapest = min(r["price_per_gpu_hour"] for r in get_json(client, "/api/prices?gpu=H100-SXM&kind=on_demand,community")
                   if r["currency"] == "USD")
    assert sxm["price_per_gpu_hour"] == pytest.approx(cheapest)

    fp8 = get_json(client, "/api/value?basis=fp8-dense&gpu=H100-SXM")
    assert fp8["basis"] == "fp8-dense" and [r["gpu"] for r in fp8["rows"]] == ["H100-SXM"]
    assert fp8["rows"][0]["tflops"] == pytest.approx(2 * sxm["tflops"], rel=0.01)


def test_history_has_market_and_provider_lines(client: TestClient) -> None:
    h = get_json(client, "/api/history?gpu=H100-SXM&since=2d&every=hour")
    assert h["metric"] == "price" and h["unit"] == "USD/GPU-h" and h["resolution"] == "hour"
    assert h["gpus"] == ["H100-SXM"] and h["kinds"] == ["on_demand", "community"]
    assert len(h["market"]) >= 48  # the full grid, gaps included (as nulls)
    assert any(m["min"] is None for m in h["market"])
    filled = [m for m in h["market"] if m["min"] is not None]
    current = [r for r in get_json(client, "/api/prices?gpu=H100-SXM&kind=on_demand,community") if r["currency"] == "USD"]
    assert filled[-1]["min"] == pytest.approx(min(r["price_per_gpu_hour"] for r in current))
    assert filled[-1]["min"] <= filled[-1]["median"]
    assert set(h["providers"]) == {r["provider"] for r in current}
    assert {p["provider"] for p in h["by_provider"]} == set(h["providers"])

    tflop = get_json(client, "/api/history?gpu=H100-SXM&metric=cost-per-tflop&basis=fp8-dense")
    assert "fp8-dense" in tflop["unit"]
    last = [m for m in tflop["market"] if m["min"] is not None][-1]
    assert last["min"] < filled[-1]["min"] / 100


def test_trends_current_and_all_time_low(client: TestClient) -> None:
    rows = get_json(client, "/api/trends?gpu=H100")
    assert {r["gpu"] for r in rows} <= {"H100-SXM", "H100-PCIe", "H100-NVL"} and rows
    sxm = next(r for r in rows if r["gpu"] == "H100-SXM")
    assert sxm["current"] == pytest.approx(sxm["all_time_low"])
    assert sxm["history_days"] == 1 and sxm["good_deal"] is False  # one day of history: too little to say
    assert sxm["change_7d_pct"] is None  # no history a week back: a gap is never bridged


# --- providers, runs, alerts ------------------------------------------------------------------


def test_providers_status_names_credentials_but_never_values(client: TestClient) -> None:
    rows = {p["provider"]: p for p in get_json(client, "/api/providers")}
    assert set(rows) == set(all_scrapers())
    gcp = rows["gcp"]
    assert gcp["credentials"] == [GCP_ENV] and gcp["credentials_missing"] == []
    keyed = next(r for r in rows.values() if r["credentials_missing"])  # a provider that cannot run without its key
    missing = " and ".join(keyed["credentials_missing"])
    assert keyed["credentials_missing"] == keyed["credentials"] and f"set {missing} to enable" in keyed["note"]
    assert rows["digitalocean"]["credentials"] == [] and rows["digitalocean"]["credentials_missing"] == []  # its key is optional
    counts: dict[str, int] = {}
    for r in get_json(client, "/api/prices?kind=all"):  # the providers view counts every kind
        counts[r["provider"]] = counts.get(r["provider"], 0) + 1
    assert all(rows[p]["offers"] == n for p, n in counts.items())
    assert rows["runpod"]["health"] == "ok" and rows["runpod"]["data_age_s"] < 3600
    broken = rows[BROKEN_PROVIDER]
    assert broken["health"] == "failing" and broken["consecutive_failures"] == 1
    cudo = rows["cudo"]  # retired: listed apart, after the active ones, with the date and the reason
    assert (cudo["health"], cudo["retired"], cudo["retired_on"], cudo["enabled"]) == ("retired", True, "2026-03-31", False)
    assert "shut down" in cudo["retired_reason"] and cudo["status"] is None  # never collected by the replay
    order = [p["provider"] for p in get_json(client, "/api/providers") if not p["external"]]
    assert order.index("cudo") > max(order.index(n) for n, c in all_scrapers().items() if c.retired is None)
    assert broken["last_error_class"] == "ParseError" and broken["offers"] > 0  # last good prices still shown


def test_runs_newest_first_with_errors(client: TestClient) -> None:
    runs = get_json(client, "/api/runs?limit=5")
    assert len(runs) == 5 and [r["id"] for r in runs] == sorted((r["id"] for r in runs), reverse=True)
    assert runs[0]["provider"] == BROKEN_PROVIDER and runs[0]["status"] == "failed"
    assert runs[0]["error_class"] == "ParseError" and BROKEN_PROVIDER in runs[0]["error_message"]
    failed = get_json(client, "/api/runs?status=failed")
    assert [r["provider"] for r in failed] == [BROKEN_PROVIDER]
    assert {r["provider"] for r in get_json(client, "/api/runs?provider=runpod")} == {"runpod"}


def test_alert_rules_and_history_are_redacted(client: TestClient, store: Store) -> None:
    from tracker import alerts
    from tracker.alerts.evaluate import evaluate

    [rule] = get_json(client, "/api/alerts")
    assert rule["name"] == "h100-cheap" and rule["state"] == "armed" and rule["for"] == 1
    assert "hooks.example.com" in rule["notify"] and NOTIFY_SECRET not in rule["notify"]
    with Session(store.engine) as s:
        rules = alerts.load_rules(store.settings, in_transaction(s.connection()))
    evaluate(store.engine, store.settings, rules=rules)  # writes the event and outbox, sends nothing
    [event] = get_json(client, "/api/alerts/history")
    assert event["rule"] == "h100-cheap" and event["kind"] == "fired" and event["value"] < 100
    assert {d["status"] for d in event["deliveries"]} == {"pending"}
    assert get_json(client, "/api/alerts")[0]["state"] == "firing"


# --- /metrics, /healthz, openapi ----------------------------------------------------------------


def test_healthz_and_openapi(client: TestClient) -> None:
    assert get_json(client, "/healthz") == {"status": "ok", "version": get_json(client, "/openapi.json")["info"]["version"],
                                            "database": "ok"}
    spec = get_json(client, "/openapi.json")
    for path in ("/api/prices", "/api/gpus", "/api/value", "/api/history", "/api/trends", "/api/providers", "/api/runs",
                 "/api/alerts", "/api/alerts/history", "/api/alerts/deliveries", "/metrics", "/healthz"):
        assert path in spec["paths"], path
    prices = spec["paths"]["/api/prices"]["get"]
    assert prices["responses"]["200"]["content"]["application/json"]["schema"]["items"]["$ref"].endswith("/PriceOut")
    assert prices["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")
    assert set(spec["components"]["schemas"]["PriceOut"]["properties"]) == PRICE_KEYS
    assert client.get("/docs").status_code == 404  # swagger UI loads from a CDN: off


# --- secrets ----------------------------------------------------------------------------------


def test_secrets_never_appear_in_any_response(client: TestClient) -> None:
    required = {"/api/tco": "/api/tco?gpu=H100", "/api/availability": "/api/availability?gpu=H100",  # a required parameter
                "/api/alerts/backtest": "/api/alerts/backtest?rule=h100-cheap&since=2000-01-01"}
    urls = [required.get(p, p) for p, ops in get_json(client, "/openapi.json")["paths"].items() if "get" in ops and "{" not in p]
    assert {"/api/providers", "/api/runs", "/api/alerts", "/api/alerts/deliveries", "/metrics", "/healthz"} <= set(urls)
    urls += ["/", "/gpu/H100", "/gpu/H100-SXM?kind=all", "/providers", "/alerts", "/api/history?gpu=H100", "/api/runs?limit=1000",
             "/openapi.json"]
    for url in urls:
        r = client.get(url)
        assert r.status_code == 200, url
        for secret in (GCP_SECRET, NOTIFY_SECRET):
            assert secret not in r.text, f"{secret} leaked by {url}"


# --- pages ------------------------------------------------------------------------------------


def _external_assets(html: str) -> list[str]:
    return re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="((?:https?:)?//[^"]+)"', html)


def test_overview_page(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in r.headers["content-security-policy"]
    html = r.text
    assert 'id="cheapest"' in html and 'href="/gpu/H100-SXM"' in html and 'id="health"' in html
    cheapest = get_json(client, "/api/prices?gpu=H100-SXM&kind=on_demand,community")[0]
    row = html[html.index('href="/gpu/H100-SXM"'):]
    row = row[: row.index("</tr>")]
    assert f"${cheapest['price_per_gpu_hour']:.3f}" in row and cheapest["provider"] in row
    assert _external_assets(html) == []


def test_gpu_page_has_offers_chart_data_and_trends(client: TestClient) -> None:
    r = client.get("/gpu/H100")
    assert r.status_code == 200
    html = r.text
    offers = get_json(client, "/api/prices?gpu=H100")
    assert html.count('<tr class="offer">') == len(offers)
    assert html.count('<div class="sub replay muted"') == len(offers)  # every replayed price says so
    assert f"replayed recording of {offers[0]['recorded']}, not collected live" in html or offers[0]["fixture"] != "recording"
    for gpu in {o["gpu"] for o in offers if o["kind"] in ("on_demand", "community")}:
        assert f'id="chart-{gpu}"' in html
    data = json.loads(re.search(r'<script id="history-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    sxm = next(c for c in data["charts"] if c["gpu"] == "H100-SXM")
    assert sxm["providers"] and len(sxm["x"]) == len(sxm["min"]) and sxm["all_time_low"] is not None
    assert 'src="/static/plotly.min.js"' in html and 'id="trends"' in html
    assert _external_assets(html) == []


def test_gpu_page_shows_availability_per_provider_and_region(client: TestClient) -> None:
    html = client.get("/gpu/H100?since=30d").text
    rows = get_json(client, "/api/availability?gpu=H100&since=30d&kind=on-demand,community")
    assert 'id="availability"' in html and html.count('<tr class="availability">') == len(rows) and rows
    table = html[html.index('id="availability"'):html.index("<h2>Price history</h2>")]
    for r in rows:  # a provider that states no stock reads "unknown", never a percentage
        shown = "unknown" if r["available_pct"] is None else f"{r['available_pct']:.1f}%"
        assert f'<td class="c-provider">{r["provider"]}' in table and shown in table
    assert any(r["available_pct"] is None for r in rows) and any(r["available_pct"] is not None for r in rows)


def test_gpu_page_controls_and_unknown_gpu(client: TestClient) -> None:
    assert client.get("/gpu/H100-SXM?since=7d&every=day&kind=spot").status_code == 200
    assert client.get("/gpu/H100-SXM?since=soon").status_code == 400
    missing = client.get("/gpu/H900")
    assert missing.status_code == 404 and "H900" in missing.text and 'href="/gpu/H100"' in missing.text
    redirect = client.get("/gpu?q=A100", follow_redirects=False)
    assert redirect.status_code == 303 and redirect.headers["location"].endswith("/gpu/A100")


def test_providers_page_shows_failures(client: TestClient) -> None:
    html = client.get("/providers").text
    assert 'id="providers"' in html and 'id="runs"' in html
    assert "ParseError" in html and "health-failing" in html and GCP_ENV in html


def test_plotly_is_served_locally_with_caching(client: TestClient) -> None:
    r = client.get("/static/plotly.min.js")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/javascript")
    assert r.headers["content-encoding"] == "gzip" and "max-age" in r.headers["cache-control"]
    assert "plotly.js" in r.text[:200] and len(r.content) > 1_000_000
    again = client.get("/static/plotly.min.js", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304
    css = client.get("/static/style.css")
    assert css.status_code == 200 and "text/css" in css.headers["content-type"]


# --- CLI --------------------------------------------------------------------------------------


def test_serve_runs_uvicorn_with_config_defaults_and_flags(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append({"app": app, **kw}))
    runner = CliRunner()
    assert runner.invoke(cli_app, ["--db", store.url, "serve"]).exit_code == 0
    assert (calls[-1]["host"], calls[-1]["port"]) == ("127.0.0.1", 8000)
    refused = runner.invoke(cli_app, ["--db", store.url, "serve", "--host", "0.0.0.0", "--port", "9123"])
    assert refused.exit_code != 0 and "GPU_TRACKER_API_TOKEN" in str(refused.exception) and len(calls) == 1
    monkeypatch.setenv("GPU_TRACKER_API_TOKEN", "t0ken-for-the-serve-test")
    assert runner.invoke(cli_app, ["--db", store.url, "serve", "--host", "0.0.0.0", "--port", "9123"]).exit_code == 0
    assert (calls[-1]["host"], calls[-1]["port"]) == ("0.0.0.0", 9123)
    assert calls[-1]["app"].title == "gpu-price-tracker"
    help_text = runner.invoke(cli_app, ["serve", "--help"]).output
    assert "--host" in help_text and "--port" in help_text and "dashboard" in help_text


def test_tco_matches_the_article_and_the_cli(client: TestClient, store: Store) -> None:
    """The article's H100 inputs give its figures; without --rent the market price is used with its source."""
    api = get_json(client, "/api/tco?gpu=H100&purchase=25000&rent=3.15&cooling=0.02")
    assert api["gpu"] == "H100-SXM" and round(api["breakeven_hours"]) == 7937
    assert round(api["breakeven_months_24_7"]) == 11 and round(api["breakeven_months_at_utilization"]) == 18
    assert api["effective_hourly_cost"] == pytest.approx(1.05, abs=0.01)
    market = get_json(client, "/api/tco?gpu=H100-SXM")
    assert market["rent_source"].startswith("market cheapest H100-SXM on ") and market["purchase"] == 30000  # catalog
    result = CliRunner().invoke(cli_app, ["--db", store.url, "tco", "--gpu", "H100-SXM", "--format", "json"])
    cli = json.loads(result.stdout)
    assert cli["rent"] == pytest.approx(market["rent"]) and cli["breakeven_hours"] == pytest.approx(market["breakeven_hours"])
    assert get_json(client, "/api/tco?gpu=NoSuchGPU", status=400)["detail"].startswith("gpu: 'NoSuchGPU' matches no GPU")


# --- /api/availability ------------------------------------------------------------------------


def test_availability_answers_per_provider_and_region(client: TestClient) -> None:
    rows = get_json(client, "/api/availability?gpu=H100&since=30d")
    assert rows and {"provider", "region", "available_pct", "longest_unavailable_h", "last_available"} <= set(rows[0])
    assert [(r["provider"], r["region"]) for r in rows] == sorted((r["provider"], r["region"]) for r in rows)
    for r in rows:  # a share is a percentage of observed hours, or null (the provider states no stock)
        assert r["available_pct"] is None or (0 <= r["available_pct"] <= 100 and r["available_h"] <= r["observed_h"])
    assert client.get("/api/availability?gpu=H999").status_code == 400
    assert client.get("/api/availability?gpu=H100&since=soon").status_code == 400

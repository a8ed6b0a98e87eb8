"""``/metrics`` for Prometheus: a ``prometheus_client`` custom collector that reads the store on
each scrape, so the figures are the database's, whichever process wrote them (the collector
runs in ``gpu-tracker run``, the web app only reads).

Label cardinality is bounded by what the tracker knows, never by the offers it sees: labels
are the provider (the registered scrapers), the GPU (the catalog's ids), the price kind (four)
and the run status (four). No metric is labelled per offer, SKU or region.

Per provider: current offers, up (last run ok), status (a state set), last run and last
success timestamps, collection interval, consecutive failures, and the last finished run's
duration, offers seen, quarantined and unmapped counts. Per GPU: the cheapest current USD
price per GPU-hour of the rentable kinds and their offer count, the rental index and its
provider count; per GPU, provider and kind:
the lowest current USD price. ``deploy/prometheus/alerts.yml`` alerts on these names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric, StateSetMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry

from db import reads
from db.reads import RunRow, latest_prices
from scrapers.registry import all_scrapers
from tracker import __version__
from tracker.reads.data import RENTABLE_KINDS, latest_index
from tracker.web.context import WebContext

PREFIX = "gpu_tracker"
#: Every value a run's status takes (``scrape_run.status``).
RUN_STATUSES = ("ok", "partial", "failed", "skipped", "running")


def _ts(dt: datetime | None) -> float | None:
    return round(dt.timestamp(), 3) if dt is not None else None


def _gauge(name: str, doc: str, labels: list[str], samples: list[tuple[list[str], float | None]]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)
    for values, v in samples:
        if v is not None:
            family.add_metric(values, float(v))
    return family


class StoreCollector(Collector):
    """Reads providers, runs and current prices from the store at every scrape of ``/metrics``."""

    def __init__(self, ctx: WebContext) -> None:
        self.ctx = ctx

    def collect(self) -> Iterator[Metric]:
        ctx = self.ctx
        scrapers = all_scrapers()
        with ctx.reader() as r:
            stored = reads.providers(r)
            runs = reads.latest_run_per_provider(r)
            counts = reads.current_offer_counts(r)
            latest = latest_prices(r, include_unmapped=False)
            finished: dict[str, RunRow] = {}
            for name, run in runs.items():
                if run.status == "running":  # the newest run is in flight: report the last finished one
                    done = reads.recent_runs(r, limit=1, providers=[name], statuses=["ok", "failed", "skipped"])
                    if done:
                        finished[name] = done[0]
                else:
                    finished[name] = run
        names = list(scrapers) + sorted(set(stored) - set(scrapers))  # history but no scraper any more

        def per(fn: Callable[[str], Any]) -> list[tuple[list[str], float | None]]:
            return [([n], fn(n)) for n in names]

        info = GaugeMetricFamily(f"{PREFIX}_build_info", "Version of gpu-price-tracker serving these metrics.",
                                 labels=["version"])
        info.add_metric([__version__], 1)
        yield info
        yield _gauge("provider_offers", "Priced offers listed by the provider's latest successful scrape.",
                     ["provider"], per(lambda n: counts.get(n, 0)))
        yield _gauge("provider_up", "1 when the provider's last run succeeded, 0 when it failed or was skipped.",
                     ["provider"], per(lambda n: (1 if stored[n].last_status == "ok" else 0)
                                       if n in stored and stored[n].last_status else None))
        status = StateSetMetricFamily(f"{PREFIX}_provider_status", "Status of the provider's newest run.",
                                      labels=["provider"])
        for n in names:
            if n in runs:
                status.add_metric([n], {s: runs[n].status == s for s in RUN_STATUSES})
        yield status
        yield _gauge("provider_last_run_timestamp_seconds", "Unix time the provider's last run finished.",
                     ["provider"], per(lambda n: _ts(stored[n].last_run_at) if n in stored else None))
        yield _gauge("provider_last_success_timestamp_seconds", "Unix time the provider's last successful scrape started.",
                     ["provider"], per(lambda n: _ts(stored[n].last_success_at) if n in stored else None))
        yield _gauge("provider_interval_seconds", "Seconds between the provider's scheduled collections.",
                     ["provider"], per(lambda n: ctx.settings.interval_for(n, scrapers[n]) if n in scrapers else None))
        yield _gauge("provider_consecutive_failures", "Failed runs in a row (0 after a success).",
                     ["provider"], per(lambda n: stored[n].consecutive_failures if n in stored else 0))
        yield _gauge("scrape_duration_seconds", "Duration of the provider's last finished run.",
                     ["provider"], per(lambda n: finished[n].duration_s if n in finished else None))
        yield _gauge("scrape_offers_seen", "Offers parsed by the provider's last finished run.",
                     ["provider"], per(lambda n: finished[n].offers_seen if n in finished else None))
        yield _gauge("scrape_quarantined", "Observations quarantined by the provider's last finished run.",
                     ["provider"], per(lambda n: finished[n].quarantined if n in finished else None))
        yield _gauge("scrape_unmapped", "Offers with an unmapped GPU name in the provider's last finished run.",
                     ["provider"], per(lambda n: finished[n].unmapped if n in finished else None))
        yield from _price_metrics([r for r in latest if r["currency"] == "USD"])
        yield from _index_metrics(latest_index(ctx))


def _index_metrics(index: dict[str, dict[str, Any]]) -> Iterator[Metric]:
    """Each GPU's newest daily rental index (median-of-medians-1, on-demand) and its providers."""
    gpus = sorted(index)
    yield _gauge("gpu_index_usd_per_gpu_hour", "Rental index (median-of-medians-1): today's median across providers "
                 "of each provider's median on-demand USD price per GPU-hour (newest day of the last week).",
                 ["gpu"], [([g], index[g]["index"]) for g in gpus])
    yield _gauge("gpu_index_providers", "Providers voting in the GPU's newest daily rental index (under 3: thin).",
                 ["gpu"], [([g], index[g]["providers"]) for g in gpus])


def _price_metrics(usd: list[dict[str, Any]]) -> Iterator[Metric]:
    """Rows come cheapest first, so the first row of a key is its minimum."""
    cheapest: dict[str, float] = {}
    offers: dict[str, int] = {}
    by_kind: dict[tuple[str, str, str], float] = {}
    for r in usd:
        by_kind.setdefault((r["gpu"], r["provider"], r["kind"]), r["price_per_gpu_hour"])
        if r["kind"] in RENTABLE_KINDS:
            offers[r["gpu"]] = offers.get(r["gpu"], 0) + 1
            cheapest.setdefault(r["gpu"], r["price_per_gpu_hour"])
    gpus = sorted(cheapest)
    yield _gauge("gpu_cheapest_usd_per_gpu_hour", "Cheapest current on-demand/community USD price per GPU-hour.",
                 ["gpu"], [([g], cheapest[g]) for g in gpus])
    yield _gauge("gpu_offers", "Current on-demand/community USD offers per GPU.", ["gpu"], [([g], offers[g]) for g in gpus])
    yield _gauge("min_price_usd_per_gpu_hour", "Lowest current USD price per GPU-hour per GPU, provider and kind.",
                 ["gpu", "provider", "kind"], [([g, p, k], v) for (g, p, k), v in sorted(by_kind.items())])


def registry_for(ctx: WebContext) -> CollectorRegistry:
    """A registry of its own per app (no process globals), holding only the store collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(ctx))
    return registry


def render(registry: CollectorRegistry, accept: str | None = None) -> tuple[bytes, str]:
    """The exposition body and its content type, negotiated from the request's Accept header
    (Prometheus text by default, OpenMetrics when asked)."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type

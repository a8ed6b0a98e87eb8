"""``/metrics`` in the Prometheus text exposition format (0.0.4), written by hand: a handful of
gauges read from the store on each scrape, so no client library or registry is needed.

Per provider: current offers, up (last run ok), last run / last success timestamps,
consecutive failures, and the last finished run's duration, offers seen, quarantined and
unmapped counts. Per GPU: the cheapest current rentable USD price and the offer count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from sqlmodel import Session

from db import queries
from scrapers.registry import all_scrapers
from tracker import __version__
from tracker.web.data import RENTABLE_KINDS, WebContext

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(v: float) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    return repr(float(v))


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def gauge(self, name: str, help_text: str, samples: Iterable[tuple[Mapping[str, str], float | None]]) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} gauge")
        for labels, v in samples:
            if v is not None:
                self.lines.append(f"{name}{_labels(labels)} {_number(v)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _ts(dt: datetime | None) -> float | None:
    return round(dt.timestamp(), 3) if dt is not None else None


def render(ctx: WebContext) -> str:
    names = list(all_scrapers())
    with Session(ctx.engine) as s:
        stored = queries.provider_rows(s)
        runs = queries.latest_run_per_provider(s)
        counts = queries.current_offer_counts(s)
        latest = queries.latest_prices(s, kinds=list(RENTABLE_KINDS), include_unmapped=False)
    names += sorted(set(stored) - set(names))  # providers with history but no scraper any more
    finished = {}
    with Session(ctx.engine) as s:
        for name, run in runs.items():
            if run.status == "running":  # the newest run is in flight: report the last finished one
                done = queries.recent_runs(s, limit=1, providers=[name], statuses=["ok", "failed", "skipped"])
                if done:
                    finished[name] = done[0]
            else:
                finished[name] = run

    def per(fn: object) -> list[tuple[dict[str, str], float | None]]:
        return [({"provider": n}, fn(n)) for n in names]  # type: ignore[operator]

    w = _Writer()
    w.gauge("gpu_tracker_build_info", "Version of gpu-price-tracker serving these metrics.", [({"version": __version__}, 1)])
    w.gauge("gpu_tracker_provider_offers", "Priced offers listed by the provider's latest successful scrape.",
            per(lambda n: counts.get(n, 0)))
    w.gauge("gpu_tracker_provider_up", "1 when the provider's last run succeeded, 0 when it failed or was skipped.",
            per(lambda n: (1 if stored[n].last_status == "ok" else 0) if n in stored and stored[n].last_status else None))
    w.gauge("gpu_tracker_provider_last_run_timestamp_seconds", "Unix time the provider's last run finished.",
            per(lambda n: _ts(stored[n].last_run_at) if n in stored else None))
    w.gauge("gpu_tracker_provider_last_success_timestamp_seconds", "Unix time the provider's last successful scrape started.",
            per(lambda n: _ts(stored[n].last_success_at) if n in stored else None))
    w.gauge("gpu_tracker_provider_consecutive_failures", "Failed runs in a row (0 after a success).",
            per(lambda n: stored[n].consecutive_failures if n in stored else 0))
    w.gauge("gpu_tracker_scrape_duration_seconds", "Duration of the provider's last finished run.",
            per(lambda n: finished[n].duration_s if n in finished else None))
    w.gauge("gpu_tracker_scrape_offers_seen", "Offers parsed by the provider's last finished run.",
            per(lambda n: finished[n].offers_seen if n in finished else None))
    w.gauge("gpu_tracker_scrape_quarantined", "Observations quarantined by the provider's last finished run.",
            per(lambda n: finished[n].quarantined if n in finished else None))
    w.gauge("gpu_tracker_scrape_unmapped", "Offers with an unmapped GPU name in the provider's last finished run.",
            per(lambda n: finished[n].unmapped if n in finished else None))

    cheapest: dict[str, float] = {}
    offers: dict[str, int] = {}
    for r in latest:
        if r["currency"] != "USD":
            continue
        g = r["gpu"]
        offers[g] = offers.get(g, 0) + 1
        cheapest.setdefault(g, r["price_per_gpu_hour"])  # rows come cheapest first
    gpus = sorted(cheapest)
    w.gauge("gpu_tracker_gpu_cheapest_usd_per_gpu_hour", "Cheapest current on-demand/community USD price per GPU-hour.",
            [({"gpu": g}, cheapest[g]) for g in gpus])
    w.gauge("gpu_tracker_gpu_offers", "Current on-demand/community USD offers per GPU.",
            [({"gpu": g}, offers[g]) for g in gpus])
    return w.text()

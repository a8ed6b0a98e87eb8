"""Backtests: what a rule would have done over stored history, without changing anything.

The rule runs through the scheduler's own evaluation code -- ``tracker.alerts.data.make_view``
builds the view, ``tracker.alerts.evaluate.step`` advances the edge-triggered state machine
(``for``, ``rearm``, ``new_low`` baselines, ``available_again``) -- at every observation time
in the range, in order, from an armed state. Resolutions are listed whether or not the rule
sends a message for them, and the time spent firing counts only spans with a price in effect. Only the source of the observation differs: the
offers in effect at that time (the analysis' "price at t" rule, ``db.rollups.hold_end``: a
price holds from its first observation until the provider's next collection attempt, at most
one collection interval after its last) instead of the current ones. A provider with a price in
effect is *fresh*; one whose prices stopped holding without a later collection saying they
were gone (a failed or missing collection), and last seen within the staleness limit, is
*held*: its last prices are in the combined view only, so, as in the scheduler, a gap can
neither fire nor resolve a rule.

Observation times are every successful collection of the rule's providers in the range
(``scrape_run``), every snapshot of the imported archive series its offers belong to
(``db.series``), and every interval's first and last observation and its next attempt. So a
``for = N`` rule counts observations, collected or imported, not only the times a price
changed: three snapshots in a row at the same price below the threshold are three.

Nothing is written: no state, event or outbox row, nothing is delivered. Cost is bounded by
``MAX_EVALUATIONS``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db import reads, rollups, spans
from db.columns import AlertStateRow
from db.engine import engine_reader
from db.reader import Reader
from db.reads import provider_intervals, via_of
from db.spans import epoch, utcnow
from tracker.alerts.data import (
    STALE_AFTER_INTERVALS,
    Observation,
    View,
    gpu_specs,
    make_view,
    metric_value,
    rule_intervals,
    value_at,
)
from tracker.alerts.evaluate import step
from tracker.alerts.rules import Rule
from tracker.config.settings import Settings
from tracker.errors import ConfigError

#: Most evaluations one backtest may run (a year of 15-minute collections is 35,040).
MAX_EVALUATIONS = 100_000


@dataclass(frozen=True, slots=True)
class BacktestEvent:
    time: datetime
    event: str  # fired | resolved
    value: float | None
    threshold: float | None
    provider: str | None
    region: str | None
    kind: str | None
    offers: int

    def as_dict(self) -> dict[str, Any]:
        return {"time": self.time, "event": self.event, "value": self.value, "threshold": self.threshold,
                "provider": self.provider, "region": self.region, "kind": self.kind, "offers": self.offers}


@dataclass
class Backtest:
    rule: str
    description: str
    since: datetime
    until: datetime
    evaluations: int = 0
    events: list[BacktestEvent] = field(default_factory=list)
    #: seconds the rule spent firing in the range while a price was in effect (a span without data,
    #: and anything after the last observation, is not known to be firing)
    firing_s: float = 0.0
    firing_at_end: bool = False

    @property
    def fired(self) -> int:
        return sum(1 for e in self.events if e.event == "fired")

    @property
    def resolved(self) -> int:
        return sum(1 for e in self.events if e.event == "resolved")

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "description": self.description, "since": self.since, "until": self.until,
                "evaluations": self.evaluations, "fired": self.fired, "resolved": self.resolved,
                "firing_s": round(self.firing_s, 1), "firing_at_end": self.firing_at_end,
                "events": [e.as_dict() for e in self.events]}


_COLUMNS = ["offer_id", "provider", "gpu", "gpu_count", "kind", "region", "sku", "price", "price_per_hour",
            "available", "first_seen_s", "last_seen_s", "ends_at", "provider_id", "extra"]


def load_intervals(reader: Reader, rule: Rule, *, since: datetime | None = None,
                   until: datetime | None = None) -> pd.DataFrame:
    """The stored USD intervals the rule watches that may be in effect in ``[since, until]``, with
    ``first_seen``/``last_seen``/``end`` (UTC timestamps; ``end`` exclusive, ``db.spans.hold_end``)."""
    rows = rule_intervals(reader, rule, "i.offer_id, lp.name, lg.name, o.gpu_count, lk.name, o.region, o.sku, "
                          "i.price_per_gpu_hour, i.price_per_hour, i.available, i.first_seen, i.last_seen, i.ends_at, "
                          "i.provider_id, o.extra", until=until,
                          since_s=epoch(since) - 7 * 86_400 if since is not None else None)  # holds: at most a week
    df = pd.DataFrame(rows, columns=_COLUMNS)
    df["ends_at"] = df["ends_at"].astype(float)
    df["price"] = df["price"].astype(float)
    intervals = provider_intervals(reader)
    interval_s = df["provider_id"].map(lambda p: intervals.get(p, rollups.DEFAULT_INTERVAL_S)).to_numpy(dtype=np.int64)
    end = spans.hold_ends(df["last_seen_s"].tolist(), df["ends_at"].tolist(), interval_s.tolist())
    df["first_seen"] = pd.to_datetime(df["first_seen_s"].astype(np.int64), unit="s", utc=True)
    df["last_seen"] = pd.to_datetime(df["last_seen_s"].astype(np.int64), unit="s", utc=True)
    df["end"] = pd.to_datetime(end, unit="s", utc=True)
    df["interval_s"] = interval_s
    df["available"] = df["available"].map(lambda v: None if v is None or pd.isna(v) else bool(v)).astype(object)
    df["via"] = [via_of(e) for e in df["extra"]]  # an aggregator's offer counts as the cloud it names (index rules)
    if since is not None:
        df = df[df["end"] > pd.Timestamp(since)]
    return df.reset_index(drop=True)


def _rows_at(live: pd.DataFrame) -> list[dict[str, Any]]:
    """Offers in effect as the rows ``make_view`` reads (the shape of ``latest_prices``)."""
    return [
        {"provider": r.provider, "gpu": r.gpu, "gpu_count": r.gpu_count, "kind": r.kind, "region": r.region,
         "sku": r.sku, "price_per_gpu_hour": float(r.price), "price_per_hour": float(r.price_per_hour),
         "currency": "USD", "available": None if r.available is None else bool(r.available), "via": r.via}
        for r in live.itertuples(index=False)
    ]


def _in_effect(intervals: pd.DataFrame, t: datetime) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(fresh, held) intervals at ``t``, one per offer: in effect; or, for a provider with nothing
    in effect, its last prices when no successful collection since said they were gone (the next
    attempt failed or has not happened), within the staleness limit."""
    ts = pd.Timestamp(t)
    started = intervals[intervals["first_seen"] <= ts]
    live = started[started["end"] > ts].sort_values("first_seen").drop_duplicates("offer_id", keep="last")
    next_attempt = pd.to_datetime(started["ends_at"].fillna(4e9).clip(upper=4e9), unit="s", utc=True)
    limit = started["last_seen"] + pd.to_timedelta(STALE_AFTER_INTERVALS * started["interval_s"], unit="s")
    held = started[(started["end"] <= ts) & ((next_attempt > ts) | started["ended_by_failure"]) & (limit >= ts)
                   & ~started["provider"].isin(set(live["provider"]))]
    held = held.sort_values("first_seen").drop_duplicates("offer_id", keep="last")
    return live, held


def observation_times(reader: Reader, rule: Rule, intervals: pd.DataFrame, since: datetime,
                      until: datetime) -> list[datetime]:
    """Every time in ``[since, until]`` at which something about the rule's offers was observed."""
    lo, hi = pd.Timestamp(since), pd.Timestamp(until)
    times: set[pd.Timestamp] = set()
    if not intervals.empty:
        times.update(intervals["first_seen"])
        times.update(intervals["last_seen"])
        ends = pd.to_datetime(intervals["ends_at"].dropna().astype(np.int64), unit="s", utc=True)
        times.update(ends)
        times.update(pd.Timestamp(t, unit="s", tz="UTC") for t in reads.snapshot_times(
            reader, intervals["offer_id"].astype(int).tolist(), epoch(since), epoch(until)))
    # live collections (an import's own run row carries a note and the time of the import)
    times.update(pd.Timestamp(t) for t in reads.ok_collection_times(reader, since, until, rule.providers))
    return [t.to_pydatetime() for t in sorted(t for t in times if lo <= t <= hi)]


def backtest(engine: Engine, settings: Settings, rule: Rule, *, since: datetime, until: datetime | None = None,
             specs: Mapping[str, Any] | None = None) -> Backtest:
    """Run ``rule`` over ``[since, until]`` (see the module docstring). Read-only."""
    until = until or utcnow()
    if rule.min_available is not None:
        raise ConfigError(f"alerts backtest: rule {rule.name!r} asks for GPUs free now (min_available), and only the "
                          "newest count of free GPUs is stored: it can be evaluated, not backtested")
    if since >= until:
        raise ConfigError(f"alerts backtest: the range starts ({since:%Y-%m-%d %H:%M}) after it ends ({until:%Y-%m-%d %H:%M})")
    specs = specs if specs is not None else (gpu_specs(settings) if rule.metric != "price" else {})
    result = Backtest(rule.name, rule.describe(), since, until)
    with engine_reader(engine) as reader:
        intervals = load_intervals(reader, rule, since=since, until=until)
        failed = {(p, epoch(at)) for p, at in reads.failed_runs(reader, until)}
        intervals["ended_by_failure"] = [
            (p, int(e)) in failed if e == e else False
            for p, e in zip(intervals["provider"], intervals["ends_at"], strict=True)
        ]
        times = observation_times(reader, rule, intervals, since, until)
        if len(times) > MAX_EVALUATIONS:
            raise ConfigError(f"alerts backtest: {len(times):,} observation times is more than {MAX_EVALUATIONS:,}; "
                              "use a shorter range (--since/--until)")
        st = AlertStateRow(rule.name, rule.fingerprint())
        low = history_low_before(reader, rule, settings, since, specs) if rule.condition == "new_low" else None
        # A backtest lists resolutions whether or not the rule sends a message for them.
        watched = rule if rule.condition == "new_low" else dataclasses.replace(rule, resolved=True)
        for i, t in enumerate(times):
            live, held = _in_effect(intervals, t)
            rows, held_rows = _rows_at(live), _rows_at(held)
            view: View = make_view(rule, rows, specs)
            combined: View = make_view(rule, rows + held_rows, specs) if held_rows else view
            reference = None
            if rule.condition == "drop_pct" and rule.window_s:
                reference = value_at(reader, rule, settings, t - timedelta(seconds=rule.window_s), specs)
            status = {**{r["provider"]: "held" for r in held_rows}, **{r["provider"]: "fresh" for r in rows}}
            obs = Observation(t, view, combined, status, t.isoformat(), reference,
                              low if st.all_time_low is None else None)
            before = st.all_time_low
            st, events = step(watched, st, obs)
            result.evaluations += 1
            best = view.best or {}
            for kind in events:
                result.events.append(BacktestEvent(
                    t, kind, view.value, before if rule.condition == "new_low" else rule.threshold,
                    best.get("provider"), best.get("region"), best.get("kind"), len(view.rows)))
            if st.state == "firing" and rule.condition != "new_low" and i + 1 < len(times) and not live.empty:
                # firing until the next observation, as far as a price was in effect: a span without
                # data (failed or missing collections) is not time spent firing
                covered = min(pd.Timestamp(times[i + 1]), live["end"].max())
                result.firing_s += max(0.0, (covered - pd.Timestamp(t)).total_seconds())
        # known to be firing until the last observation; after it the history says nothing
        result.firing_at_end = bool(times) and st.state == "firing" and rule.condition != "new_low"
    return result


def history_low_before(reader: Reader, rule: Rule, settings: Settings, since: datetime,
                       specs: Mapping[str, Any]) -> float | None:
    """The ``new_low`` baseline of a backtest: the lowest value stored before the range (the live
    rule's baseline is what was stored before the latest scrape; here "now" is the range's start)."""
    if rule.aggregate != "min":
        return None
    earlier = load_intervals(reader, rule, until=since - timedelta(seconds=1))
    earlier = earlier[earlier["first_seen"] < pd.Timestamp(since)]
    if earlier.empty:
        return None
    values = [m for r in earlier.itertuples(index=False)
              if (m := metric_value(rule, r.gpu, float(r.price), specs)) is not None]
    return min(values) if values else None


def rules_by_name(rules: Sequence[Rule], name: str) -> Rule:
    for r in rules:
        if r.name == name:
            return r
    known = ", ".join(r.name for r in rules) or "none"
    raise ConfigError(f"alerts backtest: no rule named {name!r} (rules: {known}); or give one inline with --gpu and a condition")


def inline_table(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """A rule table from the same options as ``alerts add`` (``None`` left out); ``rearm`` may be a percentage."""
    table = {"name": name, **{k: v for k, v in options.items() if v not in (None, False, [], ())}}
    gpu = table.get("gpu")
    if isinstance(gpu, (list, tuple)) and len(gpu) == 1:
        table["gpu"] = gpu[0]
    rearm = table.get("rearm")
    if isinstance(rearm, str):
        try:
            table["rearm"] = float(rearm)
        except ValueError:
            pass
    return table


def resolve_rule(settings: Settings, reader: Reader, name: str | None, options: Mapping[str, Any]) -> Rule:
    """The rule to backtest: a stored or configured one by ``name``, or one given inline (``options``
    with ``gpu`` and a condition, as for ``alerts add``)."""
    from tracker.alerts.rules import parse_rule
    from tracker.alerts.store import load_rules

    inline = {k: v for k, v in options.items() if v not in (None, False, [], ())}
    if inline:
        return parse_rule(inline_table(name or "backtest", options), where="alerts backtest", source="added",
                          catalog_file=settings.catalog_file)
    if not name:
        raise ConfigError("alerts backtest: name a rule, or give one inline with --gpu and a condition (--below 2.0 ...)")
    return rules_by_name(load_rules(settings, reader), name)

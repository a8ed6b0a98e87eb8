"""The market rule: how the figures of a bucket are taken across providers, and where they change.

A bucket's market is taken from each provider's value in it (its lowest price), each provider
once, so a marketplace listing 500 hosts does not outweigh a cloud listing one: ``min`` is the
cheapest provider, ``median`` the typical provider, ``p25`` in between (linear interpolation,
as pandas and numpy compute it, so with one provider all three are its price); ``providers``
counts the providers with a value, ``offers`` the distinct offers behind them. An aggregator's
series of a cloud we collect directly is that cloud's (``aggregators.market_runs``), so no cloud
counts twice.

The market over a range is computed over the boundaries of the providers' runs (``sweep``): it
can change only where some provider's run starts or ends, so a year of hourly buckets costs what
its runs cost, not hours times providers.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence

from db.index_rollup import median_of
from db.spans import Run
from tracker.analysis.aggregators import market_runs

#: The market of a run of buckets: first and last bucket index, (min, p25, median), providers, offers.
MarketRun = tuple[int, int, tuple[float, float, float], int, int]
NO_MARKET = (math.nan, math.nan, math.nan)


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile ``q`` of ascending ``ordered`` (as pandas and numpy compute it)."""
    pos = q * (len(ordered) - 1)
    below = math.floor(pos)
    frac = pos - below
    a = ordered[below]
    b = ordered[min(below + 1, len(ordered) - 1)]
    return a if frac == 0 else a + (b - a) * frac


def sweep(runs: Mapping[str, Sequence[Run]]) -> list[MarketRun]:
    """The market of one GPU as runs of buckets, from each series key's runs (by key name; one
    key's runs never overlap): figures are computed once per boundary where some market
    provider's run starts or ends, and a bucket no run covers has no market run."""
    events: dict[int, list[tuple[float, int, int]]] = {}
    for provider_runs in market_runs(runs).values():
        for first, last, value, offers in provider_runs:
            events.setdefault(first, []).append((value, offers, 1))
            events.setdefault(last + 1, []).append((value, offers, -1))
    values: list[float] = []
    live = offers_now = 0
    out: list[MarketRun] = []
    at = sorted(events)
    for k, pos in enumerate(at):
        for value, offers, sign in events[pos]:
            live += sign
            offers_now += sign * offers
            if math.isnan(value):
                continue
            if sign > 0:
                bisect.insort(values, value)
            else:
                del values[bisect.bisect_left(values, value)]
        if live and k + 1 < len(at):
            figures = (values[0], quantile(values, 0.25), median_of(values)) if values else NO_MARKET
            out.append((pos, at[k + 1] - 1, figures, len(values), offers_now))
    return out

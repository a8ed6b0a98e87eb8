"""Cutting a series' observations into price intervals: the one rule an import applies,
whatever order its snapshots arrive in.

Given the series' snapshot times over a range and, per offer, what each snapshot saw of it, an
interval is a maximal run of consecutive snapshot times at which the offer was seen at one
price (same currency, availability and GPU; the run keeps its first observation's price), where
no two consecutive times are more than ``max_gap`` apart. An offer missing from a snapshot, a
different price, or a gap ends the run; the interval's next attempt (``ends_at``) is the
series' next snapshot time. A source that states where each of its intervals began (an
export's ``price_since``) gives every observation that start (``Seen.since``): observations
of different stated starts never share a run, since the source saw the interval begin. This is what the store's ``store_observation`` builds one collection
at a time; here it is a function of the set of observations alone, so importing them in one
file or many, in any order, gives the same intervals.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from db.labels import PRICE_EPSILON


@dataclass(frozen=True, slots=True)
class Seen:
    """What one snapshot stored of one offer: an interval's columns besides its times."""

    gpu_id: int | None
    kind_id: int
    currency_id: int
    price_per_hour: float
    price_per_gpu_hour: float
    available: bool | None
    #: where the source says the interval of this observation began (``None``: it does not say)
    since: int | None = None

    def same_price(self, other: Seen) -> bool:
        """Whether ``other`` is this price (same currency, availability and GPU)."""
        return (abs(self.price_per_hour - other.price_per_hour) < PRICE_EPSILON and self.currency_id == other.currency_id
                and self.available == other.available and self.gpu_id == other.gpu_id)

    def continues(self, other: Seen) -> bool:
        """Whether ``other``, seen at the next snapshot, extends an interval of this price."""
        return self.same_price(other) and self.since == other.since


@dataclass(frozen=True, slots=True)
class Run:
    offer_id: int
    seen: Seen
    first: int
    last: int
    observations: int
    #: how it began: ``new`` (the offer's first observation), ``changed`` (the previous snapshot
    #: saw it at another price) or ``returned`` (seen before, but not by the previous snapshot,
    #: or by it at this price where the source says a new interval began)
    start: str


def cut(times: Sequence[int], seen: Mapping[int, Mapping[int, Seen]], max_gap_s: float | None,
        earlier: Collection[int] = ()) -> list[Run]:
    """The intervals of ``seen`` (offer id -> snapshot time -> what it saw) over ``times`` (the
    series' snapshot times, oldest first, every one in the range). ``earlier``: offers observed
    before the range (a run of theirs never starts as ``new``)."""
    runs: list[Run] = []
    for offer_id in sorted(seen):
        by_time = seen[offer_id]
        current: Run | None = None
        observed_before = offer_id in earlier
        for i, t in enumerate(times):
            s = by_time.get(t)
            if s is None:
                if current is not None:
                    runs.append(current)
                    current = None
                continue
            follows = i > 0 and (max_gap_s is None or t - times[i - 1] <= max_gap_s) and times[i - 1] in by_time
            if current is not None and follows and current.seen.continues(s):
                current = Run(offer_id, current.seen, current.first, t, current.observations + 1, current.start)
                continue
            if current is not None:
                runs.append(current)
            changed = follows and current is not None and not current.seen.same_price(s)
            start = "changed" if changed else "returned" if observed_before else "new"
            current = Run(offer_id, s, t, t, 1, start)
            observed_before = True
        if current is not None:
            runs.append(current)
    return runs

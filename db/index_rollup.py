"""The index roll-up (``index_day``): per (gpu, day, provider, kind, via) the median per-GPU-hour
price of the offers observed that day and their number, which is what a rental index is made of.

Why a table of its own beside ``rollup_day``: the index leaves out what a price history keeps
(offers renting a fraction of a GPU, ``gpu_count`` not a whole number: a vGPU slice's per-GPU
price is not a GPU's), and keeps an aggregator's offers per cloud they name (``via``, ``""`` for
the provider's own), so the domain can give each cloud one vote by the aggregator rule when it
reads them (``tracker.analysis.aggregators``). What the roll-ups leave out stays out here too
(non-USD prices, unmapped GPUs such as MIG slices, quarantined observations, which never become
intervals). A row is small (no prices: a year of the synthetic store's days is a few MB): a seller
made of one row votes with its median; one made of several rows (an aggregator's offers for a
cloud we collect directly, several kinds asked at once) takes the median of their union, which the
reader recomputes from the raw intervals of those rows (``groups``, the raw side's grouping).

Which days an interval counts in is the bucket rule of ``db.spans`` (observed during the day).
The store refreshes a provider's rows with its other roll-ups (``db.rollups``), from the same
intervals and on the same arrays (its day figures over whole-GPU offers keyed by cloud; held equal
to ``groups`` by the tests), so a collection's work grows with the day's data, not with the history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from db import reads
from db.reader import Reader
from db.spans import origin, span

#: One group's figures: (sorted prices, distinct offers).
Group = tuple[list[float], int]
#: A group's key: (gpu id, bucket start, kind id, via).
Key = tuple[int, int, int, str]
#: An interval as ``groups`` reads it: (offer, gpu, kind, per-GPU price, first_seen, last_seen,
#: ends_at or None, the same offer's next first_seen or None).
Row = tuple[int, int, int, float, int, int, int | None, int | None]


class OfferFacts(NamedTuple):
    """What the index needs to know of the offers at hand beyond their intervals: which rent a
    fraction of a GPU (left out) and which an aggregator lists for another cloud (``via``, from
    the series keys of ``db.reads``). Read per provider of the given offers (fractional ones
    through the offer key, one statement each), so the cost never follows the length of the history."""

    fractional: set[int]
    via: dict[int, str]

    @classmethod
    def read(cls, reader: Reader, provider_names: Mapping[int, str], rows: Iterable[tuple[int, int]]) -> OfferFacts:
        """Facts of the offers among ``rows`` (``(offer id, provider id)`` pairs)."""
        pairs = {(int(o), int(p)) for o, p in rows}
        keys = reads.offer_keys(reader, provider_names, pairs)
        return cls(reads.fractional_offers(reader, pairs),
                   {o: cloud for o, k in keys.items() if (cloud := reads.split(provider_names[k])[1])})


def fractional(gpu_count: float) -> bool:
    """An offer renting a fraction of a GPU (a count that is not a whole number,
    ``db.reads.FRACTIONAL_OFFERS`` in SQL): its per-GPU price is not a GPU's, so the index leaves it out."""
    return gpu_count != int(gpu_count)


def median_of(ordered: Sequence[float]) -> float:
    """Median of ascending ``ordered`` (the mean of the two middle values of an even count)."""
    n = len(ordered)
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2


def groups(rows: Iterable[Row], facts: OfferFacts, interval_s: int, step: int, b_lo: int, b_hi: int
           ) -> dict[Key, Group]:
    """One provider's prices per (gpu, bucket, kind, via) over buckets ``b_lo..b_hi`` (indices of
    ``step``), each interval counting in a bucket once (``db.spans.span``), fractional-GPU offers
    left out; prices sorted, with the number of distinct offers."""
    o = origin(step)
    prices: dict[Key, list[float]] = {}
    offers: dict[Key, set[int]] = {}
    for offer, gpu, kind, price, first_seen, last_seen, ends_at, next_seen in rows:
        if offer in facts.fractional:
            continue
        first, last = span(first_seen, last_seen, ends_at, interval_s, next_seen, step)
        via = facts.via.get(offer, "")
        for b in range(max(first, b_lo), min(last, b_hi) + 1):
            key = (gpu, o + b * step, kind, via)
            prices.setdefault(key, []).append(price)
            offers.setdefault(key, set()).add(offer)
    return {k: (sorted(v), len(offers[k])) for k, v in prices.items()}


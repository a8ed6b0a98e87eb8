"""Partial collections: a provider that answered with only part of its market is not read as
having delisted the rest.

A collection is **partial** when

* its scraper says so: ``parse`` returned ``scrapers.base.PartialOffers`` (a search that hit a
  known cap, a region or a page that did not answer), with its reason: a cap is the scraper's to
  know (it knows what it asked for and how many came back), so it is declared there; or
* it is far smaller than the provider's recent collections (the size rule): fewer than
  ``SMALL_FRACTION`` (half) of the median offer count of the provider's last ``RECENT``
  (five) collections, that median being at least ``MIN_MEDIAN`` (20) offers (a small price list
  may halve for real). The collections compared are the complete ones and those this rule
  marked partial, not those their scraper marked partial, so a shrink that three collections
  in a row agree on moves the median: the fourth is complete, and the market did shrink.

What a partial collection does (``tracker.pipeline.collect``):

* the offers it saw are observed like any others (new intervals, extended ones, changed prices);
* the offers it did not see are **unknown**, neither delisted nor unchanged: their intervals end
  at the attempt exactly as a failed collection ends them (DESIGN: a gap stays a gap; their
  prices are not taken to hold past it), and the next observation opens a new one (counted as
  returned, never as new);
* the provider's current list stays the last complete one, brought up to date by what the
  partial collections since then saw (``db.reads.current_condition``): an unseen offer is still
  on sale as far as anyone knows, at its last observed price and date;
* its ``scrape_run`` row has status ``partial``, the rule in ``error_class`` (``PartialOffers``
  or ``SmallCollection``) and the reason, with how many offers went unseen, in ``error_message``;
* the provider's ``last_success_at`` stays at its last complete collection (the first
  collection counts when there is none), and its ``last_status`` is ``partial``, so alerts
  hold it like a failing provider (``tracker.alerts.data``: *held*): an unseen offer can
  neither fire nor resolve a rule, and a partial list cannot fire one either.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from db import reads
from db.reader import Reader
from scrapers.base import PartialOffers

#: How many of the provider's latest collections the size rule takes the median of.
RECENT: Final = 5
#: A collection under this fraction of that median is partial ...
SMALL_FRACTION: Final = 0.5
#: ... when the median is at least this many offers.
MIN_MEDIAN: Final = 20
#: ``error_class`` of a partial run, by rule.
SAID_PARTIAL: Final = "PartialOffers"
SMALL: Final = "SmallCollection"

class Partial(NamedTuple):
    """Why a collection is partial: the rule (``SAID_PARTIAL`` or ``SMALL``) and a one-line reason."""

    rule: str
    reason: str


def judge(reader: Reader, provider: str, offers: Sequence[Any]) -> Partial | None:
    """Whether this collection of ``provider`` (its parsed ``offers``) is partial, and why."""
    if isinstance(offers, PartialOffers):
        return Partial(SAID_PARTIAL, f"{provider} answered part of its market: {offers.reason}")
    return small(provider, len(offers), reads.recent_sizes(reader, provider, SMALL, RECENT))


def small(provider: str, count: int, recent: Sequence[int]) -> Partial | None:
    """The size rule: ``count`` offers against the offer counts of the ``recent`` collections."""
    if not recent:
        return None
    median = statistics.median(recent)
    if median < MIN_MEDIAN or count >= SMALL_FRACTION * median:
        return None
    return Partial(SMALL, f"{provider} listed {count} offers, under {SMALL_FRACTION:.0%} of the median "
                          f"({median:g}) of its last {len(recent)} collections")


def unseen(reader: Reader, provider_id: int, since: int, t: int) -> int:
    """How many offers of the provider's current list (seen from ``since``, its last complete
    collection, on) a partial collection at ``t`` did not see."""
    return reads.unseen_offers(reader, provider_id, since, t)

"""How available a GPU was, per provider and region: the share of observed time at least one
matching offer was listed as available, the longest stretch none was, and when one last was.

The rules, over the stored intervals (``db.reads``):

* an interval counts from its first observation until its provider's next collection attempt, at
  most one collection interval after its last observation (``db.spans.hold_end``, the rule every
  "price at t" read uses), cut to the range asked;
* *observed* time is when some offer of the group had a stated availability; an interval whose
  provider did not say (``available`` NULL) is unknown and counts neither way, so a provider that
  states no stock shows ``unknown``, never "unavailable"; a failed or missing collection is a gap
  (not observed), never a stretch of unavailability;
* *available* time is when at least one offer of the group was listed as available; the share is
  available / observed; an unavailable stretch is observed time with none available, and a gap in
  the observations ends it;
* *last available* is the last observation inside the range that saw an offer available, or the
  end of the range when an interval seen available spans it (available then).

Cost: it reads the raw intervals of the GPU over the range, so a question spans at most
``MAX_RANGE`` (a year; an earlier year is another question), and starts no earlier than the
raw-retention horizon (``rollups prune``): before it only roll-ups are left, which keep no
availability.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from db.reader import Reader
from db.reads import AVAILABILITY_COLUMNS, Labels, named_intervals, provider_intervals, raw_horizon
from db.spans import DEFAULT_INTERVAL_S, epoch, from_epoch, hold_end
from tracker.errors import ConfigError

Span = tuple[int, int]
#: The longest range one question reads (raw intervals): a year and a day.
MAX_RANGE = timedelta(days=366)


@dataclass(frozen=True)
class Availability:
    """One provider and region over a range (times in epoch seconds inside, UTC datetimes out)."""

    provider: str
    region: str
    offers: int
    observed_s: int
    available_s: int
    longest_unavailable_s: int
    longest_unavailable_from: int | None
    last_available: int | None

    @property
    def share(self) -> float | None:
        """Available / observed time; ``None`` when nothing about its stock was observed (unknown)."""
        return self.available_s / self.observed_s if self.observed_s else None

    def row(self) -> dict[str, Any]:
        """The row every surface shows (CLI, API, MCP, the GPU page): hours and a percentage."""
        share = self.share
        return {
            "provider": self.provider,
            "region": self.region,
            "offers": self.offers,
            "available_pct": None if share is None else round(100 * share, 2),
            "observed_h": round(self.observed_s / 3600, 2),
            "available_h": round(self.available_s / 3600, 2),
            "longest_unavailable_h": None if share is None else round(self.longest_unavailable_s / 3600, 2),
            "longest_unavailable_from": from_epoch(self.longest_unavailable_from) if self.longest_unavailable_from is not None else None,
            "last_available": from_epoch(self.last_available) if self.last_available is not None else None,
        }


def union(spans: Iterable[Span]) -> list[Span]:
    """The spans merged: sorted, no two overlapping or touching."""
    out: list[Span] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def minus(spans: Sequence[Span], cut: Sequence[Span]) -> list[Span]:
    """``spans`` without ``cut`` (both merged, as ``union`` returns them), merged too: the pieces of
    one span are apart by a cut, those of two spans by the gap between them."""
    out: list[Span] = []
    for a, b in spans:
        start = a
        for c, d in cut:
            if d <= start or c >= b:
                continue
            if c > start:
                out.append((start, c))
            start = max(start, d)
        if start < b:
            out.append((start, b))
    return out


def summarise(provider: str, region: str, rows: Sequence[tuple[Any, ...]], since: int, until: int,
              interval_s: int) -> Availability:
    """The figures of one group from its ``db.reads.AVAILABILITY_COLUMNS`` rows."""
    known: list[Span] = []
    up: list[Span] = []
    last: int | None = None
    for _pid, _region, _offer, available, first, last_seen, ends_at in rows:
        if available is None:
            continue
        span = (max(int(first), since), min(hold_end(int(last_seen), ends_at, interval_s), until))
        known.append(span)
        if available:
            up.append(span)
            seen = min(int(last_seen), until)
            if seen >= max(int(first), since) and (last is None or seen > last):
                last = seen
    observed, up = union(known), union(up)
    down_from, down_to = max(minus(observed, up), key=lambda s: (s[1] - s[0], -s[0]), default=(None, None))
    return Availability(provider, region, len({r[2] for r in rows}), sum(b - a for a, b in observed),
                        sum(b - a for a, b in up), 0 if down_from is None else down_to - down_from, down_from, last)


def availability(reader: Reader, gpus: Sequence[str], since: datetime, until: datetime, *,
                 providers: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
                 regions: Sequence[str] | None = None) -> list[Availability]:
    """Per (provider, region) with an interval of ``gpus`` (canonical ids) in ``[since, until]``,
    sorted by provider then region. A range longer than ``MAX_RANGE`` or ending before it starts
    is a ``ConfigError``; before the raw-retention horizon only roll-ups are left, so it starts there."""
    if since > until:
        raise ConfigError(f"availability: the range starts ({since:%Y-%m-%d %H:%M}) after it ends ({until:%Y-%m-%d %H:%M})")
    if until - since > MAX_RANGE:
        raise ConfigError(f"availability: {(until - since).days} days is more than one question reads ({MAX_RANGE.days}); "
                          "ask about a year at a time (--since and --until)")
    end = epoch(until)
    start = min(max(epoch(since), raw_horizon(reader)), end)
    labels = Labels(reader)
    gpu_ids = labels.lookup("gpu", gpus)
    if not gpu_ids:
        return []
    rows = named_intervals(reader, AVAILABILITY_COLUMNS, gpu_ids,
                           None if providers is None else labels.lookup("provider", providers),
                           None if kinds is None else labels.lookup("kind", kinds), None, regions=regions,
                           since=start, until=end)
    groups: dict[tuple[int, str], list[tuple[Any, ...]]] = {}
    for r in rows:
        groups.setdefault((int(r[0]), r[1] or ""), []).append(r)
    names = labels.names("provider")
    every = provider_intervals(reader)
    out = [summarise(names.get(pid, str(pid)), region, group, start, end, every.get(pid, DEFAULT_INTERVAL_S))
           for (pid, region), group in groups.items()]
    return sorted(out, key=lambda a: (a.provider, a.region))

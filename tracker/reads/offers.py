"""Narrowing and grouping current offers the way ``dstack offer`` and ``sky show-gpus`` users ask:
a GPU count (``--gpus 8``, ``2..8``, ``H100:8``), a minimum GPU memory, a maximum price, available
only, a maximum data age; and one row per GPU (or GPU and provider) with its price range.

Pure functions over the price rows of ``db.reads`` (plain dicts): no database, no pandas, so the
CLI pays nothing to import them. The rows are already the answer to "now" (or ``--at``); these
filters only choose among them.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracker.errors import ConfigError

_COUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)?\s*(\.\.)?\s*(\d+(?:\.\d+)?)?\s*$")
#: What ``--group-by`` may name, in the order a group's row shows them.
GROUP_KEYS = ("gpu", "provider", "kind")


@dataclass(frozen=True)
class GpuCount:
    """How many GPUs an offer must have: exactly ``low`` (``8``), or from ``low`` to ``high``
    (``2..8``; ``4..`` has no top, ``..4`` starts at 1)."""

    low: float
    high: float | None

    @classmethod
    def parse(cls, text: str, option: str = "--gpus") -> GpuCount:
        m = _COUNT.match(text)
        if not m or not (m.group(1) or m.group(3)) or (m.group(3) and not m.group(2) and m.group(1)):
            raise ConfigError(f"{option}: {text!r} is not a GPU count like 8, 2..8 or 4..")
        low = float(m.group(1)) if m.group(1) else 1.0
        high = float(m.group(3)) if m.group(3) else (None if m.group(2) else low)
        if low <= 0 or (high is not None and high < low):
            raise ConfigError(f"{option}: {text!r} is not a GPU count like 8, 2..8 or 4.. (at least 1, low to high)")
        return cls(low, high)

    def matches(self, count: float | None) -> bool:
        return count is not None and count >= self.low and (self.high is None or count <= self.high)


def split_gpu_spec(text: str | None) -> tuple[str | None, GpuCount | None]:
    """``"H100:8"`` -> ``("H100", 8 GPUs)`` (the spelling of ``dstack`` and ``sky``); ``"H100"`` -> ``("H100", None)``."""
    if not text or ":" not in text:
        return text, None
    name, count = text.split(":", 1)
    return (name.strip() or None), GpuCount.parse(count, "--gpu NAME:COUNT")


@dataclass(frozen=True)
class OfferFilter:
    """The narrowing options of ``prices``; ``None``/``False`` means "any"."""

    gpus: GpuCount | None = None
    #: per GPU, in GB: the offer's own figure when the provider states it, else the catalog's
    min_gpu_memory_gb: float | None = None
    #: USD per GPU-hour
    max_price: float | None = None
    #: only offers the provider says can be rented now (``available`` true; unknown is left out)
    available_only: bool = False
    max_age_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("min_gpu_memory_gb", "max_price", "max_age_s"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value < 0):
                raise ConfigError(f"{name.replace('_', '-')}: {value} is not a number of at least 0")

    def apply(self, rows: Iterable[Mapping[str, Any]],
              memory_of: Callable[[Mapping[str, Any]], float | None]) -> list[dict[str, Any]]:
        """The rows that pass every filter, in their order; ``memory_of(row)`` is a row's GB per GPU."""
        out = []
        for r in rows:
            if self.gpus is not None and not self.gpus.matches(r.get("gpu_count")):
                continue
            if self.min_gpu_memory_gb is not None and (memory_of(r) or 0.0) < self.min_gpu_memory_gb:
                continue
            price = r.get("price_per_gpu_hour")
            if self.max_price is not None and (price is None or price > self.max_price):
                continue
            if self.available_only and r.get("available") is not True:
                continue
            age = r.get("age_s")
            if self.max_age_s is not None and (age is None or age > self.max_age_s):
                continue
            out.append(dict(r))
        return out


def memory_per_gpu(catalog_vram: Mapping[str, float | None]) -> Callable[[Mapping[str, Any]], float | None]:
    """A row's GB per GPU: what the provider states, else the catalog's figure for its GPU."""

    def memory(row: Mapping[str, Any]) -> float | None:
        return row.get("gpu_memory_gb") or catalog_vram.get(row.get("gpu") or "")

    return memory


def parse_group_by(text: str | None) -> tuple[str, ...] | None:
    """``"gpu,provider"`` -> ``("gpu", "provider")``; an unknown key is an error naming the known ones."""
    if not text:
        return None
    keys = [k.strip().lower() for k in text.split(",") if k.strip()]
    unknown = [k for k in keys if k not in GROUP_KEYS]
    if unknown or not keys:
        raise ConfigError(f"--group-by: {', '.join(unknown) or repr(text)} is not one of {', '.join(GROUP_KEYS)} "
                          "(comma-separated, e.g. gpu,provider)")
    return tuple(k for k in GROUP_KEYS if k in keys)


def group_rows(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """One row per group (``keys``): how many offers and providers, the lowest, median and highest
    USD per GPU-hour, and where the lowest is; cheapest group first. Non-USD rows are left out
    (``db.reads`` converts what it can), and so are offers whose GPU is not mapped when grouping by GPU."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        if "gpu" in keys and not r.get("gpu"):
            continue
        if r.get("currency") == "USD" and r.get("price_per_gpu_hour") is not None:
            groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    out = []
    for key, members in groups.items():
        prices = [float(m["price_per_gpu_hour"]) for m in members]
        best = min(members, key=lambda m: float(m["price_per_gpu_hour"]))
        out.append({**dict(zip(keys, key, strict=True)), "offers": len(members),
                    "providers": len({m.get("provider") for m in members}),
                    "min_price_per_gpu_hour": min(prices), "median_price_per_gpu_hour": statistics.median(prices),
                    "max_price_per_gpu_hour": max(prices), "cheapest_provider": best.get("provider"),
                    "cheapest_region": best.get("region"),
                    "oldest_age_s": max((m.get("age_s") or 0 for m in members), default=None),
                    "sources": ", ".join(sorted({str(m.get("source")) for m in members}))})
    out.sort(key=lambda g: (g["min_price_per_gpu_hour"], *(str(g[k]) for k in keys)))
    return out

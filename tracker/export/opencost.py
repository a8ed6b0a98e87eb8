"""Current prices as an OpenCost/Kubecost CSV pricing file, so a cluster's GPU nodes are priced
from tracked prices.

OpenCost's CSV provider (``pkg/cloud/provider/csvprovider.go``, sample ``configs/pricing_schema.csv``)
reads the columns by position, with this header: ``EndTimestamp, InstanceID, Region, AssetClass,
InstanceIDField, InstanceType, MarketPriceHourly, Version`` (``EndTimestamp`` and ``Version`` are
unused by it). Two kinds of rows are written:

* ``gpu`` (default): one row per GPU model, ``MarketPriceHourly`` its cheapest current USD price
  per GPU-hour among the chosen offers. OpenCost adds it, times the node's GPU count, to a
  matched node's price when the node's ``nvidia.com/gpu_type`` label equals ``InstanceID`` (our
  GPU id, e.g. ``H100-SXM``; label your nodes so). ``Region`` stays empty: OpenCost looks GPU
  rows up by label value alone.
* ``node``: one row per instance type and region, ``MarketPriceHourly`` the cheapest current USD
  price of the whole instance, matched on the node label ``node.kubernetes.io/instance-type``
  (and ``topology.kubernetes.io/region``). These prices include the GPUs: do not also load
  ``gpu`` rows for the same nodes. Pass one provider, as instance-type names are per cloud.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from tracker.cells import safe_row

HEADER = ("EndTimestamp", "InstanceID", "Region", "AssetClass", "InstanceIDField", "InstanceType",
          "MarketPriceHourly", "Version")
ASSET_CLASSES = ("gpu", "node")
GPU_LABEL = "nvidia.com/gpu_type"
NODE_FIELD = "metadata.labels.node.kubernetes.io/instance-type"


def _stamp(dt: datetime) -> str:
    """The sample file's timestamp form (``2019-04-17 23:34:22 UTC``)."""
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def gpu_rows(prices: Iterable[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """Cheapest USD price per GPU-hour per mapped GPU (rows arrive cheapest first)."""
    best: dict[str, Mapping[str, Any]] = {}
    for r in prices:
        if r["gpu"] and r["currency"] == "USD":
            best.setdefault(r["gpu"], r)
    return [(_stamp(r["observed_at"]), gpu, "", "gpu", GPU_LABEL, "", repr(float(r["price_per_gpu_hour"])), "")
            for gpu, r in sorted(best.items())]


def node_rows(prices: Iterable[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """Cheapest USD whole-instance price per (region, instance type)."""
    best: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in sorted((r for r in prices if r["currency"] == "USD"), key=lambda r: r["price_per_hour"]):
        best.setdefault((r["region"] or "", r["sku"]), r)
    return [(_stamp(r["observed_at"]), sku, region, "node", NODE_FIELD, sku, repr(float(r["price_per_hour"])), "")
            for (region, sku), r in sorted(best.items())]


def write(prices: Sequence[Mapping[str, Any]], out: TextIO | Path, asset_class: str = "gpu") -> int:
    """Write the pricing file to a path or an open text stream; returns the number of rows."""
    rows = gpu_rows(prices) if asset_class == "gpu" else node_rows(prices)
    if isinstance(out, Path):
        with out.open("w", newline="", encoding="utf-8") as fh:
            return _write(fh, rows)
    return _write(out, rows)


def _write(fh: TextIO, rows: list[tuple[str, ...]]) -> int:
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(safe_row(r) for r in rows)
    return len(rows)

"""tugot17/gpu-price-tracker ``data/summary/*.jsonl``: one JSON line per snapshot of one GPU type.

Each line has ``timestamp``, ``gpu_type`` (``H100_80GB``), ``socket_type`` (``SXM5`` or
null) and ``by_provider``: ``{provider: {count, min, avg}}`` in USD per GPU-hour. A
provider's ``min`` is its cheapest price across its configurations, spot and on-demand
mixed; it is stored as one offer per (provider, GPU type), sku ``tugot17:<gpu>[_<socket>]``,
kind on-demand, one GPU, with ``extra`` saying what the figure is. The series is the GPU type:
a provider missing from a snapshot no longer listed that GPU. The collector ran about every 30
minutes (cadence 30 min); two snapshots more than an hour apart have a gap between them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

from scrapers.base import ScrapedOffer
from tracker.errors import TrackerError
from tracker.pipeline.imports import TUGOT17, base
from tracker.pipeline.imports.aliases import provider_name

NAME = TUGOT17
DESCRIPTION = "tugot17/gpu-price-tracker data/summary/*.jsonl (aggregated snapshots, ~30 min)"
CADENCE = timedelta(minutes=30)
MAX_GAP = timedelta(hours=1)
SOURCE = "tugot17/gpu-price-tracker"
WHAT = "the provider's cheapest price per GPU-hour across its configurations, spot and on-demand mixed"


def sniff(path: Path, head: str) -> bool:
    return path.suffix == ".jsonl" and '"by_provider"' in head and '"gpu_type"' in head


def gpu_name(gpu_type: str, socket: str | None) -> str:
    """``H100_80GB`` + ``SXM5`` -> ``H100 80GB SXM5`` (what the catalog's normaliser reads)."""
    return " ".join([*gpu_type.replace("_", " ").split(), *([socket] if socket else [])])


def read(path: Path, result: base.ImportResult, progress: base.Progress | None = None) -> Iterator[base.Snapshot]:
    with path.open(encoding="utf-8") as fh:
        lines = base.bounded_lines(fh, path.name, "a tugot17 summary line", progress, csv=False)
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            result.rows += 1
            try:
                doc = json.loads(line)
                if not isinstance(doc, dict):
                    raise ValueError("not a JSON object")
                at = base.when(doc, "timestamp")
                base.check_future(at, "timestamp")
                gpu_type = doc.get("gpu_type")
                if not isinstance(gpu_type, str) or not gpu_type.strip():
                    raise ValueError("gpu_type is missing")
                socket = doc.get("socket_type") if isinstance(doc.get("socket_type"), str) else None
                by_provider = doc.get("by_provider")
                if not isinstance(by_provider, dict):
                    raise ValueError("by_provider is missing")
                label = f"{gpu_type}_{socket}" if socket else gpu_type
                gpu, raw, _mem = base.catalog_gpu([gpu_name(gpu_type, socket)], provider=None)
                offers = []
                for name, stats in sorted(by_provider.items()):
                    price = stats.get("min") if isinstance(stats, dict) else None
                    if not isinstance(price, (int, float)) or isinstance(price, bool):
                        raise ValueError(f"by_provider.{name}.min is not a number")
                    offers.append(ScrapedOffer(
                        provider=provider_name(name), sku=f"tugot17:{label}", gpu_raw=raw, gpu=gpu, gpu_count=1,
                        price_per_hour=float(price), kind="on_demand",
                        extra={"source": SOURCE, "source_provider": name, "figure": WHAT},
                    ))
            except (ValueError, TrackerError) as exc:
                result.bad(base.BadRow(line_no, str(exc).splitlines()[0], path.name))
                continue
            # the series is the GPU type: every provider of the file is part of it, even when absent
            yield from base.collection(f"tugot17:{label}", at, offers, line_no, path.name)

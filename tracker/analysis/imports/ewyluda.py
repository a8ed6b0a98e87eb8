"""ewyluda/gpu-price-index daily observation CSVs (``data/observations/<year>/<date>.csv``).

Columns: ``date, collected_at, source, provider, segment, pricing, gpu_model, sku, region,
geo, gpu_count, usd_per_hour, usd_per_gpu_hour, sample_size``. Each (source, collected_at)
is one collection of that source; ``usd_per_hour`` is the whole instance's price for
``gpu_count`` GPUs. ``source`` goes through the alias table (``vast`` -> ``vastai``);
``pricing`` spot is kind spot, RunPod's *Community Cloud* rows are kind community. The sku is
``<gpu_model>/<sku>`` because one sku can carry several GPU models (Vast.ai's
``median-offer``). The GPU is resolved from ``gpu_model`` and then the sku (a sku naming a MIG slice
is no GPU of the model); what the catalog cannot resolve is kept raw and reported. The collector runs once a day (cadence one day);
collections more than 30 hours apart have a gap between them (a missing day is unknown).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

from scrapers.base import ScrapedOffer
from tracker.analysis.imports import EWYLUDA
from tracker.analysis.imports.aliases import provider_name
from tracker.analysis.imports.base import (
    BadRow,
    ImportResult,
    Progress,
    Snapshot,
    check_future,
    csv_rows,
    missing_columns,
    number,
    when,
)
from tracker.catalog.instance_types import instance_gpu
from tracker.catalog.names import is_slice
from tracker.catalog.specs import resolve_gpu
from tracker.errors import TrackerError

NAME = EWYLUDA
DESCRIPTION = "ewyluda/gpu-price-index daily observation CSVs (data/observations/<year>/<date>.csv)"
CADENCE = timedelta(days=1)
MAX_GAP = timedelta(hours=30)
REQUIRED = ["collected_at", "source", "provider", "pricing", "gpu_model", "sku", "region", "gpu_count", "usd_per_hour"]
SOURCE = "ewyluda/gpu-price-index"


def sniff(path: Path, head: str) -> bool:
    first = head.splitlines()[0] if head else ""
    return "collected_at" in first and "usd_per_gpu_hour" in first and "gpu_model" in first


def _gpu(model: str, sku: str, provider: str) -> str | None:
    """The GPU of a row: its model, then its sku; none when the sku is a slice (RunPod's
    ``B300 SXM6 AC MIG 1g.34gb`` filed under B300 is a seventh of one: its raw name is then the
    sku, which the catalog refuses)."""
    if is_slice(sku):
        return None
    gpu = resolve_gpu(model, None, provider=provider) or resolve_gpu(sku, None, provider=provider)
    if gpu is None:
        hint = instance_gpu(sku, provider)
        gpu = hint[0] if hint else None
    return gpu


def _kind(pricing: str, provider_display: str) -> str:
    if pricing == "spot":
        return "spot"
    if pricing != "on_demand":
        raise ValueError(f"pricing {pricing!r} is not on_demand or spot")
    return "community" if "community" in provider_display.lower() else "on_demand"


def read(path: Path, result: ImportResult, progress: Progress | None = None) -> Iterator[Snapshot]:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        missing_columns(header, REQUIRED, "ewyluda observations")
        for line, row in csv_rows(reader, path.name):
            result.rows += 1
            if progress is not None and result.rows % 500 == 0:
                progress(result.rows, result.rows + 1)
            try:
                at = when(row, "collected_at")
                check_future(at, "collected_at")
                source = (row.get("source") or "").strip()
                if not source:
                    raise ValueError("source is empty")
                provider = provider_name(source)
                model, sku = (row.get("gpu_model") or "").strip(), (row.get("sku") or "").strip()
                if not model or not sku:
                    raise ValueError("gpu_model and sku must not be empty")
                count = number(row, "gpu_count")
                offer = ScrapedOffer(
                    provider=provider, sku=f"{model}/{sku}", gpu_raw=sku if is_slice(sku) else model,
                    gpu_count=count,  # type: ignore[arg-type]
                    price_per_hour=number(row, "usd_per_hour"),
                    kind=_kind((row.get("pricing") or "").strip(), row.get("provider") or ""),
                    region=(row.get("region") or "").strip(), gpu=_gpu(model, sku, provider),
                    extra={"source": SOURCE, "source_provider": (row.get("provider") or "").strip(),
                           "sample_size": (row.get("sample_size") or "").strip()},
                )
            except (ValueError, TrackerError) as exc:
                result.bad_rows.append(BadRow(line, str(exc).splitlines()[0], path.name))
                continue
            yield Snapshot(provider, f"ewyluda:{provider}", at, [offer], line, path.name)

"""ewyluda/gpu-price-index daily observation CSVs (``data/observations/<year>/<date>.csv``).

Columns: ``date, collected_at, source, provider, segment, pricing, gpu_model, sku, region,
geo, gpu_count, usd_per_hour, usd_per_gpu_hour, sample_size``. Each (source, collected_at)
is one collection of that source; ``usd_per_hour`` is the whole instance's price for
``gpu_count`` GPUs. ``source`` goes through the alias table (``vast`` -> ``vastai``);
``pricing`` spot is kind spot, RunPod's *Community Cloud* rows are kind community. The sku is
``<gpu_model>/<sku>`` because one sku can carry several GPU models (Vast.ai's
``median-offer``). The GPU is named by the catalog from the sku, the archive's ``gpu_model``
label only as a hint (``base.catalog_gpu``); a slice (a MIG profile, a count below one) and a
name the catalog cannot resolve are kept raw and reported unmapped. The collector runs once a day (cadence one day);
collections more than 30 hours apart have a gap between them (a missing day is unknown).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

from scrapers.base import ScrapedOffer
from tracker.errors import TrackerError
from tracker.pipeline.imports import EWYLUDA, base
from tracker.pipeline.imports.aliases import provider_name

NAME = EWYLUDA
DESCRIPTION = "ewyluda/gpu-price-index daily observation CSVs (data/observations/<year>/<date>.csv)"
CADENCE = timedelta(days=1)
MAX_GAP = timedelta(hours=30)
REQUIRED = ["collected_at", "source", "provider", "pricing", "gpu_model", "sku", "region", "gpu_count", "usd_per_hour"]
SOURCE = "ewyluda/gpu-price-index"


def sniff(path: Path, head: str) -> bool:
    first = head.splitlines()[0] if head else ""
    return "collected_at" in first and "usd_per_gpu_hour" in first and "gpu_model" in first


def _gpu(model: str, sku: str, provider: str, count: float) -> tuple[str | None, str]:
    """(catalog GPU or None, raw name): the provider's sku first, the archive's ``gpu_model``
    label only as a hint (``base.catalog_gpu``: a MIG slice such as RunPod's ``NVIDIA B300 SXM6 AC
    MIG 1g.34gb``, labelled ``B300``, is never a whole B300). The raw name kept is the label,
    or the slice's own name (a sku such as Vast.ai's ``median-offer`` names no GPU)."""
    gpu, raw, _mem = base.catalog_gpu([sku, model], provider=provider, count=count)
    return gpu, raw if raw.endswith(" slice") else model


def _kind(pricing: str, provider_display: str) -> str:
    if pricing == "spot":
        return "spot"
    if pricing != "on_demand":
        raise ValueError(f"pricing {pricing!r} is not on_demand or spot")
    return "community" if "community" in provider_display.lower() else "on_demand"


def read(path: Path, result: base.ImportResult, progress: base.Progress | None = None) -> Iterator[base.Snapshot]:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        for line, row in base.csv_records(fh, path.name, "an ewyluda observation row", REQUIRED,
                                          "ewyluda observations", progress):
            result.rows += 1
            try:
                at = base.when(row, "collected_at")
                base.check_future(at, "collected_at")
                source = (row.get("source") or "").strip()
                if not source:
                    raise ValueError("source is empty")
                provider = provider_name(source)
                model, sku = (row.get("gpu_model") or "").strip(), (row.get("sku") or "").strip()
                if not model or not sku:
                    raise ValueError("gpu_model and sku must not be empty")
                count = base.number(row, "gpu_count")
                assert count is not None
                gpu, raw = _gpu(model, sku, provider, count)
                offer = ScrapedOffer(
                    provider=provider, sku=f"{model}/{sku}", gpu_raw=raw, gpu_count=count,
                    price_per_hour=base.number(row, "usd_per_hour"),
                    kind=_kind((row.get("pricing") or "").strip(), row.get("provider") or ""),
                    region=(row.get("region") or "").strip(), gpu=gpu,
                    extra={"source": SOURCE, "source_provider": (row.get("provider") or "").strip(),
                           "sample_size": (row.get("sample_size") or "").strip()},
                )
            except (ValueError, TrackerError) as exc:
                result.bad(base.BadRow(line, str(exc).splitlines()[0], path.name))
                continue
            yield base.Snapshot(provider, f"ewyluda:{provider}", at, [offer], line, path.name)

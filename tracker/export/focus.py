"""Current prices as a FOCUS **SKU Price** dataset (CSV) plus its FOCUS schema metadata (JSON).

The SKU Price dataset is new in the FOCUS 1.5 working draft (FinOps-Open-Cost-and-Usage-Spec/
FOCUS_Spec, ``specification/datasets/sku_price``, read 2026-12-01); its columns and values here
follow that draft. FOCUS asks for schema metadata "provided separately from the dataset
artifact", so the version followed is written into a sidecar ``<file>.metadata.json``
(``Schemas[0].FocusVersion``), which any JSON reader keeps, and the README states it too.

One record per current offer: ``UnitPrice`` is the whole instance's hourly list price
(``PricingUnit`` ``Hours``), ``UnitPriceType`` ``List``, ``ContractId`` null (public prices),
``SkuPriceEffectiveStart`` the first observation of the unchanged price and
``SkuPriceEffectiveEnd`` null (still in effect). What FOCUS has no column for is in custom
columns (``x_`` prefix, as FOCUS names them): the price kind, ``x_Spot`` (spot rows marked
true), the FOCUS pricing category it corresponds to, the GPU, its count and the per-GPU price.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracker import __version__
from tracker.cells import safe_cell

FOCUS_VERSION = "1.5-draft"
SPEC_SOURCE = ("FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec specification/datasets/sku_price "
               "(1.5 working draft, read 2026-12-01)")
#: Cost and Usage's PricingCategory values, per price kind.
PRICING_CATEGORY = {"on_demand": "Standard", "community": "Standard", "spot": "Dynamic", "reserved": "Committed"}
#: (column, FOCUS data type); FOCUS columns in the draft's (alphabetical) order, then ours.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("ChargeCategory", "STRING"), ("ContractId", "STRING"), ("PricingCurrency", "STRING"),
    ("PricingCurrencyCategory", "STRING"), ("PricingRegionId", "STRING"), ("PricingServiceName", "STRING"),
    ("PricingUnit", "STRING"), ("ServiceProviderName", "STRING"), ("SkuId", "STRING"),
    ("SkuPriceCreated", "DATETIME"), ("SkuPriceDescription", "STRING"), ("SkuPriceEffectiveEnd", "DATETIME"),
    ("SkuPriceEffectiveStart", "DATETIME"), ("SkuPriceEligibility", "JSON"), ("SkuPriceId", "STRING"),
    ("SkuPriceLastUpdated", "DATETIME"), ("UnitPrice", "DECIMAL"), ("UnitPriceType", "STRING"),
    ("x_PriceKind", "STRING"), ("x_Spot", "BOOLEAN"), ("x_PricingCategory", "STRING"), ("x_TermMonths", "DECIMAL"),
    ("x_Gpu", "STRING"), ("x_GpuName", "STRING"), ("x_GpuCount", "DECIMAL"), ("x_PricePerGpuHour", "DECIMAL"),
    ("x_Provider", "STRING"),
)
GLOBAL_SCOPE = json.dumps({"IsGlobalScope": True})


def _time(dt: datetime | None) -> str:
    """FOCUS date/times: ISO 8601 in UTC with a Z."""
    return "" if dt is None else dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sku_price_id(row: Mapping[str, Any]) -> str:
    """One id per price point: the SKU, its region, kind and term (FOCUS asks for a distinct
    SKU Price ID per commitment term)."""
    return "|".join([row["sku"], row["region"] or "", row["kind"], f"{row['term_months']}m"])


def record(row: Mapping[str, Any], provider_names: Mapping[str, str]) -> dict[str, Any]:
    """One ``prices`` row as a SKU Price record."""
    count = row["gpu_count"]
    return {
        "ChargeCategory": "Usage",
        "ContractId": "",
        "PricingCurrency": row["currency"],
        "PricingCurrencyCategory": "Payable",
        "PricingRegionId": row["region"] or "",
        "PricingServiceName": "GPU Compute",
        "PricingUnit": "Hours",
        "ServiceProviderName": provider_names.get(row["provider"], row["provider"]),
        "SkuId": row["sku"],
        "SkuPriceCreated": _time(row["price_since"]),
        "SkuPriceDescription": f"{count:g} x {row['gpu_raw']}, {row['kind'].replace('_', '-')}",
        "SkuPriceEffectiveEnd": "",
        "SkuPriceEffectiveStart": _time(row["price_since"]),
        "SkuPriceEligibility": GLOBAL_SCOPE,
        "SkuPriceId": sku_price_id(row),
        "SkuPriceLastUpdated": _time(row["observed_at"]),
        "UnitPrice": repr(float(row["price_per_hour"])),
        "UnitPriceType": "List",
        "x_PriceKind": row["kind"],
        "x_Spot": "true" if row["kind"] == "spot" else "false",
        "x_PricingCategory": PRICING_CATEGORY.get(row["kind"], "Other"),
        "x_TermMonths": row["term_months"],
        "x_Gpu": row["gpu"] or "",
        "x_GpuName": row["gpu_raw"],
        "x_GpuCount": f"{count:g}",
        "x_PricePerGpuHour": repr(float(row["price_per_gpu_hour"])),
        "x_Provider": row["provider"],
    }


def metadata(created: datetime, rows: int) -> dict[str, Any]:
    """FOCUS schema metadata (DataGenerator, Schemas with FocusVersion and ColumnDefinition)."""
    return {
        "DataGenerator": {"DataGenerator": "gpu-price-tracker", "DataGeneratorVersion": __version__},
        "Schemas": [{
            "SchemaId": f"gpu-price-tracker-skuprice-{__version__}",
            "FocusVersion": FOCUS_VERSION,
            "Dataset": "SkuPrice",
            "CreationDate": _time(created),
            "ColumnDefinition": [{"ColumnName": c, "DataType": t} for c, t in COLUMNS],
        }],
        "x_SpecSource": SPEC_SOURCE,
        "x_Records": rows,
    }


def metadata_path(path: Path) -> Path:
    return path.with_name(path.name + ".metadata.json")


def write(rows: Sequence[Mapping[str, Any]], path: Path, provider_names: Mapping[str, str],
          created: datetime | None = None) -> tuple[Path, Path]:
    """Write the dataset to ``path`` and its metadata beside it; returns both paths."""
    created = created or datetime.now(UTC)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=[c for c, _ in COLUMNS], lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: safe_cell(v) for k, v in record(r, provider_names).items()})
    meta = metadata_path(path)
    meta.write_text(json.dumps(metadata(created, len(rows)), indent=2) + "\n", encoding="utf-8")
    return path, meta

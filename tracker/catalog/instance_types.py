"""The instance-type table: which GPUs (and how many) an instance type holds.

Instance-type-only providers (AWS ``p5.48xlarge``, Azure ``Standard_ND96isr_H100_v5``, GCP
``a3-highgpu-8g``) never name the GPU in their price data, so their scrapers look the type up
here. The table is data with a public source per row; this module only reads it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

INSTANCE_TYPES_CSV: Final = Path(__file__).parent / "data" / "instance_types.csv"


# --- instance-type table -------------------------------------------------------------------
# tracker/catalog/data/instance_types.csv: provider,instance_type,gpu,gpu_count,gpu_memory_gb,source
# One row per exact instance type (matched case-insensitively), e.g.
#   aws,p5.48xlarge,H100-SXM,8,80,https://aws.amazon.com/ec2/instance-types/p5/
# gpu_count may be fractional (a shared GPU: Azure NV6ads_A10_v5 = 1/6 of an A10).
# Scrapers of instance-type-only providers call instance_gpu(); rows may be appended by the
# provider scrapers' authors, the catalog owns the file's format (tests check every row).


@dataclass(frozen=True, slots=True)
class InstanceType:
    provider: str
    instance_type: str
    gpu: str
    gpu_count: float
    gpu_memory_gb: float | None
    source: str


@cache
def _instance_table() -> dict[tuple[str, str], InstanceType]:
    table: dict[tuple[str, str], InstanceType] = {}
    if not INSTANCE_TYPES_CSV.exists():
        return table
    with INSTANCE_TYPES_CSV.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            mem = (row.get("gpu_memory_gb") or "").strip()
            it = InstanceType(
                provider=row["provider"].strip().lower(),
                instance_type=row["instance_type"].strip(),
                gpu=row["gpu"].strip(),
                gpu_count=float(row["gpu_count"]),
                gpu_memory_gb=float(mem) if mem else None,
                source=(row.get("source") or "").strip(),
            )
            table[(it.provider, it.instance_type.lower())] = it
    return table


def instance_types(provider: str | None = None) -> list[InstanceType]:
    """Every row of the instance-type table (of one provider when given)."""
    rows = _instance_table().values()
    return [r for r in rows if provider is None or r.provider == provider.lower()]


def instance_info(instance_type: str, provider: str | None = None) -> InstanceType | None:
    """The table row for an instance type; without ``provider`` only when all providers agree."""
    key = instance_type.strip().lower()
    table = _instance_table()
    if provider is not None:
        return table.get((provider.strip().lower(), key))
    hits = [r for (_, itype), r in table.items() if itype == key]
    if not hits or len({(r.gpu, r.gpu_count) for r in hits}) != 1:
        return None
    return hits[0]


def instance_gpu(instance_type: str, provider: str | None = None) -> tuple[str, float] | None:
    """Canonical GPU id and count for an instance type, from the documented table."""
    info = instance_info(instance_type, provider)
    return (info.gpu, info.gpu_count) if info else None

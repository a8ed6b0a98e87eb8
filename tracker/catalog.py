"""GPU spec catalog and GPU-name normalisation (CONTRACT; the catalog issue fills it in).

Public API the rest of the code relies on:

* ``resolve_gpu(raw, memory_gb=None) -> str | None``: canonical id (e.g. ``"H100-SXM"``)
  for a provider's GPU string, or ``None`` when unknown (never a guess).
* ``instance_gpu(instance_type) -> tuple[str, float] | None``: canonical id and GPU count
  for instance-type-only providers (AWS ``p5.48xlarge``, Azure ``Standard_ND96isr_H100_v5``,
  GCP ``a3-highgpu-8g``).
* ``gpu_ids_matching(query) -> list[str]``: ``"H100"`` -> every H100 variant; an exact
  canonical id -> just it (case-insensitive).
* ``family_of(gpu_id) -> str``.
"""

from __future__ import annotations

import re

# Minimal bootstrap table; replaced by the data-driven catalog.
_PATTERNS: list[tuple[str, str]] = [
    (r"h100.*(sxm|hbm3)", "H100-SXM"),
    (r"h100.*nvl", "H100-NVL"),
    (r"h100.*pcie", "H100-PCIe"),
    (r"^(nvidia )?h100( 80gb)?$", "H100-SXM"),
    (r"rtx ?4090", "RTX-4090"),
]
_FAMILIES = {"H100-SXM": "H100", "H100-PCIe": "H100", "H100-NVL": "H100", "RTX-4090": "RTX-4090"}


def resolve_gpu(raw: str, memory_gb: float | None = None) -> str | None:
    text = raw.strip().lower()
    for pattern, gpu in _PATTERNS:
        if re.search(pattern, text):
            return gpu
    return None


def instance_gpu(instance_type: str) -> tuple[str, float] | None:
    return None


def family_of(gpu_id: str) -> str:
    return _FAMILIES.get(gpu_id, gpu_id)


def gpu_ids_matching(query: str) -> list[str]:
    q = query.strip().lower()
    exact = [g for g in _FAMILIES if g.lower() == q]
    if exact:
        return exact
    return sorted(g for g, fam in _FAMILIES.items() if fam.lower() == q)


# --- instance-type table (contract) -------------------------------------------------------
# tracker/data/instance_types.csv: provider,instance_type,gpu,gpu_count,gpu_memory_gb,source
# One row per exact instance type (matched case-insensitively), e.g.
#   aws,p5.48xlarge,H100-SXM,8,80,https://aws.amazon.com/ec2/instance-types/p5/
# Scrapers of instance-type-only providers call instance_gpu(); rows may be appended by the
# provider scrapers' authors, the catalog owns the file's format.
import csv as _csv
from functools import cache as _cache
from pathlib import Path as _Path

_INSTANCE_TYPES = _Path(__file__).parent / "data" / "instance_types.csv"


@_cache
def _instance_table() -> dict[tuple[str, str], tuple[str, float, float | None]]:
    table: dict[tuple[str, str], tuple[str, float, float | None]] = {}
    if not _INSTANCE_TYPES.exists():
        return table
    with _INSTANCE_TYPES.open(newline="") as fh:
        for row in _csv.DictReader(fh):
            mem = row.get("gpu_memory_gb") or ""
            table[(row["provider"].strip().lower(), row["instance_type"].strip().lower())] = (
                row["gpu"].strip(),
                float(row["gpu_count"]),
                float(mem) if mem.strip() else None,
            )
    return table


def instance_gpu(instance_type: str, provider: str | None = None) -> tuple[str, float] | None:  # type: ignore[no-redef]
    """Canonical GPU id and count for an instance type, from the documented table."""
    key = instance_type.strip().lower()
    for (prov, itype), (gpu, count, _mem) in _instance_table().items():
        if itype == key and (provider is None or prov == provider.lower()):
            return gpu, count
    return None

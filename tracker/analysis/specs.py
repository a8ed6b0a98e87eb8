"""The few catalog facts analysis needs (TDP, purchase price, VRAM, TFLOPS), in one place.

Every function takes an optional ``catalog`` (``tracker.catalog.load_catalog(...)``, which
includes the user's ``catalog_file`` overrides such as their own purchase price); without
one, the shipped catalog is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tracker.catalog import value
from tracker.catalog.specs import GpuSpec, load_catalog

Catalog = Mapping[str, GpuSpec]


def catalog_or_default(catalog: Catalog | None = None) -> Catalog:
    return catalog if catalog is not None else load_catalog()


def spec_for(gpu_id: str, catalog: Catalog | None = None) -> GpuSpec | None:
    return catalog_or_default(catalog).get(gpu_id)


def check_basis(basis: str | None) -> str:
    return value.check_basis(basis or value.DEFAULT_BASIS)


def tflops(spec: GpuSpec | None, basis: str | None = None) -> float | None:
    """Dense TFLOPS of ``spec`` on ``basis`` (default ``fp16-dense``), or ``None``."""
    return None if spec is None else value.tflops_for(spec, check_basis(basis))


def flagship(gpu_ids: Iterable[str], catalog: Catalog | None = None) -> str | None:
    """The variant a family query stands for when one GPU is needed (TCO): one with a
    purchase price first, then the fastest (dense FP16), then catalog order.

    ``H100`` -> ``H100-SXM`` (the part the seed article prices), ``A100`` -> ``A100-SXM-80GB``.
    """
    cat = catalog_or_default(catalog)
    order = {g: i for i, g in enumerate(cat)}
    return min((g for g in gpu_ids if g in cat), default=None,
               key=lambda g: (0 if cat[g].purchase_price_usd else 1, -(cat[g].fp16_dense_tflops or 0.0), order[g]))

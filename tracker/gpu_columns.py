"""The columns of a GPU's spec, declared once: the catalog's rows (``tracker.catalog.specs.GpuSpec``
adds its aliases) and the store's ``gpu_model`` table (``db.models.GpuModel``, made from these
fields by ``db.models``) both come from ``GpuColumns``, so a new column is one field here.

It sits below both because the catalog and the store may not import each other
(tests/test_layers.py), and uses the standard library only: the catalog is read by commands that
must start without SQLAlchemy. ``Annotated`` metadata (a dict) is what the table needs beyond the
type, as ``sqlmodel.Field`` arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated


@dataclass(frozen=True, slots=True)
class GpuColumns:
    """One GPU's figures, as the catalog holds them and ``gpu_model`` stores them.

    TFLOPS are theoretical dense peaks unless named sparse; ``fp16_dense_tflops`` is FP16/BF16
    tensor with FP32 accumulate (the cost-per-TFLOP default); the ``*_fp16acc_*`` columns are
    the FP16-accumulate figures (2x on GeForce cards). ``None`` = not supported or not verified.
    """

    id: Annotated[str, {"primary_key": True, "max_length": 64}]
    family: Annotated[str, {"index": True, "max_length": 32}]
    name: str = ""
    vendor: str = ""
    architecture: str = ""
    form_factor: str = ""
    vram_gb: float | None = None
    mem_bandwidth_gbps: float | None = None
    fp32_tflops: float | None = None
    tf32_dense_tflops: float | None = None
    fp16_dense_tflops: float | None = None
    fp16_sparse_tflops: float | None = None
    fp16_dense_fp16acc_tflops: float | None = None
    fp16_sparse_fp16acc_tflops: float | None = None
    fp8_dense_tflops: float | None = None
    int8_dense_tops: float | None = None
    tdp_w: float | None = None
    launch_year: int | None = None
    purchase_price_usd: float | None = None
    purchase_price_date: str | None = None
    purchase_price_source: str | None = None
    #: Public pages the figures come from, separated by spaces.
    sources: str = ""
    notes: str = ""

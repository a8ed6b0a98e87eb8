"""What a GPU's price is worth (pure: no I/O, no store): cost per TFLOP on an explicit basis, and
the simple break-even of buying the GPU instead of renting it (``breakeven_hours``,
``months_for_hours``), the one rule of tco, the break-even history and the alerts on it.

``cost_per_tflop_hour = USD per GPU-hour / TFLOPS``, where TFLOPS is read from the catalog on
one *basis* (``BASES``) or given by the user (basis ``"user"``). The basis is part of every
result (``ValueRow.basis``, JSON ``basis``, ``column_header(basis)``), because the same GPU can
look twice as cheap on another basis: the RTX 4090 is 165.2 TFLOPS FP16 with FP32 accumulate
(``fp16-dense``, the training figure and the default) but 330.3 with FP16 accumulate, and a
B200 is 2,250 dense as the HGX part clouds rent but 2,500 inside a GB200.

``cost_per_tflop_hour(price, tflops, places=4)`` divides and rounds half-up in decimal from
the inputs as written, so a tie such as 3.15 / 1000 = 0.00315 always gives 0.0032 (binary
floats make ``round()`` on such ties depend on the representation error).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final, Protocol

from tracker.errors import ConfigError
from tracker.kinds import HOURS_PER_MONTH

DEFAULT_BASIS: Final = "fp16-dense"
USER_BASIS: Final = "user"

#: basis -> the catalog field it reads.
BASES: Final[Mapping[str, str]] = {
    "fp16-dense": "fp16_dense_tflops",
    "fp16-sparse": "fp16_sparse_tflops",
    "fp8-dense": "fp8_dense_tflops",
    "tf32-dense": "tf32_dense_tflops",
    "fp32": "fp32_tflops",
}

#: For table headers and help texts.
BASIS_LABELS: Final[Mapping[str, str]] = {
    "fp16-dense": "FP16/BF16 tensor, dense, FP32 accumulate",
    "fp16-sparse": "FP16/BF16 tensor, 2:4 sparse, FP32 accumulate",
    "fp8-dense": "FP8 tensor, dense",
    "tf32-dense": "TF32 tensor, dense",
    "fp32": "FP32 (non-tensor)",
    USER_BASIS: "user-given TFLOPS",
}


class HasTflops(Protocol):
    """What ``tflops_for`` needs: a ``GpuSpec`` (or anything with the catalog's fields)."""

    fp16_dense_tflops: float | None
    fp16_sparse_tflops: float | None
    fp8_dense_tflops: float | None
    tf32_dense_tflops: float | None
    fp32_tflops: float | None


def check_basis(basis: str) -> str:
    """The basis, normalised; ``ConfigError`` naming the valid ones otherwise."""
    b = basis.strip().lower().replace("_", "-")
    if b not in BASES:
        raise ConfigError(f"basis: {basis!r} is not one of {', '.join(BASES)}")
    return b


def tflops_for(spec: HasTflops, basis: str = DEFAULT_BASIS) -> float | None:
    """The catalog figure on ``basis``; ``None`` when the GPU has none (no such unit, not verified)."""
    value = getattr(spec, BASES[check_basis(basis)])
    return float(value) if value is not None and value > 0 else None


def column_header(basis: str, what: str = "USD/TFLOP-h") -> str:
    """``"USD/TFLOP-h (fp16-dense)"``: the basis always shows in a header."""
    return f"{what} ({basis})"


def _decimal(name: str, value: float) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise ValueError(f"{name} must be a number, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, not {value!r}")
    return Decimal(str(value))


def cost_per_tflop_hour(price_per_gpu_hour: float, tflops: float, places: int | None = None) -> float:
    """USD per TFLOP-hour = USD per GPU-hour / TFLOPS (``places``: round half-up in decimal)."""
    price = _decimal("price_per_gpu_hour", price_per_gpu_hour)
    flops = _decimal("tflops", tflops)
    if price < 0:
        raise ValueError(f"price_per_gpu_hour must not be negative, not {price_per_gpu_hour!r}")
    if flops <= 0:
        raise ValueError(f"tflops must be positive, not {tflops!r}")
    cost = price / flops
    if places is not None:
        cost = cost.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return float(cost)


def breakeven_hours(purchase: float, rent_per_hour: float) -> float:
    """Simple break-even: hours of rent that cost the purchase price, divided as floats divide in
    numpy (a zero rent gives infinity, or NaN with no purchase price: a history keeps its gaps)."""
    if rent_per_hour == 0:
        return math.nan if purchase == 0 or math.isnan(purchase) else math.copysign(math.inf, purchase) * math.copysign(1.0, rent_per_hour)
    return purchase / rent_per_hour


def months_for_hours(hours: float | None, utilization: float = 1.0) -> float | None:
    """Calendar months to accumulate ``hours`` of use at ``utilization`` (730 h a month)."""
    return None if hours is None else hours / (HOURS_PER_MONTH * utilization)


def usd_per_gb_vram_hour(price_per_gpu_hour: float, vram_gb: float | None) -> float | None:
    if vram_gb is None or vram_gb <= 0:
        return None
    return price_per_gpu_hour / vram_gb


@dataclass(frozen=True, slots=True)
class ValueRow:
    """One GPU's value on one basis. ``cost_per_tflop_hour`` is for the cheapest price."""

    gpu: str
    basis: str
    tflops: float | None
    price_per_gpu_hour: float
    cost_per_tflop_hour: float | None
    median_price_per_gpu_hour: float | None = None
    median_cost_per_tflop_hour: float | None = None
    offers: int = 1
    vram_gb: float | None = None
    usd_per_gb_vram_hour: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "basis": self.basis,
            "tflops": self.tflops,
            "price_per_gpu_hour": self.price_per_gpu_hour,
            "cost_per_tflop_hour": self.cost_per_tflop_hour,
            "median_price_per_gpu_hour": self.median_price_per_gpu_hour,
            "median_cost_per_tflop_hour": self.median_cost_per_tflop_hour,
            "offers": self.offers,
            "vram_gb": self.vram_gb,
            "usd_per_gb_vram_hour": self.usd_per_gb_vram_hour,
        }


def value_for(
    gpu: str,
    price_per_gpu_hour: float,
    spec: HasTflops | None = None,
    basis: str = DEFAULT_BASIS,
    tflops: float | None = None,
) -> ValueRow:
    """One GPU at one price: ``tflops`` given -> basis ``"user"``; else the catalog figure."""
    if tflops is not None:
        basis, flops = USER_BASIS, float(tflops)
    else:
        basis = check_basis(basis)
        flops = tflops_for(spec, basis) if spec is not None else None
    return _row(gpu, basis, flops, price_per_gpu_hour, price_per_gpu_hour, 1, spec)


def _row(gpu: str, basis: str, flops: float | None, cheapest: float, median: float, offers: int,
         spec: HasTflops | None) -> ValueRow:
    """A ``ValueRow`` from its prices: the cost per TFLOP-hour of the cheapest and the median."""
    vram = getattr(spec, "vram_gb", None) if spec is not None else None
    return ValueRow(
        gpu=gpu,
        basis=basis,
        tflops=flops,
        price_per_gpu_hour=cheapest,
        cost_per_tflop_hour=cost_per_tflop_hour(cheapest, flops) if flops else None,
        median_price_per_gpu_hour=median,
        median_cost_per_tflop_hour=cost_per_tflop_hour(median, flops) if flops else None,
        offers=offers,
        vram_gb=vram,
        usd_per_gb_vram_hour=usd_per_gb_vram_hour(cheapest, vram),
    )


def value_table(
    prices_by_gpu: Mapping[str, Iterable[float]],
    catalog: Mapping[str, HasTflops],
    basis: str = DEFAULT_BASIS,
    offers: Mapping[str, int] | None = None,
) -> list[ValueRow]:
    """Rank GPUs by cost per TFLOP-hour of their cheapest price (per-GPU USD prices: the store's
    callers pass each market provider's cheapest, ``tracker.analysis.aggregators.market_prices``,
    so the median is across providers, each cloud once), with the median of those prices.
    ``offers``: how many offers each GPU has (default: how many prices were given). GPUs without
    a figure on the basis (or not in the catalog) come last with ``cost_per_tflop_hour=None``;
    ties by id."""
    basis = check_basis(basis)
    rows: list[ValueRow] = []
    for gpu, prices in prices_by_gpu.items():
        ps = sorted(p for p in prices if p is not None and p > 0)
        if not ps:
            continue
        spec = catalog.get(gpu)
        flops = tflops_for(spec, basis) if spec is not None else None
        rows.append(_row(gpu, basis, flops, ps[0], statistics.median(ps), (offers or {}).get(gpu, len(ps)), spec))
    return rank(rows)


def rank(rows: Iterable[ValueRow]) -> list[ValueRow]:
    """Cheapest cost per TFLOP-hour first; rows without one last; ties by GPU id."""
    return sorted(rows, key=lambda r: (r.cost_per_tflop_hour is None, r.cost_per_tflop_hour or 0.0, r.gpu))

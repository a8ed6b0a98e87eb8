"""Which GPU for a workload: a VRAM estimate, the GPUs that fit (1 to 8 per instance) at the
latest market prices, and rent-vs-buy advice.

VRAM rules (GB, for a model of P billion parameters): total = P x bytes_per_parameter x 1.2 + 1.5,
where the bytes per parameter are

* inference: 2 (fp16/bf16), 1 (int8) or 0.5 (int4): the weights; x1.2 covers KV cache and activations;
* lora: 2: a frozen fp16 base; x1.2 covers adapters, their Adam states and checkpointed activations;
* qlora: 0.5 (NF4, default) or 1 (8-bit): a 4-bit base; the same x1.2 for adapters and activations;
* full: 16: mixed-precision Adam, fp16 weights (2) + gradients (2) + fp32 master weights, momentum
  and variance (12); x1.2 for activations with gradient checkpointing.

The fixed 1.5 GB is the CUDA context and framework buffers every process pays.

Sources and how the seeds' rules fit in:

* The seed article: "about 2 GB per billion parameters for fp16 inference", "about 16 GB
  per billion for full fine-tuning", "QLoRA fits a 13B model in about 9 GB". The first two
  count parameters only and are our ``bytes_per_parameter`` (2 and 16).
* They disagree on QLoRA: scaling the per-parameter rule to 4 bits gives 0.5 GB/B, 6.5 GB
  for 13B, while the article reports about 9 GB measured. We keep the per-parameter rule
  and add the overhead it leaves out (x1.2 plus 1.5 GB): 13 x 0.5 x 1.2 + 1.5 = 9.3 GB,
  which matches the measurement. We prefer the rule that agrees with a measured figure,
  and we would rather over-estimate slightly (a dearer GPU) than under-estimate (an
  out-of-memory crash). The same overhead is applied to every workload, so 7B fp16
  inference is estimated at 18.3 GB, not the bare 14 GB of weights.
* x1.2 for inference follows EleutherAI, "Transformer Math 101" (2023,
  https://blog.eleuther.ai/transformer-math/), which also derives the 16 bytes/parameter
  of mixed-precision Adam training.
* QLoRA: Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs" (2023,
  https://arxiv.org/abs/2305.14314): a 65B model fine-tunes on one 48 GB GPU (our rule:
  40.5 GB). LLaMA-Factory's hardware table (https://github.com/hiyouga/LLaMA-Factory)
  gives 6 GB for 7B QLoRA-4bit (ours 5.7), 12 GB for 13B, 16 GB for 7B LoRA (ours 18.3).

Multi-GPU: a model may be split over the GPUs of one instance (tensor/pipeline parallel or
FSDP), so ``n`` GPUs offer ``n x VRAM``; the split's own overhead is inside the x1.2.
Anything beyond 8 GPUs (multi-node) is out of scope and reported as not fitting.

Rent or buy follows the seeds' checklist: below 100 h a month, rent; above 500 h a month
for 18 months or more, consider buying; in between it comes down to whether the TCO
break-even (``tracker.analysis.tco``) falls inside the horizon.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from db import reads
from db.engine import engine_reader
from scrapers.registry import all_scrapers
from tracker.analysis import specs
from tracker.analysis.assumptions import MAX_GPUS, MAX_HOURS_PER_MONTH, USD_PER_KWH, WORKLOADS
from tracker.analysis.frames import records
from tracker.catalog.value import breakeven_hours
from tracker.kinds import DEFAULT_KINDS
from tracker.analysis.tco import electricity_per_hour
from tracker.errors import ConfigError

BYTES_PER_PARAM = {"fp16": 2.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5}
#: The precisions each workload takes, its default first.
ALLOWED_PRECISIONS = {
    "inference": ("fp16", "bf16", "int8", "int4"),
    "lora": ("fp16", "bf16"),
    "qlora": ("int4", "int8"),
    "full": ("fp16", "bf16"),
}
OVERHEAD_FACTOR = 1.2
FIXED_OVERHEAD_GB = 1.5
RENT_BELOW_HOURS = 100.0
BUY_ABOVE_HOURS = 500.0
BUY_MIN_MONTHS = 18.0

_PARAMS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmbt])?\s*$", re.IGNORECASE)
_SCALE = {None: 1.0, "b": 1.0, "m": 1e-3, "k": 1e-6, "t": 1e3}


def parse_params(text: str | float) -> float:
    """``"13B"`` -> 13.0, ``"500M"`` -> 0.5, ``"1.2T"`` -> 1200.0; a bare number is billions."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _PARAMS.match(text)
        if not m:
            raise ConfigError(f"--params: {text!r} is not a size like 7B, 13B, 70B or 500M")
        value = float(m.group(1)) * _SCALE[m.group(2).lower() if m.group(2) else None]
    if value <= 0:
        raise ConfigError(f"--params: {text!r} must be positive")
    return value


@dataclass(frozen=True, slots=True)
class VramEstimate:
    params_b: float
    workload: str
    precision: str
    bytes_per_param: float
    weights_gb: float
    total_gb: float
    rule: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate_vram(params_b: float, workload: str, precision: str | None = None) -> VramEstimate:
    """GB of GPU memory for ``workload`` on a ``params_b``-billion-parameter model."""
    workload = workload.lower().replace("-", "_")
    workload = {"full_finetune": "full", "full_fine_tune": "full", "finetune": "full"}.get(workload, workload)
    if workload not in WORKLOADS:
        raise ConfigError(f"--workload: {workload!r} is not one of {', '.join(WORKLOADS)}")
    precision = (precision or ALLOWED_PRECISIONS[workload][0]).lower()
    if precision not in ALLOWED_PRECISIONS[workload]:
        raise ConfigError(f"--precision: {precision} does not apply to {workload} "
                          f"(use {', '.join(ALLOWED_PRECISIONS[workload])})")
    bpp = 16.0 if workload == "full" else BYTES_PER_PARAM[precision]
    weights = params_b * bpp
    total = weights * OVERHEAD_FACTOR + FIXED_OVERHEAD_GB
    rule = f"{params_b:g}B x {bpp:g} GB/B x {OVERHEAD_FACTOR:g} + {FIXED_OVERHEAD_GB:g} GB = {total:.1f} GB"
    return VramEstimate(params_b, workload, precision, bpp, weights, total, rule)


def gpus_needed(total_gb: float, vram: float) -> int:
    return max(1, math.ceil(total_gb / vram - 1e-9))


def gpu_options(
    source: Engine,
    estimate: VramEstimate,
    *,
    max_gpus: int = MAX_GPUS,
    kinds: Sequence[str] | None = DEFAULT_KINDS,
    providers: Sequence[str] | None = None,
    regions: Sequence[str] | None = None,
    basis: str | None = None,
    catalog: specs.Catalog | None = None,
    at: datetime | None = None,
    include_stale: bool = False,
    narrow: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
) -> pd.DataFrame:
    """Every catalog GPU that holds the model on 1..``max_gpus`` cards, each with its
    cheapest current offer of at least that many GPUs (whole-instance price), cheapest first.
    A provider that rents per GPU (``Scraper.per_gpu_limit_field``: RunPod, JarvisLabs, Voltage
    Park) offers n of its one-GPU offers at n times the price, up to the limit it states.

    GPUs that fit but have no such offer listed come last, with empty prices. ``narrow`` chooses
    among the current offers first (the CLI's --available, --max-price, --max-age).
    """
    basis = specs.check_basis(basis)
    fitting = {gpu: (spec, need) for gpu, spec in specs.catalog_or_default(catalog).items()
               if spec.vram_gb and (need := gpus_needed(estimate.total_gb, spec.vram_gb)) <= max_gpus}
    if not fitting:
        return pd.DataFrame(columns=OPTION_COLUMNS)
    with engine_reader(source) as reader:
        offers = reads.latest_prices(reader, at=at, gpus=list(fitting), providers=providers, kinds=kinds, regions=regions,
                                     include_stale=include_stale)
        if narrow is not None:
            offers = narrow(offers)
        # provider -> the ``extra`` field holding how many of its per-GPU offers one can rent
        fields = {name: cls.per_gpu_limit_field for name, cls in all_scrapers().items() if cls.per_gpu_limit_field}
        limits = reads.offer_extra_field(reader, sorted({o["provider"] for o in offers} & set(fields)), fields,
                                         list(fitting))
    rows = []
    for gpu, (spec, need) in fitting.items():
        listed = [o for o in offers if o["gpu"] == gpu and o["currency"] == "USD" and o["price_per_hour"]]
        candidates = [o for o in listed if need <= o["gpu_count"] <= max_gpus]
        candidates += [scaled for o in listed if (scaled := scale_per_gpu(o, need, limits)) is not None]
        best = min(candidates, key=lambda o: (o["price_per_hour"], o["gpu_count"]), default={})
        count = best.get("gpu_count", need)
        tflops = specs.tflops(spec, basis)
        total_tflops = tflops * count if tflops else None
        price = best.get("price_per_hour")
        rows.append({"gpu": gpu, "vram_gb": spec.vram_gb, "gpus_needed": need, "gpu_count": count,
                     "total_vram_gb": spec.vram_gb * count, "price_per_hour": price,
                     "price_per_gpu_hour": best.get("price_per_gpu_hour"), "tflops": total_tflops,
                     "cost_per_tflop_hour": price / total_tflops if price and total_tflops else None,
                     **{k: best.get(k) for k in ("provider", "sku", "region", "kind", "observed_at")},
                     "purchase_price_per_gpu": spec.purchase_price_usd, "tdp_w": spec.tdp_w})
    df = pd.DataFrame(rows, columns=OPTION_COLUMNS)
    return df.sort_values(["price_per_hour", "total_vram_gb", "gpu"], na_position="last").reset_index(drop=True)


def scale_per_gpu(offer: dict[str, Any], need: int, limits: dict[tuple[str, str, str, str, int], Any]) -> dict[str, Any] | None:
    """A one-GPU offer of a provider that rents per GPU, as ``need`` GPUs at ``need`` times the
    price (sku ``"<sku> x<need>"``), when its own limit allows that many; otherwise None."""
    if offer["gpu_count"] != 1 or need <= 1:
        return None
    limit = limits.get((offer["provider"], offer["sku"], offer["region"], offer["kind"], offer["term_months"]))
    if not isinstance(limit, int | float) or isinstance(limit, bool) or need > limit:
        return None
    return {**offer, "gpu_count": float(need), "price_per_hour": offer["price_per_gpu_hour"] * need,
            "sku": f"{offer['sku']} x{need}"}


OPTION_COLUMNS = [
    "gpu", "vram_gb", "gpus_needed", "gpu_count", "total_vram_gb", "price_per_hour", "price_per_gpu_hour",
    "tflops", "cost_per_tflop_hour", "provider", "sku", "region", "kind", "observed_at",
    "purchase_price_per_gpu", "tdp_w",
]


@dataclass(frozen=True, slots=True)
class Advice:
    verdict: str  # rent | consider buying
    reason: str
    hours_per_month: float
    months: float
    gpu: str | None = None
    gpu_count: float | None = None
    rent_per_hour: float | None = None
    purchase: float | None = None
    breakeven_hours: float | None = None
    breakeven_months_at_usage: float | None = None
    rent_cost_over_horizon: float | None = None
    own_cost_over_horizon: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def rent_or_buy(
    hours_per_month: float,
    months: float,
    *,
    rent_per_hour: float | None = None,
    purchase: float | None = None,
    running_per_hour: float = 0.0,
    gpu: str | None = None,
    gpu_count: float | None = None,
) -> Advice:
    """The seeds' checklist, with the TCO break-even when a rent and a purchase price are known."""
    if hours_per_month <= 0 or hours_per_month > MAX_HOURS_PER_MONTH:
        raise ConfigError(f"--hours-per-month: {hours_per_month} must be in (0, {MAX_HOURS_PER_MONTH}]")
    if months <= 0:
        raise ConfigError(f"--months: {months} must be positive")
    be_hours = be_months = rent_total = own_total = None
    if rent_per_hour and purchase:
        be_hours = breakeven_hours(purchase, rent_per_hour)
        be_months = be_hours / hours_per_month
        rent_total = rent_per_hour * hours_per_month * months
        own_total = purchase + running_per_hour * hours_per_month * months
    be_text = f"; buying breaks even after {be_months:.1f} months at this usage" if be_months is not None else ""
    heavy = hours_per_month > BUY_ABOVE_HOURS and months >= BUY_MIN_MONTHS
    if hours_per_month < RENT_BELOW_HOURS:
        verdict, reason = "rent", f"below {RENT_BELOW_HOURS:g} h a month renting wins{be_text}"
    elif be_months is None and heavy:
        verdict, reason = "consider buying", (f"over {BUY_ABOVE_HOURS:g} h a month for {months:g} months "
                                              "(no purchase price known to confirm it)")
    elif be_months is None:
        verdict, reason = "rent", ("usage or horizon below the buy thresholds "
                                   f"({BUY_ABOVE_HOURS:g} h a month for {BUY_MIN_MONTHS:g}+ months)")
    elif be_months <= months and heavy:
        verdict, reason = "consider buying", (f"over {BUY_ABOVE_HOURS:g} h a month for {months:g} months{be_text}, "
                                              "inside your horizon")
    elif be_months <= months:
        verdict, reason = "rent", (f"break-even ({be_months:.1f} months) falls inside the horizon, but usage is below "
                                   f"{BUY_ABOVE_HOURS:g} h a month or the horizon is under {BUY_MIN_MONTHS:g} months: "
                                   "renting keeps you flexible; buying only pays if usage stays this high")
    else:
        verdict, reason = "rent", f"buying would not break even within {months:g} months{be_text}"
    return Advice(verdict, reason, hours_per_month, months, gpu, gpu_count, rent_per_hour, purchase, be_hours, be_months,
                  rent_total, own_total)


@dataclass
class Recommendation:
    estimate: VramEstimate
    options: pd.DataFrame
    advice: Advice | None
    notes: list[str]


def recommend(
    source: Engine,
    params: str | float,
    workload: str,
    *,
    precision: str | None = None,
    hours_per_month: float | None = None,
    months: float | None = None,
    max_gpus: int = MAX_GPUS,
    **query: Any,
) -> Recommendation:
    """VRAM estimate, fitting GPUs at market prices (``gpu_options``, given ``query``: kinds,
    providers, regions, basis, catalog, at, include_stale, narrow), and (with ``hours_per_month``)
    advice for the cheapest priced option that has a purchase price."""
    est = estimate_vram(parse_params(params), workload, precision)
    options = gpu_options(source, est, max_gpus=max_gpus, **query)
    notes: list[str] = []
    if options.empty:
        notes.append(f"needs {est.total_gb:.0f} GB: more than {max_gpus} of any GPU in the catalog hold; "
                     "use several nodes (FSDP/ZeRO-3 with offload) or a lighter method (LoRA/QLoRA)")
    elif options["price_per_hour"].isna().all():
        notes.append("no current offer in the store fits; run `gpu-tracker scrape` first")
    advice = None
    if hours_per_month is not None:
        horizon = months if months is not None else 12.0
        priced = [o for o in records(options) if o["price_per_hour"] is not None]
        top = next((o for o in priced if o["purchase_price_per_gpu"] is not None), priced[0] if priced else None)
        if top is None:
            advice = rent_or_buy(hours_per_month, horizon)
        else:
            count = top["gpu_count"]
            purchase = top["purchase_price_per_gpu"] * count if top["purchase_price_per_gpu"] is not None else None
            running = electricity_per_hour(top["tdp_w"], USD_PER_KWH) * count if top["tdp_w"] is not None else 0.0
            advice = rent_or_buy(hours_per_month, horizon, rent_per_hour=float(top["price_per_hour"]),
                                 purchase=purchase, running_per_hour=running, gpu=top["gpu"], gpu_count=float(count))
            if top is not priced[0]:
                notes.append(f"rent-vs-buy compares {top['gpu']}, the cheapest option with a known purchase price")
    return Recommendation(est, options, advice, notes)

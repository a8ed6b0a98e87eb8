"""Catalog and value commands: the spec table, GPU-name resolution, cost-per-TFLOP ranking."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tracker.catalog.value import (
    BASES,
    DEFAULT_BASIS,
    check_basis,
    column_header,
    value_for,
    value_table,
)
from tracker.cli import app
from tracker.cli.collect_cmds import duration_text, resolve_gpu_query
from tracker.cli.common import Format, emit, finite, state
from tracker.cli.options import (
    KIND_HELP,
    ColumnsOption,
    GpusOption,
    MaxAgeOption,
    MaxPriceOption,
    MinGpuMemoryOption,
    WideOption,
    check_providers,
    chosen_kinds,
    kinds_text,
    narrow_offers,
)
from tracker.cli.render import ESSENTIAL, WIDE
from tracker.cli.timetravel import AtOption, StaleOption, parse_at, warn_if_stale
from tracker.errors import ConfigError

catalog_app = typer.Typer(help="The GPU spec catalog: specs, purchase prices and sources; name resolution.")
app.add_typer(catalog_app, name="catalog")

CATALOG_COLUMNS = [
    ("gpu", "gpu"), ("vendor", "vendor"), ("form_factor", "form"), ("vram_gb", "VRAM GB"), ("tdp_w", "TDP W"),
    ("fp16_dense_tflops", "FP16 dense"), ("fp16_sparse_tflops", "FP16 sparse"), ("fp8_dense_tflops", "FP8 dense"),
    ("purchase_price_usd", "purchase USD"), ("purchase_price_date", "price date"),
]


@catalog_app.callback(invoke_without_command=True)
def catalog(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help="A family (H100) or a canonical id.")] = None,
    unmapped: Annotated[bool, typer.Option("--unmapped", help="List raw GPU names seen in the store without a mapping, with counts.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """Print the GPU catalog (specs, purchase prices, sources), or the unmapped names seen."""
    if ctx.invoked_subcommand is not None:
        return
    from db import reads
    from tracker.catalog.specs import load_catalog

    st = state(ctx)
    if unmapped:
        rows = reads.unmapped_gpu_names(st.reader)
        unmapped_offers, total = reads.offer_mapping_counts(st.reader)
        share = unmapped_offers / total if total else 0.0
        for r in rows:  # every row carries the totals, so JSON and CSV state the share too
            r.update(unmapped_offers=unmapped_offers, offers_total=total, unmapped_share=round(share, 4))
        emit(rows, fmt, title=f"GPU names without a catalog mapping: {unmapped_offers} of {total} offers ({share:.1%})",
             columns=[("gpu_raw", "raw name"), ("offers", "offers"), ("example_provider", "e.g. provider")])
        return
    cat = load_catalog(st.settings.catalog_file)
    ids = resolve_gpu_query(gpu) if gpu else list(cat)
    rows: list[dict[str, Any]] = [cat[i].as_json() for i in ids if i in cat]
    if fmt is Format.csv:
        rows = [{**r, "sources": " ".join(r["sources"])} for r in rows]
    emit(rows, fmt, columns=CATALOG_COLUMNS, title="GPU catalog (FP16 = tensor, FP32 accumulate; TFLOPS)", wide=wide,
         only=columns)


@catalog_app.command("resolve")
def resolve(
    ctx: typer.Context,
    names: Annotated[list[str], typer.Argument(help="Raw GPU names or instance types as providers write them.")],
    memory_gb: Annotated[float | None, typer.Option("--memory-gb", callback=finite, help="Memory per GPU, to tell 40 GB from 80 GB parts.")] = None,
    provider: Annotated[str | None, typer.Option("--provider", "-p", help="Provider, for its instance-type table.")] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
) -> None:
    """Print the canonical GPU (or null) for each raw name; never a guess."""
    from tracker.catalog.specs import load_catalog, resolve_gpu

    cat = load_catalog(state(ctx).settings.catalog_file)
    rows = [{"raw": n, "gpu": resolve_gpu(n, memory_gb, provider=provider, catalog=cat)} for n in names]
    emit(rows, fmt, columns=[("raw", "raw"), ("gpu", "gpu")])


@app.command()
def value(
    ctx: typer.Context,
    basis: Annotated[str, typer.Option("--basis", "-b", help=f"TFLOPS basis: {', '.join(BASES)}.")] = DEFAULT_BASIS,
    gpu: Annotated[list[str] | None, typer.Option("--gpu", "-g", help="Families or ids (repeatable).")] = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help=KIND_HELP)] = None,
    provider: Annotated[list[str] | None, typer.Option("--provider", "-p", help="Only these providers (repeatable).")] = None,
    price: Annotated[float | None, typer.Option("--price", callback=finite, help="Compute for this USD/GPU-hour instead of stored prices (needs one --gpu).")] = None,
    tflops: Annotated[float | None, typer.Option("--tflops", callback=finite, help="Use this TFLOPS figure instead of the catalog's (basis 'user').")] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
    at: AtOption = None,
    include_stale: StaleOption = False,
    gpus: GpusOption = None,
    min_gpu_memory: MinGpuMemoryOption = None,
    max_price: MaxPriceOption = None,
    available: Annotated[bool, typer.Option("--available", help="Only offers their provider lists as available now.")] = False,
    max_age: MaxAgeOption = None,
) -> None:
    """Rank GPUs by cost per TFLOP-hour on an explicit basis (cheapest offer and median across providers).

    --gpus, --min-gpu-memory, --max-price, --available and --max-age narrow the offers as they
    narrow `prices` (a GPU none of whose offers pass is left out).

    Like the API and the dashboard, it considers on-demand and community prices unless
    --kind says otherwise (--kind spot, --kind all); the title and every row say which.

    --at ranks the prices in effect then; a note says when the newest data is too old to be current.
    """
    from tracker.catalog.specs import load_catalog

    st = state(ctx)
    basis = check_basis(basis)
    cat = load_catalog(st.settings.catalog_file)
    ids = sorted({i for g in gpu or [] for i in (resolve_gpu_query(g) or [])}) or None
    kinds = chosen_kinds(kind)
    covered = kinds_text(kinds)
    if price is not None:
        if not ids or len(ids) != 1:
            raise ConfigError("--price needs exactly one GPU (--gpu H100-SXM)")
        rows = [value_for(ids[0], price, cat.get(ids[0]), basis, tflops).as_json()]
        covered = f"at {price:g} USD per GPU-hour"
    else:
        if tflops is not None:
            raise ConfigError("--tflops goes with --price")
        from db.reads import latest_prices
        from tracker.analysis.aggregators import market_prices
        from tracker.reads.offers import GpuCount

        when = parse_at(at)
        # the store's own driver when it is current (``State.reader``), as ``prices`` reads
        provider = check_providers(st.reader, provider)
        offers = latest_prices(st.reader, at=when, gpus=ids, providers=provider, kinds=kinds, include_unmapped=False,
                               include_stale=include_stale)
        count = GpuCount.parse(gpus) if gpus is not None else None
        offers = narrow_offers(st, offers, count, min_gpu_memory, max_price, available, max_age)
        usd = [o for o in offers if o["currency"] == "USD" and o["gpu"]]
        cheapest: dict[str, dict[str, Any]] = {}
        counts: dict[str, int] = {}
        for o in usd:  # already sorted cheapest first
            cheapest.setdefault(o["gpu"], o)
            counts[o["gpu"]] = counts.get(o["gpu"], 0) + 1
        rows = []
        for r in value_table(market_prices(usd), cat, basis, counts):
            best = cheapest[r.gpu]
            rows.append({**r.as_json(), "cheapest_provider": best["provider"], "cheapest_region": best["region"],
                         "cheapest_kind": best["kind"], "kinds": ",".join(kinds) if kinds else "all",
                         "age_s": best["age_s"], "source": best["source"]})
        if fmt in (Format.table, Format.tsv):  # JSON and CSV carry the age in seconds (age_s)
            rows = [{**r, "age": None if r["age_s"] is None else duration_text(r["age_s"])} for r in rows]
    emit(rows, fmt, title=f"value on basis {basis}, {covered}", wide=wide, only=columns, columns=[
        ("gpu", "gpu"), ("tflops", f"TFLOPS ({basis})"), ("price_per_gpu_hour", "cheapest $/GPU-h"),
        ("cost_per_tflop_hour", column_header(basis), ESSENTIAL), ("cheapest_provider", "at", ESSENTIAL),
        ("cheapest_kind", "kind", ESSENTIAL), ("median_price_per_gpu_hour", "median $/GPU-h"),
        ("median_cost_per_tflop_hour", "median " + column_header(basis)), ("vram_gb", "VRAM GB"),
        ("usd_per_gb_vram_hour", "$/GB-VRAM-h"), ("offers", "offers"), ("age", "age"), ("source", "source"),
        ("cheapest_region", "region", WIDE),
    ])
    if price is None and parse_at(at) is None:
        warn_if_stale(st, provider)

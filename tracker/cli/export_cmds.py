"""``gpu-tracker export``: prices (and, for Parquet, price intervals) in FOCUS, OpenCost and
Parquet form. The rows come from the API's read path; ``tracker.export`` writes them. Writers
and pyarrow are imported only when the command runs."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from tracker.cli import app
from tracker.cli.common import err_console, state
from tracker.cli.options import (
    GPU_HELP,
    ProvidersOption,
    RegionsOption,
    check_providers,
    resolve_gpu_query,
)
from tracker.errors import ConfigError


class ExportFormat(str, Enum):
    focus = "focus"
    opencost = "opencost"
    parquet = "parquet"
    csv = "csv"


@app.command()
def export(
    ctx: typer.Context,
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="focus (FOCUS SKU Price CSV + metadata), opencost (pricing CSV), parquet, or csv (--table index: the index CSV + metadata).")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (opencost: standard output when omitted).", dir_okay=False)] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help=GPU_HELP)] = None,
    provider: ProvidersOption = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="on-demand, spot, community, reserved or all (default: all; opencost: on-demand).")] = None,
    region: RegionsOption = None,
    table: Annotated[str, typer.Option("--table", help="parquet: prices (latest price per offer), history (stored USD price intervals) or index (the rental index; csv too).")] = "prices",
    since: Annotated[str | None, typer.Option("--since", help="parquet history: intervals in effect since (30d, 1y, an ISO date; default all); index: default 90d.")] = None,
    method: Annotated[str, typer.Option("--method", help="index: median-of-medians-1 or ewyluda-1.3.")] = "median-of-medians-1",
    every: Annotated[str, typer.Option("--every", help="index: 1d or 1h.")] = "1d",
    asset_class: Annotated[str, typer.Option("--asset-class", help="opencost: gpu (price per GPU-hour per GPU model) or node (per instance type and region).")] = "gpu",
) -> None:
    """Export current prices for other tools: FOCUS, OpenCost/Kubecost, Parquet.

    focus writes the FOCUS SKU Price dataset (1.5 working draft columns; spot rows have
    x_Spot=true) and FILE.metadata.json with the FOCUS version followed. opencost writes the
    CSV pricing file OpenCost's CSV provider reads. parquet writes typed columns: --table
    prices, or --table history for the stored price intervals. --table index writes the rental
    index (parquet, or csv with FILE.metadata.json), its method and version in the metadata.
    """
    try:
        _export(ctx, fmt, output, gpu, provider, kind, region, table, since, asset_class, method, every)
    except OSError as exc:
        if output is None or exc.filename:
            raise
        # the writers (csv, pyarrow) say what went wrong but not where: name the file
        raise OSError(exc.errno, exc.strerror or str(exc), str(output)) from exc


def _export(ctx: typer.Context, fmt: ExportFormat, output: Path | None, gpu: str | None, provider: list[str] | None,
            kind: list[str] | None, region: list[str] | None, table: str, since: str | None, asset_class: str,
            method: str, every: str) -> None:
    from tracker.reads import data

    st = state(ctx)
    if fmt is not ExportFormat.opencost and output is None:
        raise ConfigError(f"--output: {fmt.value} needs a file to write "
                          f"(-o prices.{'parquet' if fmt is ExportFormat.parquet else 'csv'})")
    if table not in ("prices", "history", "index") or (table == "history" and fmt is not ExportFormat.parquet) or (
            table == "index" and fmt not in (ExportFormat.parquet, ExportFormat.csv)):
        raise ConfigError(f"--table: {table!r} is not one of prices, history (parquet only), index (parquet or csv)")
    if fmt is ExportFormat.csv and table != "index":
        raise ConfigError("--format csv: writes the index (--table index); prices are `gpu-tracker prices --format csv`")
    if asset_class not in ("gpu", "node"):
        raise ConfigError(f"--asset-class: {asset_class!r} is not one of gpu, node")
    resolve_gpu_query(gpu)  # the CLI's own wording (did-you-mean) for a bad filter
    provider = check_providers(st.reader, provider)
    web = data.ReadContext.create(st.settings, st.engine)
    # an export is a data set whose rows each say their kind: every kind unless --kind narrows it
    # (OpenCost prices nodes on demand); the answers to "what does it cost now" default to DEFAULT_KINDS
    kinds = kind or (["on_demand"] if fmt is ExportFormat.opencost else ["all"])
    if fmt is ExportFormat.parquet and table == "history":
        from db.spans import utcnow
        from tracker.analysis.frames import load_intervals
        from tracker.analysis.grid import Filters
        from tracker.export import parquet

        filters = Filters.of(gpus=data.resolve_gpus(web, gpu), providers=data.check_providers(provider), regions=region,
                             kinds=data.normalise_kinds(kinds))
        intervals = load_intervals(st.reader, filters, since=data.parse_since(since, utcnow()), tolerance=web.tolerance)
        assert output is not None
        n = parquet.write(parquet.history_table(intervals), output)
        err_console.print(f"wrote {n:,} price intervals to {output}", highlight=False)
        return
    if table == "index":
        from tracker.export import index as index_export

        if provider or region:
            raise ConfigError("--table index: the index is taken across every provider and region; "
                              "leave --provider and --region out")
        assert output is not None
        result = data.index(web, gpu=gpu, since=since or "90d", every=every, kinds=kind, method=method)
        if fmt is ExportFormat.csv:
            meta = index_export.write_csv(result, output)
            err_console.print(f"wrote {len(result.rows):,} index values to {output} ({result.method}; metadata {meta})",
                              highlight=False)
        else:
            n = index_export.write_parquet(result, output)
            err_console.print(f"wrote {n:,} index values to {output} ({result.method})", highlight=False)
        return
    rows = data.prices(web, gpu=gpu, providers=provider, kinds=kinds, regions=region)
    if fmt is ExportFormat.focus:
        from scrapers.registry import all_scrapers
        from tracker.export import focus

        assert output is not None
        names = {n: cls.display_name for n, cls in all_scrapers().items()}
        _, meta = focus.write(rows, output, names)
        err_console.print(f"wrote {len(rows):,} SKU prices to {output} (FOCUS {focus.FOCUS_VERSION}; metadata {meta})",
                          highlight=False)
    elif fmt is ExportFormat.opencost:
        from tracker.export import opencost

        n = opencost.write(rows, output or sys.stdout, asset_class)
        if output is not None:
            err_console.print(f"wrote {n:,} {asset_class} prices to {output}", highlight=False)
    else:
        from tracker.export import parquet

        assert output is not None
        n = parquet.write(parquet.prices_table(rows), output)
        err_console.print(f"wrote {n:,} prices to {output}", highlight=False)

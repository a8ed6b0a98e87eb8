"""The rental index: ``index`` (values per bucket by a named method) and ``index verify`` (the
roll-up's answer recomputed from the raw intervals). Presentation only: the numbers come from
``tracker.analysis.index``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tracker.cli import app
from tracker.cli.common import Format, console, emit, print_notes, state
from tracker.cli.options import (
    GPU_HELP,
    ColumnsOption,
    FormatOption,
    WideOption,
    resolve_gpu_query,
)
from tracker.cli.render import ESSENTIAL

#: Method names, repeated here so ``--help`` imports no analysis (a test keeps them equal).
METHOD_NAMES = ("median-of-medians-1", "ewyluda-1.3")

index_app = typer.Typer(help="The GPU rental index: one number per GPU and bucket for what the market charges, "
                             "by a named, versioned method.")
app.add_typer(index_app, name="index")

SinceOption = Annotated[str, typer.Option("--since", help="How far back: 24h, 30d, 12w, 3m, 1y, an ISO date, or all.")]
UntilOption = Annotated[str | None, typer.Option("--until", help="End of the range (ISO date-time, UTC); default now.")]

METHOD_1_TABLE = [("time", "time", ESSENTIAL), ("gpu", "gpu", ESSENTIAL), ("index", "index", ESSENTIAL),
                  ("providers", "providers", ESSENTIAL), ("thin", "thin", ESSENTIAL), ("q1", "q1"), ("q3", "q3"),
                  ("iqr", "IQR"), ("min", "min"), ("max", "max"), ("offers", "offers"), ("kinds", "kinds")]
EWYLUDA_TABLE = [("time", "time", ESSENTIAL), ("gpu", "gpu", ESSENTIAL), ("series", "series", ESSENTIAL),
                 ("value", "value", ESSENTIAL), ("providers", "providers", ESSENTIAL), ("carried", "carried forward")]
VERIFY_TABLE = [("time", "time", ESSENTIAL), ("gpu", "gpu", ESSENTIAL), ("provider", "provider", ESSENTIAL),
                ("kind", "kind"), ("via", "via"), ("what", "what", ESSENTIAL), ("rollup", "roll-up", ESSENTIAL),
                ("raw", "raw", ESSENTIAL)]


def _range(since: str, until: str | None) -> tuple[Any, Any]:
    from db.spans import parse_when, utcnow
    from tracker.analysis.grid import since_time

    end = parse_when(until) if until else utcnow()
    if since.strip().lower() == "all":
        return None, end  # from the first stored day
    start = since_time(since, end, f"--since: {since!r} is neither a span (24h, 30d, 12w, 3m, 1y), an ISO date "
                                   "nor all")
    return start, end


@index_app.callback(invoke_without_command=True)
def index(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help=GPU_HELP + " Default: every GPU.")] = None,
    since: SinceOption = "90d",
    until: UntilOption = None,
    every: Annotated[str, typer.Option("--every", help="Bucket: 1d (from the roll-up) or 1h (from raw intervals).")] = "1d",
    kind: Annotated[list[str] | None, typer.Option(
        "--kind", "-k", help="on-demand, spot, community, reserved or all (repeatable or commas; default on-demand "
                             "only: several kinds are one market only when asked).")] = None,
    method: Annotated[str, typer.Option("--method", "-m", help=f"{', '.join(METHOD_NAMES)}.")] = METHOD_NAMES[0],
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """The rental index per GPU and bucket: median-of-medians-1 (each provider's median price
    per GPU-hour observed in the bucket, then the median across providers, with the provider
    count, IQR and range; fewer than 3 providers is thin) or ewyluda-1.3 (the published
    ewyluda/gpu-price-index method: index, segment and spot series, rounded to the cent)."""
    if ctx.invoked_subcommand is not None:
        return
    from tracker.analysis.index import rental_index
    from tracker.kinds import normalise_kinds

    st = state(ctx)
    start, end = _range(since, until)
    kinds = normalise_kinds(kind) if kind else None
    result = rental_index(st.reader, resolve_gpu_query(gpu), method=method, kinds=kinds, kinds_given=bool(kind),
                          since=start, until=end, resolution=every)
    print_notes(result.notes)
    table = EWYLUDA_TABLE if result.method == "ewyluda-1.3" else METHOD_1_TABLE
    kinds_text = "every kind" if result.kinds is None else ", ".join(k.replace("_", "-") for k in result.kinds)
    emit(result.rows, fmt, columns=table, wide=wide, only=columns,
         title=f"GPU rental index ({result.method}, USD per GPU-hour, per {result.resolution.value}; {kinds_text}; "
               f"from the {result.source})")


@index_app.command("verify")
def verify(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help=GPU_HELP + " Default: every GPU.")] = None,
    since: SinceOption = "90d",
    until: UntilOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Recompute the daily index of a range from the raw intervals and compare it with what the
    roll-up answers: every provider's group (median, offers, prices) and the index values. Exit 1
    when anything differs (rebuild with `gpu-tracker rollups rebuild`)."""
    from tracker.analysis.index import verify as run_verify

    st = state(ctx)
    start, end = _range(since, until)
    result = run_verify(st.reader, resolve_gpu_query(gpu), since=start, until=end)
    print_notes(result.notes)
    summary = (f"{result.groups} provider groups and {result.values} index values from "
               f"{result.since:%Y-%m-%d} to {result.until:%Y-%m-%d}: ")
    if fmt is not Format.table:
        emit(result.differences, fmt, columns=VERIFY_TABLE)
    elif result.ok:
        console.print(summary + "the roll-up equals the raw intervals", highlight=False, soft_wrap=True)
    else:
        emit(result.differences, fmt, columns=VERIFY_TABLE, title=summary + f"{len(result.differences)} differences")
    if not result.ok:
        raise typer.Exit(1)

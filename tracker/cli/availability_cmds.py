"""``gpu-tracker availability``: how often a GPU could be rented, per provider and region. Presentation
only: the figures come from ``tracker.analysis.availability``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tracker.cli import app
from tracker.cli.analysis_cmds import GPU_HELP, UntilOption, _filters, _since
from tracker.cli.common import Format, emit, state
from tracker.cli.options import (
    ColumnsOption,
    FormatOption,
    KindsOption,
    ProvidersOption,
    RegionsOption,
    WideOption,
)
from tracker.cli.render import ESSENTIAL

#: The table's columns (JSON and CSV carry every key of ``Availability.row``).
AVAILABILITY_TABLE = [
    ("provider", "provider", ESSENTIAL), ("region", "region", ESSENTIAL), ("available_pct", "available %", ESSENTIAL),
    ("longest_unavailable_h", "longest unavailable h", ESSENTIAL), ("longest_unavailable_from", "from"),
    ("last_available", "last available", ESSENTIAL), ("observed_h", "observed h"), ("offers", "offers"),
]


def shown(row: dict[str, Any]) -> dict[str, Any]:
    """A row for the table: a group whose provider never stated stock reads ``unknown``, never 0 %."""
    if row["available_pct"] is not None:
        return {**row, "last_available": row["last_available"] or "never"}
    return {**row, "available_pct": "unknown", "longest_unavailable_h": "unknown", "last_available": "unknown"}


@app.command()
def availability(
    ctx: typer.Context,
    gpu: Annotated[str, typer.Option("--gpu", "-g", help=GPU_HELP)],
    provider: ProvidersOption = None,
    region: RegionsOption = None,
    kind: KindsOption = None,
    since: Annotated[str, typer.Option("--since", help="How far back: 24h, 30d, 12w, 3m, 1y, or an ISO date.")] = "30d",
    until: UntilOption = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
) -> None:
    """How available a GPU was, per provider and region: the share of observed time at least one
    offer was listed as available, the longest unavailable stretch (hours, and when it began) and
    when one was last available.

    Only what providers state counts: a provider that says nothing about stock shows "unknown",
    never unavailable, and a failed or missing collection is a gap, not unavailability.
    """
    from db.spans import parse_when, utcnow
    from tracker.analysis.availability import availability as run_availability

    st = state(ctx)
    end = parse_when(until) if until else utcnow()
    f = _filters(gpu, provider, kind, region, st)
    found = run_availability(st.reader, f.gpus or [], _since(since, end) or end, end, providers=f.providers,
                             kinds=f.kinds, regions=f.regions)
    rows = [a.row() for a in found]
    emit(rows if fmt is not Format.table else [shown(r) for r in rows], fmt, columns=AVAILABILITY_TABLE,
         title=f"{gpu} availability since {since}", wide=wide, only=columns)

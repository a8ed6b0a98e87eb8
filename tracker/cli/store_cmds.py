"""``gpu-tracker rollups``: rebuild the hourly/daily roll-ups, prune raw intervals past retention."""

from __future__ import annotations

from typing import Annotated

import typer

from tracker.cli import app
from tracker.cli.common import console, state

rollups_app = typer.Typer(help="The hourly/daily roll-ups long-range history reads, and raw-interval retention.",
                          no_args_is_help=True)
app.add_typer(rollups_app, name="rollups")


@rollups_app.command("rebuild")
def rebuild(ctx: typer.Context) -> None:
    """Recompute every roll-up from the stored raw intervals (after an import or a migration).

    Buckets older than the retention horizon keep their roll-ups: their raw intervals are gone.
    """
    from tracker.pipeline.retention import rebuild_rollups

    written = rebuild_rollups(state(ctx).writer_engine)
    console.print(f"rebuilt {written:,} roll-up rows")


@rollups_app.command("prune")
def prune(
    ctx: typer.Context,
    raw_days: Annotated[int | None, typer.Option("--raw-days", min=1, help="Days of raw intervals to keep (default: retention.raw_days, 365).")] = None,
) -> None:
    """Delete raw intervals older than retention.raw_days; the roll-ups keep their buckets forever.

    The collector does this once a day by itself; history crossing the horizon gives the same
    answer as before for every whole bucket.
    """
    from tracker.pipeline.retention import prune_raw

    st = state(ctx)
    deleted, horizon = prune_raw(st.writer_engine, raw_days or st.settings.retention.raw_days)
    console.print(f"deleted {deleted:,} raw intervals; raw history now starts {horizon:%Y-%m-%d}")

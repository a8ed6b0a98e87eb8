"""``gpu-tracker import``: history on day one from this project's exports and public archives.
Presentation only: reading and storing is ``tracker.pipeline.imports``."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from tracker.cli import app
from tracker.cli.common import Format, emit, err_console, key_values, state
from tracker.errors import ConfigError
from tracker.pipeline.imports import FORMAT_NAMES

#: Skipped rows printed one by one; the rest are counted.
SHOW_BAD_ROWS = 25


def _max_gap(text: str | None) -> timedelta | None | str:
    if text is None:
        return "default"
    if text.strip().lower() in ("none", "off", "0"):
        return None
    from tracker.analysis.grid import parse_span

    try:
        return parse_span(text)
    except ConfigError:
        raise ConfigError(f"--max-gap: {text!r} is not a span like 45m... use hours: 1h, 30h, 2d, or none") from None


def _split(values: list[str] | None) -> list[str]:
    return [p.strip() for v in values or [] for p in v.split(",") if p.strip()]


@app.command("import")
def import_cmd(
    ctx: typer.Context,
    sources: Annotated[list[str], typer.Argument(
        help=f"[FORMAT] PATH ...: files to import (format detected), or a format name first ({', '.join(FORMAT_NAMES)}).",
        metavar="[FORMAT] PATH...")],
    provider: Annotated[str | None, typer.Option("--provider", "-p", help="Provider name for a single SkyPilot vms.csv (e.g. aws, lambda).")] = None,
    observed_at: Annotated[str | None, typer.Option("--observed-at", help="When a single SkyPilot file's prices were current (ISO date-time, UTC).")] = None,
    cloud: Annotated[list[str] | None, typer.Option("--cloud", help="skypilot-git: clouds to read, comma-separated (lambda,runpod,aws).")] = None,
    catalog_version: Annotated[str | None, typer.Option("--catalog-version", help="skypilot-git: catalogs/<version> to read (default: the newest at HEAD).")] = None,
    max_gap: Annotated[str | None, typer.Option("--max-gap", help="Archive formats: snapshots further apart than this have a gap between them (default per format: tugot17 1h, ewyluda 30h, opencomputeprices 48h, skypilot-git none; a series whose own snapshots come further apart takes 1.5 times its median spacing).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse everything if any row is bad (default: skip bad rows).")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Summary format.")] = Format.table,
) -> None:
    """Import price history in one transaction: own CSV exports, tugot17 JSONL, ewyluda CSVs, a SkyPilot catalog clone.

    Every observation goes through the same normalise/validate path as a scrape. One file or
    many, in one command or several, in any order (newest first too), give the same history;
    importing again changes nothing. Snapshots further apart than the archive's cadence allows
    (--max-gap) have a gap between them, never an interval across it. Bad rows are reported by
    file and line number and skipped; future timestamps are refused; GPU names the catalog
    cannot resolve are stored raw and listed. Other trackers' provider names map through one
    alias table (lambdalabs -> lambda); providers without a scraper are stored as external.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from db.spans import parse_when
    from tracker.catalog.specs import load_catalog
    from tracker.pipeline.imports import import_files

    st = state(ctx)
    words = list(sources)
    data_format = None
    if words and words[0] in FORMAT_NAMES and not Path(words[0]).exists():
        data_format = words.pop(0)
    if not words:
        raise ConfigError("import: name at least one file (or, for skypilot-git, the clone's folder)")
    paths = [Path(w) for w in words]
    with Progress(TextColumn("[bold]import[/bold] {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task(", ".join(w for w in words[:2]) + (" ..." if len(words) > 2 else ""), total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = import_files(
            st.writer_engine, paths, fmt=data_format, provider=provider,
            observed_at=parse_when(observed_at) if observed_at else None, clouds=_split(cloud),
            version=catalog_version, max_gap=_max_gap(max_gap), currency_rates=st.settings.currency_rates,
            catalog=load_catalog(st.settings.catalog_file), strict=strict, progress=progress,
        )
    for bad in result.bad_rows[:SHOW_BAD_ROWS]:
        where = "" if bad.file else f"{result.file} "
        err_console.print(f"[yellow]skipped[/yellow] {where}{bad}", highlight=False, soft_wrap=True)
    if result.bad_total > SHOW_BAD_ROWS:
        err_console.print(f"[yellow]skipped[/yellow] {result.bad_total - SHOW_BAD_ROWS} more bad rows",
                          highlight=False)
    for warning in result.warnings():
        err_console.print(f"[yellow]warning[/yellow] {warning}", highlight=False, soft_wrap=True)
    if result.unmapped:
        err_console.print("[yellow]unmapped GPU names[/yellow] (stored raw; extend the catalog or see "
                          f"`gpu-tracker catalog --unmapped`): {', '.join(sorted(result.unmapped))}",
                          highlight=False, soft_wrap=True)
    summary = result.summary()
    if fmt is Format.table:
        key_values(summary, title="import")
    else:
        emit([summary], fmt)

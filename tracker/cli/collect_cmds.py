"""Commands that collect and show current prices: scrape, prices, providers, info."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tracker.cli import app
from tracker.cli.common import Format, State, console, emit, err_console, state
from tracker.cli.options import (
    ColumnsOption,
    FormatOption,
    GpusOption,
    MaxAgeOption,
    MaxPriceOption,
    MinGpuMemoryOption,
    ProvidersOption,
    WideOption,
    check_providers,
    kind_names,
    narrow_offers,
    resolve_gpu_query,  # re-exported: other command modules import it from here
)
from tracker.cli.render import ESSENTIAL
from tracker.cli.timetravel import AtOption, StaleOption, parse_at, warn_if_stale
from tracker.errors import ConfigError
from tracker.kinds import (
    normalise_kinds,  # re-exported: catalog_cmds and analysis_cmds import it from here
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from tracker.config.settings import Settings
    from tracker.pipeline.collect import RunResult

__all__ = ["normalise_kinds", "resolve_gpu_query"]


def _summary_rows(results: list[RunResult]) -> list[dict[str, object]]:
    return [
        {
            "provider": r.provider,
            "status": r.status,
            "offers": r.offers_seen,
            "new_offers": r.new_offers,
            "changed": r.prices_changed,
            "quarantined": r.quarantined,
            "unmapped": r.unmapped,
            "duration_s": round(r.duration_s, 2),
            "error": f"{r.error_class}: {r.error_message}" if r.error_class else None,
        }
        for r in results
    ]


@app.command()
def scrape(
    ctx: typer.Context,
    provider: Annotated[list[str] | None, typer.Option("--provider", "-p", help="Only these providers (repeatable).")] = None,
    replay: Annotated[bool, typer.Option("--replay", help="Answer every request from recordings instead of the network.")] = False,
    replay_dir: Annotated[Path | None, typer.Option("--replay-dir", help="Recordings directory for --replay (default: the bundled recordings).", file_okay=False, exists=True)] = None,
    no_alerts: Annotated[bool, typer.Option("--no-alerts", help="Do not evaluate the alert rules after collecting.")] = False,
    mix_replay: Annotated[bool, typer.Option("--mix-replay", help="Allow replayed and live prices in one store (refused otherwise): for a scratch store, never a live one, whose history would keep the recordings.")] = False,
    record_dir: Annotated[Path | None, typer.Option("--record", metavar="DIR", help="Also save every provider's answers under DIR as replay recordings (secrets replaced), one folder per provider.", file_okay=False)] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Summary format.")] = Format.table,
) -> None:
    """Collect prices now from every enabled provider (or --provider ones) and store them.

    Replayed and live prices never share a store unless --mix-replay: a replay into a store that
    holds live prices (or a live scrape into one filled by a replay) is refused with what to do.

    --record DIR makes the real requests and saves each provider's answers as DIR/<provider>/
    (manifest.json and the bodies, the layout --replay-dir reads: no credential, token or key
    in them); a provider whose collection failed keeps its old recording.

    Then, as `run` does, the alert rules are evaluated and their messages sent (unless
    --no-alerts or no provider succeeded). Exit code 1 when any provider failed (skipped
    ones, without credentials, do not count).
    """
    from scrapers.registry import all_scrapers
    from tracker.pipeline.collect import collect
    from tracker.pipeline.replay import BUNDLED_RECORDINGS

    if provider:  # a retired provider asked for by name: one line saying so, before anything starts
        from scrapers.registry import get_scraper
        from tracker.pipeline.collect import check_active

        check_active(get_scraper(n) for n in provider)
    use_replay = replay or replay_dir is not None
    if record_dir is not None and use_replay:
        raise ConfigError("--record makes the real requests: it cannot be combined with --replay")
    st = state(ctx)
    engine = st.collector_engine
    refuse_mixing(st, engine, replay=use_replay, allowed=mix_replay)
    names = list(provider) if provider else None
    if use_replay and not names:
        directory = replay_dir or BUNDLED_RECORDINGS
        names = [n for n, cls in all_scrapers().items()
                 if cls.retired is None and (directory / n / "manifest.json").is_file()]
        if not names:
            raise ConfigError(f"--replay: no recordings found under {directory}")
    if fmt is Format.table:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                      transient=True) as progress:
            tasks: dict[str, int] = {}

            def on_progress(name: str, step: str) -> None:
                if name not in tasks:
                    tasks[name] = progress.add_task(f"{name}: {step}", total=None)
                progress.update(tasks[name], description=f"{name}: {step}")

            results = collect(engine, st.settings, names, replay=use_replay, replay_dir=replay_dir, on_progress=on_progress,
                              record_dir=record_dir)
    else:
        results = collect(engine, st.settings, names, replay=use_replay, replay_dir=replay_dir, record_dir=record_dir)
    emit(_summary_rows(results), fmt, title="scrape summary", columns=[
        ("provider", "provider"), ("status", "status"), ("offers", "offers"), ("new_offers", "new"),
        ("changed", "changed"), ("quarantined", "quarantined"), ("unmapped", "unmapped"),
        ("duration_s", "seconds"), ("error", "error"),
    ])
    if record_dir is not None:
        saved = [r.provider for r in results if r.extra.get("recorded")]
        err_console.print(f"recorded {len(saved)} provider(s) under {record_dir}: {', '.join(saved) or 'none'}",
                          highlight=False, markup=False, soft_wrap=True)
    if not no_alerts and any(r.ok for r in results):
        _after_scrape(st.engine, st.settings, results)
    if any(r.status == "failed" for r in results):
        raise typer.Exit(1)


def refuse_mixing(st: State, engine: Engine, *, replay: bool, allowed: bool) -> None:
    """Stop a collection that would put replayed and live prices in one store, unless ``allowed``
    (``tracker.pipeline.replay.mixing_refusal`` says why it matters)."""
    if allowed:
        return
    from db.engine import mask_url
    from tracker.pipeline.replay import mixing_refusal

    reason = mixing_refusal(engine, replay=replay, store=mask_url(st.database_url))
    if reason:
        raise ConfigError(reason)


def _after_scrape(engine: Engine, settings: Settings, results: list[RunResult]) -> None:
    """The hooks `run` runs after each collection (alerts first); one line on stderr says what they did."""
    from tracker.service.hooks import run_hooks

    report = run_hooks(engine, settings, results)
    fired = sorted({rule for _, value in report.values for rule in getattr(value, "fired", ()) or ()})
    evaluated = sum(len(getattr(value, "evaluations", ()) or ()) for _, value in report.values)
    if evaluated or report.alerts_sent or report.failures:
        parts = [f"{evaluated} rule(s) checked", f"fired: {', '.join(fired)}" if fired else "none fired",
                 f"{report.alerts_sent} message(s) sent"]
        if report.failures:
            parts.append(f"failed: {', '.join(name for name, _ in report.failures)}")
        err_console.print(f"alerts: {'; '.join(parts)}", highlight=False, markup=False, soft_wrap=True)


PRICE_COLUMNS = [
    ("gpu", "gpu"), ("provider", "provider"), ("kind", "kind"), ("price_per_gpu_hour", "$/GPU-h"),
    ("region", "region"), ("source", "source"), ("age", "age"), ("gpu_count", "GPUs"), ("price_per_hour", "per hour"),
    ("vcpus", "vCPU"), ("ram_gb", "RAM GB"), ("currency", "cur"), ("gpu_raw", "raw name"), ("observed_at", "observed"),
    ("stock", "available"),
]
#: ``prices --group-by``: one row per group with its price range.
GROUP_COLUMNS = [
    ("gpu", "gpu", ESSENTIAL), ("provider", "provider", ESSENTIAL), ("kind", "kind", ESSENTIAL),
    ("min_price_per_gpu_hour", "min $/GPU-h", ESSENTIAL), ("median_price_per_gpu_hour", "median", ESSENTIAL),
    ("max_price_per_gpu_hour", "max", ESSENTIAL), ("offers", "offers"), ("providers", "providers"),
    ("cheapest_provider", "cheapest at"), ("oldest", "oldest"), ("sources", "sources"),
]


def stock_text(row: dict[str, Any]) -> str:
    """An offer's availability as the table says it: ``yes (16 free)``, ``yes``, ``no``, or ``?`` when
    its provider does not say (unknown, never "no")."""
    if row.get("available") is None:
        return "?"
    if not row["available"]:
        return "no"
    count = row.get("available_count")
    return "yes" if count is None else f"yes ({count} free)"


@app.command()
def prices(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help="A family (H100 = every H100 variant) or a canonical id (H100-SXM).")] = None,
    provider: ProvidersOption = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="on-demand, spot, community or reserved (repeatable).")] = None,
    region: Annotated[list[str] | None, typer.Option("--region", "-r", help="Provider region code (repeatable).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="Show at most N rows.")] = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
    at: AtOption = None,
    include_stale: StaleOption = False,
    gpus: GpusOption = None,
    min_gpu_memory: MinGpuMemoryOption = None,
    max_price: MaxPriceOption = None,
    available: Annotated[bool, typer.Option("--available", help="Only offers their provider lists as available now (an offer whose provider states no stock is left out).")] = False,
    max_age: MaxAgeOption = None,
    group_by: Annotated[str | None, typer.Option("--group-by", metavar="KEYS", help="One row per gpu, provider or kind (comma-separated, e.g. gpu,provider) with its price range.")] = None,
) -> None:
    """The latest price of every offer on sale, cheapest per GPU-hour first (--at: as of then).

    Narrow it as with `dstack offer` or `sky show-gpus`: --gpus 8 (or --gpu H100:8),
    --min-gpu-memory 80, --max-price 2.5, --available, --max-age 6h; --group-by gpu
    (or gpu,provider) gives each group's offers and lowest, median and highest price.

    A provider whose newest collection is older than its staleness limit (three collection
    intervals) is history, not "now": it is left out unless --include-stale; when nothing is
    current, a note names the newest data's date, --at and --include-stale. Every row says its
    source (live, replay of a dated recording, import of an archive) and age.

    A terminal table shows GPU, provider, kind, $/GPU-h and region, and as many other
    columns as fit; --wide shows them all, --columns picks them.
    """
    from db.reads import conversions, latest_prices
    from tracker.reads.offers import (
        GROUP_KEYS,
        GpuCount,
        parse_group_by,
        split_gpu_spec,
    )

    st = state(ctx)
    gpu, count = split_gpu_spec(gpu)
    if gpus is not None:
        count = GpuCount.parse(gpus)
    grouping = parse_group_by(group_by)
    ids, kinds = resolve_gpu_query(gpu), normalise_kinds(kind)
    provider = check_providers(st.reader, provider)
    when = parse_at(at)
    rows = latest_prices(st.reader, at=when, gpus=ids, providers=provider, kinds=kinds, regions=region,
                         include_stale=include_stale)
    rows = narrow_offers(st, rows, count, min_gpu_memory, max_price, available, max_age)
    converted = conversions(rows)  # a group's range holds converted prices too: the note names them
    title = f"prices as of {when:%Y-%m-%d %H:%M} UTC" if when else "latest prices"
    title = f"{title}{f' for {gpu}' if gpu else ''}: {kind_names(kinds)}"
    if grouping:
        from tracker.reads.offers import group_rows

        rows = group_rows(rows, grouping)[:limit]
        if fmt in (Format.table, Format.tsv):
            rows = [{**r, "oldest": None if r["oldest_age_s"] is None else duration_text(r["oldest_age_s"])}
                    for r in rows]
        emit(rows, fmt, columns=[c for c in GROUP_COLUMNS if c[0] in grouping or c[0] not in GROUP_KEYS],
             title=f"{title}, by {', '.join(grouping)} (USD per GPU-hour)", wide=wide, only=columns)
    else:
        rows = rows[:limit]
        converted = conversions(rows)
        if fmt in (Format.table, Format.tsv):  # JSON and CSV carry the age in seconds (age_s) and the raw stock fields
            rows = [{**r, "age": None if r["age_s"] is None else duration_text(r["age_s"]), "stock": stock_text(r)}
                    for r in rows]
        emit(rows, fmt, columns=PRICE_COLUMNS, title=title, wide=wide, only=columns)
    for currency, rate, on, n in converted:  # JSON and CSV rows carry the rate and its date as fields
        err_console.print(f"[yellow]note:[/yellow] {n} price{'s' if n > 1 else ''} converted from {currency} to USD at "
                          f"{rate:g} USD per {currency} (rate of {on or 'an unknown day'})", highlight=False, soft_wrap=True)
    if when is None:
        warn_if_stale(st, provider)


def duration_text(seconds: float) -> str:
    """``90061`` -> ``"1.0d"``, ``5400`` -> ``"1.5h"``, ``42`` -> ``"42s"``: the largest unit it reaches."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def _age(ts: datetime | None) -> str | None:
    from db.spans import utcnow

    if ts is None:
        return None
    return duration_text((utcnow() - ts).total_seconds())


@app.command()
def providers(
    ctx: typer.Context,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    columns: ColumnsOption = None,
    failure: Annotated[str | None, typer.Option("--failure", metavar="NAME", help="Show the raw payload (secrets scrubbed) of NAME's newest collection that failed to parse.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="With --failure: save the payload to FILE instead of printing it.", dir_okay=False)] = None,
) -> None:
    """Every registered scraper: credentials, last run and status, failures in a row, data age.

    --failure NAME shows the payload of NAME's newest live collection whose parse failed (the
    last few are kept in the store, cut and with secrets scrubbed), or saves it with -o FILE.

    Retired providers (no longer collected; their stored history stays readable) follow the
    active ones, with the date and the reason; providers known only from imported history (no
    scraper) come last, marked external."""
    from db import reads
    from scrapers.registry import all_scrapers
    from tracker.pipeline.imports.aliases import external_providers

    st = state(ctx)
    if failure is not None:
        _show_failure(st, failure, output)
        return
    if output is not None:
        raise ConfigError("-o/--output saves a payload: use it with --failure NAME")
    # the store's own driver when it is current (``State.reader``); the scrapers' declarations
    # from their classes (cheap to import: the HTTP and HTML libraries load on first use)
    stored, runs = reads.providers(st.reader), reads.latest_run_per_provider(st.reader)
    scrapers = all_scrapers()
    external = external_providers(st.reader)
    rows = []
    # the active ones first, then the retired ones (no longer collected; their history stays readable)
    for name, cls in sorted(scrapers.items(), key=lambda item: (item[1].retired is not None, item[0])):
        env = st.settings.provider_env(name)
        missing = [n for n in cls.credentials if not env.get(n)]
        p = stored.get(name)
        last = runs.get(name)
        note = f"set {' and '.join(missing)} to enable" if missing else None
        if last is not None and last.status != "ok" and last.error_message:
            note = last.error_message
        retired = cls.retired
        if retired is not None:
            missing, note = [], f"retired since {retired.on.isoformat()}: {retired.reason}"
        rows.append({
            "provider": name,
            "display_name": cls.display_name,
            "enabled": st.settings.provider(name).enabled and retired is None,
            "credentials": ", ".join(cls.credentials) or None,
            "credentials_missing": bool(missing),
            "kinds": ", ".join(cls.kinds),
            "last_run": p.last_run_at if p else None,
            "status": "retired" if retired is not None else (p.last_status if p else None),
            "consecutive_failures": p.consecutive_failures if p else 0,
            "last_success": p.last_success_at if p else None,
            "data_age": _age(p.last_success_at) if p else None,
            "external": False,
            "retired": retired is not None,
            "retired_on": retired.on.isoformat() if retired is not None else None,
            "retired_reason": retired.reason if retired is not None else None,
            "note": note,
        })
    for name, p in sorted(external.items()):
        rows.append({
            "provider": name, "display_name": p.display_name or name, "enabled": False, "credentials": None,
            "credentials_missing": False, "kinds": None, "last_run": p.last_run_at, "status": "external",
            "consecutive_failures": 0, "last_success": p.last_success_at, "data_age": _age(p.last_success_at),
            "external": True, "retired": False, "retired_on": None, "retired_reason": None,
            "note": "external: known from imported history only (no scraper)",
        })
    emit(rows, fmt, title="providers", wide=wide, only=columns, columns=[
        ("provider", "provider"), ("status", "status"), ("data_age", "data age"), ("consecutive_failures", "failures"),
        ("credentials", "credentials"), ("last_run", "last run"), ("note", "note"),
    ])


def _show_failure(st: State, name: str, output: Path | None) -> None:
    """``providers --failure NAME``: the kept payload on stdout (a one-line header on stderr), or saved."""
    from tracker.pipeline.failures import latest

    kept = latest(st.engine, name)
    if kept is None:
        raise ConfigError(f"--failure: no failed parse of {name!r} is kept (only live collections whose parse "
                          "failed are; see `gpu-tracker providers` for the last status)")
    cut = f", cut to {len(kept.payload):,} of {kept.size:,} characters" if kept.truncated else ""
    header = (f"{name}: payload ({kept.encoding}, secrets scrubbed{cut}) of the collection that failed at "
              f"{kept.captured_at:%Y-%m-%d %H:%M:%S} UTC (run {kept.run_id}): {kept.error}")
    if output is not None:
        try:
            output.write_text(kept.payload, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"-o: cannot write {output}: {exc.strerror or exc}") from None
        err_console.print(f"saved to {output}: {header}", highlight=False, markup=False, soft_wrap=True)
        return
    err_console.print(header, highlight=False, markup=False, soft_wrap=True)
    import sys

    sys.stdout.write(kept.payload if kept.payload.endswith("\n") else kept.payload + "\n")


@app.command()
def info(
    ctx: typer.Context,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
) -> None:
    """Version, config file, database URL (password masked) and row counts."""
    from db.engine import mask_url
    from db.reads import row_counts
    from scrapers.registry import all_scrapers
    from tracker import __version__

    st = state(ctx)
    counts = row_counts(st.reader)
    data = {
        "version": __version__,
        "config": str(st.settings.source_path) if st.settings.source_path else None,
        "database": mask_url(st.database_url),
        "providers_registered": len(all_scrapers()),
        **{f"rows_{k}": v for k, v in counts.items()},
    }
    if fmt is Format.table:
        emit([{"key": k, "value": v} for k, v in data.items()], fmt, title="gpu-tracker info")
    else:
        emit([data], fmt)

"""Commands that keep collection running and configure it: run, status, config init/check/show."""

from __future__ import annotations

import json
import logging
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from tracker import logs
from tracker.cli import app
from tracker.cli.collect_cmds import _summary_rows, duration_text, refuse_mixing
from tracker.cli.common import Format, console, emit, err_console, state
from tracker.cli.render import cell, plain_value
from tracker.errors import ConfigError

log = logging.getLogger("tracker.service.scheduler")


class LogFormat(str, Enum):
    text = "text"
    json = "json"


class OutFormat(str, Enum):
    table = "table"
    json = "json"


@app.command()
def run(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="Run one full cycle of every selected provider and exit (exit code 1 if one failed).")] = False,
    provider: Annotated[list[str] | None, typer.Option("--provider", "-p", help="Only these providers (repeatable; default: every enabled one).")] = None,
    replay: Annotated[bool, typer.Option("--replay", help="Answer every request from recordings instead of the network.")] = False,
    replay_dir: Annotated[Path | None, typer.Option("--replay-dir", help="Recordings directory for --replay (default: the bundled recordings).", file_okay=False, exists=True)] = None,
    log_format: Annotated[LogFormat, typer.Option("--log-format", help="text, or json (one object per line) for log shippers.")] = LogFormat.text,
    mix_replay: Annotated[bool, typer.Option("--mix-replay", help="Allow replayed and live prices in one store (refused otherwise): for a scratch store, never a live one, whose history would keep the recordings.")] = False,
    fmt: Annotated[OutFormat, typer.Option("--format", "-f", help="Summary format of --once.")] = OutFormat.table,
) -> None:
    """Collect prices on schedule, in the foreground, until SIGINT or SIGTERM.

    Each provider runs on its own interval (hourly unless the config says otherwise), and the schedule is kept in the database.

    Only one `run` collects per database: a second one waits as a standby and takes over when the first one stops.

    Replayed and live prices never share a store unless --mix-replay (as for `scrape`).

    Logs one line per scrape on stderr. SIGINT/SIGTERM stops cleanly (exit 0); a second signal exits at once.
    """
    from db.engine import mask_url
    from tracker.service.scheduler import SchedulerService, plan_providers, run_once

    st = state(ctx)
    logs.configure(log_format.value, logging.DEBUG if st.debug else logging.INFO)
    settings = st.settings
    use_replay = replay or replay_dir is not None
    names = list(provider) if provider else None
    plans = plan_providers(settings, names, replay=use_replay, replay_dir=replay_dir)
    engine = st.collector_engine
    refuse_mixing(st, engine, replay=use_replay, allowed=mix_replay)
    if once:
        try:
            results = run_once(engine, settings, [p.name for p in plans], replay=use_replay, replay_dir=replay_dir)
        finally:
            engine.dispose()
        emit(_summary_rows(results), Format(fmt.value), title="run --once", columns=[
            ("provider", "provider"), ("status", "status"), ("offers", "offers"), ("new_offers", "new"),
            ("changed", "changed"), ("quarantined", "quarantined"), ("duration_s", "seconds"), ("error", "error"),
        ])
        if any(r.status == "failed" for r in results):
            raise typer.Exit(1)
        return
    service = SchedulerService(engine, settings, plans, replay=use_replay, replay_dir=replay_dir)
    service.install_signal_handlers()
    log.info("gpu-tracker run: pid %d, %d provider(s), database %s%s", os.getpid(), len(plans),
             mask_url(st.database_url), " (replay)" if use_replay else "")
    try:
        code = service.run()
    finally:
        engine.dispose()
    raise typer.Exit(code)


def _ago(ts: Any) -> str:
    from db.spans import utcnow

    if ts is None:
        return "-"
    seconds = (utcnow() - ts).total_seconds()
    text = duration_text(abs(seconds))
    return f"in {text}" if seconds < 0 else f"{text} ago"


def _interval(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


@app.command()
def status(
    ctx: typer.Context,
    fmt: Annotated[OutFormat, typer.Option("--format", "-f", help="Output format.")] = OutFormat.table,
    check: Annotated[bool, typer.Option("--check", help="Only exit 0 if a scheduler is active on this database, "
                                                         "1 if not (a container health check); prints one line.")] = False,
) -> None:
    """The schedule and its health: next run (and pending retry of a failed provider) and last result per provider, failures in a row, providers with no success in three intervals (stale), and whether a scheduler is active on this database and since when."""
    from db.engine import mask_url
    from tracker.service.status import provider_statuses, scheduler_state

    st = state(ctx)
    engine = st.engine
    try:
        if check:
            sched = scheduler_state(engine)
            console.print(f"scheduler: {'active' if sched['active'] else 'not active'}"
                          + (f" (pid {sched['pid']} on {sched['host']})" if sched["pid"] is not None else ""))
            raise typer.Exit(0 if sched["active"] else 1)
        rows = [s.as_dict() for s in provider_statuses(engine, st.settings)]
        sched = scheduler_state(engine)
    finally:
        engine.dispose()
    if fmt is OutFormat.json:
        data = {"database": mask_url(st.database_url), "scheduler": {k: plain_value(v) for k, v in sched.items()},
                "providers": [{k: plain_value(v) for k, v in r.items()} for r in rows]}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    if sched["active"]:
        console.print(f"scheduler: [green]active[/green] since {cell(sched['since'])} ({_ago(sched['since'])}), "
                      f"pid {sched['pid']} on {sched['host']}, last heartbeat {_ago(sched['heartbeat_at'])}")
    elif sched["pid"] is None:
        console.print("scheduler: [yellow]none has run on this database[/yellow] (start one with `gpu-tracker run`)")
    else:
        when = sched["stopped_at"] or sched["heartbeat_at"]
        how = "stopped" if sched["stopped_at"] else "not responding since"
        console.print(f"scheduler: [yellow]not active[/yellow] (pid {sched['pid']} on {sched['host']} {how} "
                      f"{cell(when)}, {_ago(when)})")
    for r in rows:
        r["every"] = _interval(r["interval_s"])
        r["next"] = _ago(r["next_run"]) if r["next_run"] else None
        r["retry"] = _ago(r["retry_at"]) if r["retry_at"] else None
        r["last"] = _ago(r["last_run"]) if r["last_run"] else None
        r["success"] = _ago(r["last_success"]) if r["last_success"] else None
        r["stale_flag"] = "STALE" if r["stale"] else None
    emit(rows, Format.table, title="providers", columns=[
        ("provider", "provider"), ("every", "every"), ("next", "next run"), ("retry", "retry"), ("last", "last run"),
        ("last_status", "result"), ("consecutive_failures", "failures"), ("success", "last success"),
        ("stale_flag", "stale"), ("last_error", "error"),
    ])


config_app = typer.Typer(help="Write, check and show the configuration file.", no_args_is_help=True)
app.add_typer(config_app, name="config")


def _config_target(ctx: typer.Context, path: Path | None) -> tuple[Path, bool]:
    """The file to look at and whether the user named it (a missing default file is fine)."""
    from tracker.config.settings import CONFIG_ENV, default_config_path

    if path is not None:
        return path, True
    root = state(ctx).config_path or os.environ.get(CONFIG_ENV)
    if root:
        return Path(root), True
    return default_config_path(), False


@config_app.command("init")
def config_init(
    path: Annotated[Path | None, typer.Argument(help="Where to write it (default: standard output; "
                                                     "`gpu-tracker config check` names the default location).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented example configuration (every active line a default) to PATH or stdout."""
    from tracker.config.example import example_config

    text = example_config()
    if path is None or str(path) == "-":
        sys.stdout.write(text)
        return
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (pass --force to overwrite it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    err_console.print(f"wrote {path}; check it with: gpu-tracker config check {path}")


@config_app.command("check")
def config_check(
    ctx: typer.Context,
    path: Annotated[Path | None, typer.Argument(help="The file to check (default: --config, $GPU_TRACKER_CONFIG or the default location).")] = None,
) -> None:
    """Validate a configuration file: every error names the key and the bad value (never a secret).

    Exit code 1 when there is an error; warnings (such as an unset API key) do not fail.
    """
    from db.engine import mask_url
    from tracker.config.check import check_file

    target, named = _config_target(ctx, path)
    if not target.is_file():
        if named:
            err_console.print(f"[bold red]error:[/bold red] config file {target} does not exist", highlight=False,
                              soft_wrap=True)
            raise typer.Exit(1)
        console.print(f"no config file at {target}: the defaults apply (write one with `gpu-tracker config init {target}`)",
                      highlight=False, soft_wrap=True)
        target_arg = None
    else:
        target_arg = target
    report = check_file(target_arg)
    for w in report.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {w}", highlight=False, soft_wrap=True)
    for e in report.errors:
        err_console.print(f"[bold red]error:[/bold red] {e}", highlight=False, soft_wrap=True)
    if report.errors:
        err_console.print(f"{len(report.errors)} error(s) in {target_arg or 'the environment'}", highlight=False,
                          soft_wrap=True)
        raise typer.Exit(1)
    assert report.settings is not None
    enabled = sum(1 for p in report.settings.providers.values() if p.enabled)
    disabled = len(report.settings.providers) - enabled
    database = mask_url(report.settings.database) if report.settings.database else "default"
    console.print(f"ok: {target_arg or 'defaults'} is valid (database: {database}; {disabled} provider(s) disabled, "
                  f"{len(report.settings.alerts)} alert rule(s))", highlight=False, soft_wrap=True)


@config_app.command("show")
def config_show(ctx: typer.Context) -> None:
    """Print the effective settings (file + environment + defaults) as JSON, secrets masked."""
    from tracker.config.check import masked_settings

    data = masked_settings(state(ctx).settings)
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")

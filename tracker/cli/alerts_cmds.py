"""``gpu-tracker alerts ...``: list rules and their state, check now, test channels, history, digests, add/remove."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from tracker.cli import app
from tracker.cli.common import Format, console, emit, finite, print_notes, state
from tracker.cli.render import DEFAULT, ESSENTIAL
from tracker.errors import ConfigError

alerts_app = typer.Typer(
    help="Price alerts: rules from the config file (alerts tables) and from `alerts add`, their state, "
         "checks, test messages and delivery history.",
    no_args_is_help=True,
)
app.add_typer(alerts_app, name="alerts")

FMT = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


@alerts_app.command("list")
def list_rules(ctx: typer.Context, fmt: FMT = Format.table) -> None:
    """Every rule (config file and `alerts add`) with its state: armed, pending or firing.

    Channel URLs are shown redacted: tokens and passwords never appear.
    """
    from tracker.alerts import rule_states

    st = state(ctx)
    rows = rule_states(st.reader, st.settings)  # the store's own driver when it is current
    emit(rows, fmt, title="alert rules (--format json for filters, source, for, rearm)", columns=[
        ("name", "rule"), ("condition", "condition"), ("state", "state"), ("last_value", "last value"),
        ("last_fired", "last fired"), ("notify", "notify"),
    ])


@alerts_app.command("check")
def check_cmd(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Evaluate and show what would fire; store and send nothing.")] = False,
    fmt: FMT = Format.table,
) -> None:
    """Evaluate every rule against the current prices now, then send what is due in the outbox.

    Only fresh data counts: offers of providers whose latest scrape failed or is stale, and
    quarantined prices, never trigger a rule. Running it again without new data changes nothing.
    When the newest data is older than the staleness limit, a note names its date; `alerts
    backtest` runs rules over such history.
    """
    from tracker.alerts import check
    from tracker.cli.timetravel import warn_if_stale

    st = state(ctx)
    cycle = check(st.engine, st.settings, dry_run=dry_run)
    warn_if_stale(st, hint="; `gpu-tracker alerts backtest NAME --since DATE` runs a rule over that history")
    rows: list[dict[str, Any]] = [
        {"rule": e.rule, "before": e.before, "after": e.after, "value": e.value,
         "events": ", ".join(e.events) or None, "note": e.note}
        for e in cycle.evaluations
    ]
    emit(rows, fmt, title="alerts check (dry run: nothing stored or sent)" if dry_run else "alerts check", columns=[
        ("rule", "rule"), ("before", "before"), ("after", "after"), ("value", "value"), ("events", "events"),
        ("note", "note"),
    ])
    if cycle.deliveries and fmt is Format.table:
        emit([_delivery_row(d) for d in cycle.deliveries], fmt, title="deliveries", columns=_DELIVERY_COLUMNS)


_DELIVERY_COLUMNS = [("rule", "rule"), ("kind", "event"), ("channel", "channel"), ("status", "status"),
                     ("attempts", "attempts"), ("error", "error")]


def _delivery_row(d: Any) -> dict[str, Any]:
    return {"rule": d.rule, "kind": d.kind, "channel": d.channel, "status": d.status, "attempts": d.attempts,
            "error": d.error}


@alerts_app.command("test")
def test_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The rule whose channels get the test message.")],
    fmt: FMT = Format.table,
) -> None:
    """Send a test message through every channel of rule NAME now (exit code 1 if one fails).

    A failed test message is recorded in `alerts history` and not retried.
    """
    from tracker.alerts import send_test

    st = state(ctx)
    deliveries = send_test(st.engine, st.settings, name)
    emit([_delivery_row(d) for d in deliveries], fmt, title=f"test message for {name}", columns=_DELIVERY_COLUMNS)
    if any(d.status != "delivered" for d in deliveries):
        raise typer.Exit(1)


@alerts_app.command("history")
def history_cmd(
    ctx: typer.Context,
    rule: Annotated[str | None, typer.Option("--rule", help="Only this rule.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100_000, help="At most N events (newest first).")] = 50,
    fmt: FMT = Format.table,
) -> None:
    """What fired or resolved, when, and whether each channel got it (attempts, last error)."""
    from tracker.alerts import history

    rows = history(state(ctx).reader, rule=rule, limit=limit)
    if fmt is Format.table:
        for r in rows:
            r["channels"] = "; ".join(
                f"{d['channel']}: {d['status']}" + (f" after {d['attempts']} attempt(s)" if d["attempts"] > 1 else "")
                + (f" ({d['last_error']})" if d["last_error"] and d["status"] != "delivered" else "")
                for d in r["deliveries"]
            )
    emit(rows, fmt, title="alert history", columns=[
        ("at", "at"), ("rule", "rule"), ("kind", "event"), ("value", "value"), ("threshold", "threshold"),
        ("previous_value", "previous"), ("provider", "provider"), ("region", "region"), ("delivered", "delivered"),
        ("channels", "channels"),
    ])


@alerts_app.command("digest")
def digest_cmd(
    ctx: typer.Context,
    name: Annotated[list[str] | None, typer.Option("--name", help="Only this digest (repeatable; default: every digest in the config file).")] = None,
    now: Annotated[bool, typer.Option("--now", help="Send now, due or not (it counts as the last digest for the next one's changes).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the message each digest would send now; store and send nothing.")] = False,
    fmt: FMT = Format.table,
) -> None:
    """Send the digests of the config file (digests tables) that are due, or preview them.

    A digest lists, per watched GPU, the best current price (provider, region, kind) and its
    change since the previous digest. It goes through the alerts' outbox: a failed delivery is
    retried on later cycles and never sent twice (see `alerts history --rule digest:NAME`).
    """
    from tracker.alerts import send_digests

    st = state(ctx)
    runs = send_digests(st.engine, st.settings, names=name or None, force=now, dry_run=dry_run)
    if not runs and fmt is Format.table:
        console.print("no digests configured (add a [[digests]] table to the config file)", highlight=False, markup=False)
        return
    if fmt is not Format.table:
        emit([{"digest": r.name, "schedule": r.schedule, "status": r.status, "due": r.due, "next_due": r.next_due,
               "last_sent": r.last_sent_at, "event_id": r.event_id, "title": r.title, "message": r.message,
               "note": r.note, "deliveries": [_delivery_row(d) for d in r.deliveries] if fmt is Format.json
               else "; ".join(f"{d.channel}: {d.status}" for d in r.deliveries)} for r in runs], fmt)
        return
    if dry_run:
        for r in runs:
            console.print(f"[bold]{r.title or r.name}[/bold]  [dim]({r.schedule}; {r.note or r.status})[/dim]",
                          highlight=False)
            if r.message:
                console.print(r.message, highlight=False, markup=False, soft_wrap=True)
            console.print()
        return
    emit([{"digest": r.name, "schedule": r.schedule, "status": r.status, "next_due": r.next_due,
           "deliveries": "; ".join(f"{d.channel}: {d.status}" + (f" ({d.error})" if d.error else "") for d in r.deliveries)
           or None, "note": r.note} for r in runs],
         fmt, title="digests", columns=[("digest", "digest"), ("schedule", "schedule"), ("status", "status"),
                                        ("next_due", "next due"), ("deliveries", "deliveries"), ("note", "note")])


IndexBelow = Annotated[float | None, typer.Option("--index-below", callback=finite, help="Fire when the GPU's rental index (median-of-medians-1 over the offers in effect; one GPU id) goes below this: --metric index --below X.")]
IndexAbove = Annotated[float | None, typer.Option("--index-above", callback=finite, help="Fire when the GPU's rental index goes above this: --metric index --above X.")]
IndexDropPct = Annotated[float | None, typer.Option("--index-drop-pct", callback=finite, help="Fire when the GPU's rental index fell by this percentage over --window: --metric index --drop-pct P.")]


def index_condition(table: dict[str, Any], below: float | None, above: float | None,
                    drop_pct: float | None) -> dict[str, Any]:
    """``--index-below X`` (``--index-above``, ``--index-drop-pct``) as the rule keys they stand
    for: ``metric = "index"`` and the condition; one line when another metric or condition is given too."""
    given = {k: v for k, v in (("below", below), ("above", above), ("drop_pct", drop_pct)) if v is not None}
    if not given:
        return table
    if table.get("metric") not in (None, "index"):
        raise ConfigError(f"--index-{next(iter(given)).replace('_', '-')}: watches the rental index; leave --metric out")
    clash = [k for k in ("below", "above", "drop_pct") if table.get(k) is not None]
    if clash or len(given) > 1:
        raise ConfigError("one condition only: --index-below, --index-above or --index-drop-pct, "
                          "without --below, --above or --drop-pct")
    return {**table, **given, "metric": "index"}


@alerts_app.command("add")
def add_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Rule name: letters, digits, '.', '_' or '-'.")],
    gpu: Annotated[list[str], typer.Option("--gpu", "-g", help="GPU id (H100-SXM), family (H100) or prefix (H200*); repeatable.")],
    below: Annotated[float | None, typer.Option("--below", callback=finite, help="Fire when the value goes below this.")] = None,
    above: Annotated[float | None, typer.Option("--above", callback=finite, help="Fire when the value goes above this.")] = None,
    drop_pct: Annotated[float | None, typer.Option("--drop-pct", callback=finite, help="Fire when the value fell by this percentage over --window.")] = None,
    window: Annotated[str | None, typer.Option("--window", help="Window for --drop-pct, e.g. 24h or 7d.")] = None,
    new_low: Annotated[bool, typer.Option("--new-low", help="Fire on a new all-time low.")] = False,
    available_again: Annotated[bool, typer.Option("--available-again", help="Fire when an offer is listed as available after none was.")] = False,
    index_below: IndexBelow = None,
    index_above: IndexAbove = None,
    index_drop_pct: IndexDropPct = None,
    provider: Annotated[list[str] | None, typer.Option("--provider", "-p", help="Only these providers (repeatable).")] = None,
    region: Annotated[list[str] | None, typer.Option("--region", "-r", help="Only these provider region codes (repeatable).")] = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="on-demand, spot, community, reserved or all (repeatable; default on-demand and community; index rules: on-demand).")] = None,
    min_gpu_count: Annotated[float | None, typer.Option("--min-gpu-count", callback=finite, help="Only offers with at least this many GPUs.")] = None,
    min_available: Annotated[int | None, typer.Option("--min-available", help="Only providers with at least this many GPUs free now (their stated counts, best value first): with --below 2.5, N or more GPUs free at one provider under $2.50.")] = None,
    metric: Annotated[str | None, typer.Option("--metric", help="price (per GPU-hour, default), cost_per_tflop, breakeven_months or index (the rental index of one GPU).")] = None,
    basis: Annotated[str | None, typer.Option("--basis", help="TFLOPS basis for cost_per_tflop: fp16-dense (default), fp16-sparse, fp8-dense, tf32-dense, fp32.")] = None,
    aggregate: Annotated[str | None, typer.Option("--aggregate", help="min, median or max across matching offers.")] = None,
    for_count: Annotated[int | None, typer.Option("--for", help="The condition must hold for N consecutive evaluations with new data.")] = None,
    rearm: Annotated[str | None, typer.Option("--rearm", help="Re-arm margin (hysteresis): a number in the metric's unit or a percentage like 5%.")] = None,
    notify: Annotated[list[str] | None, typer.Option("--notify", "-n", help="Channel: Apprise URL, webhook+https://..., console, log, or env:VAR holding a URL (repeatable).")] = None,
    resolved: Annotated[bool, typer.Option("--resolved", help="Also send a message when the condition stops holding.")] = False,
    webhook_secret_env: Annotated[str | None, typer.Option("--webhook-secret-env", help="Env var holding the HMAC-SHA256 secret for webhook+ channels.")] = None,
    allow_literal_secret: Annotated[bool, typer.Option("--allow-literal-secret", help="Store a --notify URL that carries credentials in the database as given (default: refused; use env:VAR).")] = False,
) -> None:
    """Add a rule, stored in the database (it survives restarts and sits beside the config file's rules).

    A notify URL carrying credentials (user:password@, a Slack/Telegram/... token, ?token=, a webhook
    secret in the path) is refused: export it and pass --notify env:VAR, or --allow-literal-secret.
    """
    if not allow_literal_secret:
        for i, target in enumerate(notify or []):
            refuse_literal_secret(target, i)
    table: dict[str, Any] = {
        "name": name, "gpu": gpu if len(gpu) != 1 else gpu[0], "below": below, "above": above, "drop_pct": drop_pct,
        "window": window, "new_low": new_low or None, "available_again": available_again or None,
        "providers": provider or None, "regions": region or None, "kinds": kind or None,
        "min_gpu_count": min_gpu_count, "min_available": min_available, "metric": metric, "basis": basis,
        "aggregate": aggregate, "for": for_count, "notify": notify or None, "resolved": resolved or None, "webhook_secret_env": webhook_secret_env,
    }
    if rearm is not None:
        try:
            table["rearm"] = float(rearm)
        except ValueError:
            table["rearm"] = rearm
    table = index_condition(table, index_below, index_above, index_drop_pct)
    table = {k: v for k, v in table.items() if v is not None}
    from db.engine import session_scope
    from tracker.alerts import add_rule
    from tracker.alerts.channels import display

    st = state(ctx)
    with session_scope(st.writer_engine) as session:
        rule = add_rule(st.settings, session, table)
    console.print(f"added alert rule [bold]{rule.name}[/bold]: {rule.describe()}; notify {', '.join(rule.channels)}",
                  highlight=False)
    stored_secrets = [t for t in rule.notify if display(t) != t and not t.startswith("env:")]
    if stored_secrets:
        console.print("[yellow]note:[/yellow] a notify URL with a path, query or credentials is stored in the "
                      "database as given; use --notify env:VAR to keep such a URL out of it.", highlight=False)
    print_notes(_add_notes(st, rule))


def _add_notes(st: Any, rule: Any) -> list[str]:
    """What a new rule will do that its author may not expect: fire at the first check because the
    current value already meets it, or reach nobody because its only channels write to a log."""
    from db.spans import utcnow
    from tracker.alerts.data import gpu_specs, observe

    notes = []
    if rule.condition in ("below", "above") and rule.threshold is not None:
        specs = gpu_specs(st.settings) if rule.metric != "price" else {}
        view = observe(st.reader, rule, st.settings, utcnow(), specs).fresh
        met = view.value is not None and (view.value < rule.threshold if rule.condition == "below"
                                          else view.value > rule.threshold)
        if met:
            where = f" ({view.best.get('provider')})" if view.best else ""
            notes.append(f"it fires at the first check: the {rule.aggregate} now is {view.value:g}{where}, already "
                         f"{rule.condition} {rule.threshold:g}")
    if rule.notify and all(t.strip().lower() in ("log", "log://") for t in rule.notify):
        notes.append("the log channel sends nothing: it only writes a line to the collector's log "
                     "(`gpu-tracker run`); add --notify with a URL that reaches you")
    return notes


def refuse_literal_secret(target: str, index: int) -> None:
    """Raise ``ConfigError`` when ``target`` carries a credential; the message shows the env:VAR form, never the URL."""
    from tracker.alerts.redact import literal_secrets, scheme_of

    found = literal_secrets(target)
    if not found:
        return
    scheme = (scheme_of(target) or "channel").split("+")[-1]
    var = "ALERT_" + re.sub(r"[^A-Z0-9]+", "_", scheme.upper()).strip("_") + "_URL"
    raise ConfigError(f"--notify #{index + 1}: the URL carries {' and '.join(found)}, which would be stored in the "
                      f"database as given; export {var}='<the URL>' and pass --notify env:{var} "
                      "(or --allow-literal-secret to store it anyway)")


@alerts_app.command("remove")
def remove_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A rule added with `alerts add`.")],
) -> None:
    """Remove a rule added with `alerts add` (rules in the config file are edited there)."""
    from db.engine import session_scope
    from tracker.alerts import remove_rule
    from tracker.alerts.store import load_rules

    st = state(ctx)
    with session_scope(st.writer_engine) as session:
        if remove_rule(session, name):
            console.print(f"removed alert rule {name}", highlight=False)
            return
    names = {r.name: r.source for r in load_rules(st.settings, st.reader)}
    if names.get(name) == "config":
        raise ConfigError(f"alert rule {name!r} is defined in the config file; remove it there")
    raise ConfigError(f"no alert rule named {name!r} was added with `alerts add`")


@alerts_app.command("backtest")
def backtest_cmd(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="A rule (config file or `alerts add`); or a name for the inline rule given by the options.")] = None,
    since: Annotated[str, typer.Option("--since", help="Start of the range: 30d, 12w, 1y, or an ISO date.")] = "30d",
    until: Annotated[str | None, typer.Option("--until", help="End of the range (ISO date-time, UTC); default now.")] = None,
    gpu: Annotated[list[str] | None, typer.Option("--gpu", "-g", help="Inline rule: GPU id, family or prefix; repeatable.")] = None,
    below: Annotated[float | None, typer.Option("--below", help="Inline rule: fire when the value goes below this.")] = None,
    above: Annotated[float | None, typer.Option("--above", help="Inline rule: fire when the value goes above this.")] = None,
    drop_pct: Annotated[float | None, typer.Option("--drop-pct", help="Inline rule: fire when the value fell by this percentage over --window.")] = None,
    window: Annotated[str | None, typer.Option("--window", help="Window for --drop-pct, e.g. 24h or 7d.")] = None,
    new_low: Annotated[bool, typer.Option("--new-low", help="Inline rule: fire on a new all-time low.")] = False,
    available_again: Annotated[bool, typer.Option("--available-again", help="Inline rule: fire when an offer is listed as available after none was.")] = False,
    index_below: IndexBelow = None,
    index_above: IndexAbove = None,
    index_drop_pct: IndexDropPct = None,
    provider: Annotated[list[str] | None, typer.Option("--provider", "-p", help="Only these providers (repeatable).")] = None,
    region: Annotated[list[str] | None, typer.Option("--region", "-r", help="Only these provider region codes (repeatable).")] = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="on-demand, spot, community, reserved or all (repeatable; default on-demand and community).")] = None,
    min_gpu_count: Annotated[float | None, typer.Option("--min-gpu-count", help="Only offers with at least this many GPUs.")] = None,
    metric: Annotated[str | None, typer.Option("--metric", help="price (per GPU-hour, default), cost_per_tflop, breakeven_months or index (the rental index of one GPU).")] = None,
    basis: Annotated[str | None, typer.Option("--basis", help="TFLOPS basis for cost_per_tflop.")] = None,
    aggregate: Annotated[str | None, typer.Option("--aggregate", help="min, median or max across matching offers.")] = None,
    for_count: Annotated[int | None, typer.Option("--for", help="The condition must hold for N consecutive evaluations.")] = None,
    rearm: Annotated[str | None, typer.Option("--rearm", help="Re-arm margin: a number in the metric's unit or a percentage like 5%.")] = None,
    resolved: Annotated[bool, typer.Option("--resolved", help="Inline rule: also report when the condition stops holding.")] = False,
    fmt: FMT = Format.table,
) -> None:
    """Run a rule over stored history: every firing and resolution, with time, value and provider.

    The scheduler's own evaluation code runs at every observation time in the range, from an
    armed state. Nothing is delivered and no alert state changes. A rule is named (config file
    or `alerts add`) or given inline with the same options as `alerts add`.
    """
    from db.spans import utcnow
    from tracker.alerts.backtest import backtest, resolve_rule
    from tracker.analysis.grid import since_time
    from tracker.cli.timetravel import parse_at

    st = state(ctx)
    options = {"gpu": gpu, "below": below, "above": above, "drop_pct": drop_pct, "window": window,
               "new_low": new_low, "available_again": available_again, "providers": provider, "regions": region,
               "kinds": kind, "min_gpu_count": min_gpu_count, "metric": metric, "basis": basis,
               "aggregate": aggregate, "for": for_count, "rearm": rearm, "resolved": resolved}
    options = index_condition(options, index_below, index_above, index_drop_pct)
    end = parse_at(until, "--until") or utcnow()
    start = since_time(since, end, f"--since: {since!r} is neither a span (30d, 12w, 1y) nor an ISO date")
    rule = resolve_rule(st.settings, st.reader, name, options)
    result = backtest(st.engine, st.settings, rule, since=start, until=end)
    data = result.as_dict()
    if fmt is Format.json:
        import json
        import sys
        from datetime import datetime

        sys.stdout.write(json.dumps(data, indent=2, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))
                         + "\n")
        return
    if fmt is Format.csv:
        emit([e.as_dict() for e in result.events], fmt)
        return
    emit([e.as_dict() for e in result.events], fmt,
         title=f"backtest{' ' + rule.name if name else ''}: {result.description}, {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC",
         # what answers "did it fire, when, at what value" first; where it was comes after, as room allows
         columns=[("time", "time", ESSENTIAL), ("event", "event", ESSENTIAL), ("value", "value", ESSENTIAL),
                  ("threshold", "threshold", ESSENTIAL), ("provider", "provider", DEFAULT), ("kind", "kind", DEFAULT),
                  ("region", "region", DEFAULT), ("offers", "offers", DEFAULT)])
    hours = result.firing_s / 3600
    console.print(f"{result.evaluations} evaluations, fired {result.fired}, resolved {result.resolved}, "
                  f"firing for {hours:.1f} h{' (still firing at the end)' if result.firing_at_end else ''}; "
                  "nothing was sent or stored", highlight=False)

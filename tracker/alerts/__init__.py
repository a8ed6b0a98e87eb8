"""Alerts: rules over current prices, an edge-triggered state machine, and an outbox.

Modules: ``rules`` (parse and check rules), ``store`` (rules added with ``alerts add``), ``data`` (what a rule sees), ``evaluate`` (the state
machine), ``message`` (what is said), ``channels`` (Apprise, JSON webhook, console, log),
``deliver`` (the outbox), ``redact`` (secrets out of everything shown or stored), ``digest``
(daily or weekly summaries, through the same outbox).

The scheduler calls :func:`after_collect` after each collection (rules, then digests that are
due); the CLI uses :func:`check`, :func:`send_test`, :func:`history` and :func:`send_digests`.

Importing this package loads no database toolkit: the functions import the ORM and the modules
that use it when called, and the names re-exported from those modules (``deliver_pending``,
``load_rules``...) are looked up on first use. ``alerts list`` reads a
current store with its own driver (:func:`rule_states` on a ``db.reader.Reader``) and would
otherwise pay for SQLAlchemy and the ORM models to start.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from db.spans import utcnow
from tracker.alerts.redact import redact_url, scrub
from tracker.alerts.rules import Rule, all_rules, check_tables, parse_rule
from tracker.errors import ConfigError, TrackerError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from db.columns import AlertStateRow
    from db.reader import Reader
    from tracker.alerts.deliver import Delivery
    from tracker.alerts.digest import DigestRun
    from tracker.alerts.evaluate import Evaluation
    from tracker.config.settings import Settings

log = logging.getLogger("tracker.alerts")

#: The names re-exported from modules that import the ORM, and their module (loaded on first use).
#: Not ``evaluate``: once imported, the submodule of that name is the package's attribute (the
#: function is ``tracker.alerts.evaluate.evaluate``).
_LAZY = {"Delivery": "deliver", "deliver_pending": "deliver", "DigestRun": "digest", "Evaluation": "evaluate",
         "add_rule": "store", "load_rules": "store", "remove_rule": "store"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"tracker.alerts.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AlertCycle", "Delivery", "DigestRun", "Evaluation", "Rule", "add_rule", "after_collect", "check", "check_config",
    "deliver_pending", "deliveries", "delivery_counts", "send_digests",
    "history", "load_rules", "parse_rule", "redact_url", "remove_rule", "rule_states", "scrub",
    "send_test",
]


@dataclass(frozen=True, slots=True)
class AlertCycle:
    evaluations: tuple[Evaluation, ...] = ()
    deliveries: tuple[Delivery, ...] = ()
    error: str | None = None
    digests: tuple[DigestRun, ...] = ()

    @property
    def fired(self) -> list[str]:
        return [e.rule for e in self.evaluations if "fired" in e.events]


def check_config(settings: Settings) -> list[str]:
    """Every problem of the config file's rules, one message per rule (for ``config check``)."""
    return check_tables(settings.alerts, "alerts", "alert rule",
                        lambda raw, where: parse_rule(raw, where=where, catalog_file=settings.catalog_file,
                                                      allow_hosts=settings.delivery.allow_hosts))


def check(engine: Engine, settings: Settings, *, now: datetime | None = None, dry_run: bool = False,
          environ: Mapping[str, str] | None = None) -> AlertCycle:
    """Evaluate every rule, then (unless ``dry_run``) send what is due in the outbox."""
    from db.engine import engine_reader
    from tracker.alerts.deliver import deliver_pending
    from tracker.alerts.evaluate import evaluate
    from tracker.alerts.store import load_rules

    now = now or utcnow()
    with engine_reader(engine) as reader:
        rules = load_rules(settings, reader)
    evaluations = evaluate(engine, settings, rules=rules, now=now, dry_run=dry_run)
    deliveries = [] if dry_run else deliver_pending(engine, settings, rules=rules, now=now, environ=environ)
    return AlertCycle(tuple(evaluations), tuple(deliveries))


def after_collect(engine: Engine, settings: Settings, results: Sequence[Any] = (), *,
                  now: datetime | None = None, environ: Mapping[str, str] | None = None) -> AlertCycle:
    """The scheduler's hook after each collection: evaluate rules, deliver the outbox.

    Then the ``[[digests]]`` that are due are sent (one small query when none is).

    Never raises: a bad rule or an unreachable database is logged (without secrets) and
    returned in ``error``; pending deliveries wait for the next cycle. A bad digest does not
    stop the rules, nor a bad rule the digests.
    """
    from tracker.alerts.digest import run as run_digests

    now = now or utcnow()
    try:
        cycle = check(engine, settings, now=now, environ=environ)
    except TrackerError as exc:
        log.error("alerts not evaluated: %s", exc)
        cycle = AlertCycle(error=str(exc))
    except Exception as exc:  # noqa: BLE001 - the scheduler must keep running
        log.error("alerts not evaluated: %s", type(exc).__name__, exc_info=log.isEnabledFor(logging.DEBUG))
        cycle = AlertCycle(error=type(exc).__name__)
    if not settings.digests:
        return cycle
    try:
        runs = tuple(run_digests(engine, settings, now=now, environ=environ))
    except TrackerError as exc:
        log.error("digests not sent: %s", exc)
        return replace(cycle, error=cycle.error or f"digests: {exc}")
    except Exception as exc:  # noqa: BLE001 - the scheduler must keep running
        log.error("digests not sent: %s", type(exc).__name__, exc_info=log.isEnabledFor(logging.DEBUG))
        return replace(cycle, error=cycle.error or f"digests: {type(exc).__name__}")
    return replace(cycle, digests=runs, deliveries=cycle.deliveries + tuple(d for r in runs for d in r.deliveries))


def send_digests(engine: Engine, settings: Settings, *, names: Sequence[str] | None = None, now: datetime | None = None,
                 force: bool = False, dry_run: bool = False,
                 environ: Mapping[str, str] | None = None) -> list[DigestRun]:
    """``alerts digest``: send the due digests (``force``: now, due or not); ``dry_run`` only composes them."""
    from tracker.alerts.digest import run as run_digests

    return run_digests(engine, settings, now=now, names=names, force=force, dry_run=dry_run, environ=environ)


def send_test(engine: Engine, settings: Settings, name: str, *, now: datetime | None = None,
              environ: Mapping[str, str] | None = None) -> list[Delivery]:
    """Send a test message through every channel of rule ``name`` now (one attempt, no retry)."""
    from db import reads
    from db.columns import AlertStateRow
    from db.engine import engine_reader, session_scope
    from db.reader import in_transaction
    from tracker.alerts.data import gpu_specs, observe
    from tracker.alerts.deliver import deliver_event
    from tracker.alerts.evaluate import make_event
    from tracker.alerts.store import load_rules

    now = now or utcnow()
    with engine_reader(engine) as reader:
        rules = load_rules(settings, reader)
    rule = next((r for r in rules if r.name == name), None)
    if rule is None:
        raise ConfigError(f"no alert rule named {name!r} (see `gpu-tracker alerts list`)")
    specs = gpu_specs(settings) if rule.metric != "price" else {}
    with session_scope(engine) as session:
        reader = in_transaction(session.connection())
        obs = observe(reader, rule, settings, now, specs)
        before = reads.alert_state(reader, rule.name) or AlertStateRow(rule.name)
        event = make_event(session, rule, "test", obs, before, settings, now)
        event_id = event.id
    assert event_id is not None
    return deliver_event(engine, settings, event_id, rules=rules, now=now, environ=environ, final=True)


def rule_states(reader: Reader, settings: Settings) -> list[dict[str, Any]]:
    """Every rule with its stored state, for ``alerts list`` (``State.reader``: on a current store,
    its own driver) and the web."""
    from db.reads import added_rule_tables, alert_states

    states = alert_states(reader)
    rules = all_rules(settings, added_rule_tables(reader))
    rows = []
    for r in rules:
        s = states.get(r.name)
        if s is not None and s.fingerprint != r.fingerprint():
            s = None  # the rule changed: its old state no longer applies
        rows.append({
            "name": r.name,
            "source": r.source,
            "enabled": r.enabled,
            "gpu": r.gpu_label,
            "condition": r.describe(),
            "filters": _filters(r),
            "for": r.for_count,
            "rearm": (f"{r.rearm:g}%" if r.rearm_is_pct else r.rearm) if r.rearm else None,
            "resolved": r.resolved,
            "notify": ", ".join(r.channels),
            "state": (s.state if s else "armed") if r.enabled else "disabled",
            "pending_count": s.pending_count if s else 0,
            "last_value": s.last_value if s else None,
            "last_evaluated": s.last_evaluated_at if s else None,
            "last_fired": s.last_fired_at if s else None,
            "last_resolved": s.last_resolved_at if s else None,
            "since": _state_since(s) if r.enabled else None,
        })
    return rows


def _state_since(s: AlertStateRow | None) -> datetime | None:
    """When the rule entered its current state, as far as the state row knows: firing since it
    last fired, armed since it last resolved (``None``: never fired, or pending)."""
    if s is None:
        return None
    if s.state == "firing":
        return s.last_fired_at
    return s.last_resolved_at if s.state == "armed" else None


def _filters(r: Rule) -> str:
    parts = []
    if r.providers:
        parts.append("providers=" + ",".join(r.providers))
    if r.regions:
        parts.append("regions=" + ",".join(r.regions))
    parts.append("kinds=" + ",".join(k.replace("_", "-") for k in r.kinds))
    if r.min_gpu_count:
        parts.append(f"min_gpu_count={r.min_gpu_count:g}")
    return " ".join(parts)


def history(reader: Reader, *, rule: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """Recent events, newest first, each with its deliveries (channel redacted, error scrubbed)."""
    from db import reads

    events = reads.alert_events(reader, rule=rule, limit=limit)
    rows = reads.outbox_rows(reader, event_ids=[e.id for e in events])
    by_event: dict[int, list[Any]] = {}
    for o in rows:
        by_event.setdefault(o.event_id, []).append(o)
    out = []
    for e in events:
        outs = by_event.get(e.id, [])
        delivered = sum(1 for o in outs if o.status == "delivered")
        out.append({
            "id": e.id,
            "at": e.created_at,
            "rule": e.rule,
            "kind": e.kind,
            "gpu": e.gpu,
            "value": e.value,
            "threshold": e.threshold,
            "previous_value": e.previous_value,
            "provider": e.provider,
            "region": e.region,
            "offer_kind": e.offer_kind,
            "delivered": f"{delivered}/{len(outs)}",
            "deliveries": [
                {"channel": o.channel, "status": o.status, "attempts": o.attempts, "delivered_at": _iso(o.delivered_at),
                 "next_attempt_at": _iso(o.next_attempt_at) if o.status == "pending" else None,
                 "last_error": o.last_error}
                for o in outs
            ],
            "title": e.title,
        })
    return out


DELIVERY_STATUSES = ("pending", "delivered", "failed", "orphaned")


def deliveries(reader: Reader, *, statuses: Sequence[str] | None = None, rule: str | None = None,
               limit: int = 50) -> list[dict[str, Any]]:
    """Outbox rows, newest first, with their event's kind and title. ``channel`` is the
    redacted form the outbox stores and ``last_error`` was scrubbed before it was stored, so
    nothing here can show a channel's secret."""
    bad = [x for x in statuses or () if x not in DELIVERY_STATUSES]
    if bad:
        raise ConfigError(f"status: {', '.join(bad)} is not one of {', '.join(DELIVERY_STATUSES)}")
    from db import reads

    outbox = reads.outbox_rows(reader, statuses=statuses, rule=rule, limit=limit)
    events = reads.events_by_id(reader, sorted({o.event_id for o in outbox}))
    return [{
        "id": o.id, "event_id": o.event_id, "rule": o.rule, "event_kind": e.kind, "title": e.title,
        "created_at": o.created_at, "channel": o.channel, "status": o.status, "attempts": o.attempts,
        "last_attempt_at": o.last_attempt_at, "delivered_at": o.delivered_at,
        "next_attempt_at": o.next_attempt_at if o.status == "pending" else None, "last_error": o.last_error,
    } for o in outbox if (e := events.get(o.event_id)) is not None]


def delivery_counts(reader: Reader) -> dict[str, int]:
    """How many outbox rows are in each status (every status present, zeros included)."""
    from db import reads

    counted = reads.delivery_counts(reader)
    return {s: int(counted.get(s, 0)) for s in DELIVERY_STATUSES} | {
        s: int(n) for s, n in counted.items() if s not in DELIVERY_STATUSES}


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts is not None else None

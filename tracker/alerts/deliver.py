"""The outbox: every delivery is a row, retried with backoff across cycles, never lost, sent once.

* ``make_event`` (in ``evaluate``) writes the event and one ``outbox`` row per channel in the
  same transaction as the state change: a fired rule cannot lose its message.
* ``deliver_pending`` takes due rows one by one. A row is first *claimed* with a conditional
  UPDATE (``claimed_until``) committed before sending, so two processes (the scheduler and a
  CLI ``alerts check``) never send the same row; then sent; then marked ``delivered`` or
  given its next attempt time (``BACKOFF_BASE_S`` doubling per attempt, at most
  ``BACKOFF_MAX_S``). Pending rows are retried for as long as their channel exists.
* The real target is read from the rule at send time (config file or ``alert_rule``; for a
  ``digest:<name>`` row, that ``[[digests]]`` entry), matched by position and redacted form;
  a channel that is gone makes the row ``orphaned``.
* Delivery is at-least-once only across a crash between "sent" and "marked delivered"; the
  event id travels with every message (``X-GPU-Tracker-Event``, ``event_id`` in the JSON) so
  a receiver can drop such a duplicate.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, update
from sqlalchemy.engine import Engine
from sqlmodel import col

from db import reads
from db.engine import engine_reader, session_scope
from db.models import Outbox
from db.reads import EventRow, OutboxRow
from db.spans import utcnow
from tracker.alerts.channels import DeliveryError, Message, display, send
from tracker.alerts.digest_config import DigestTarget, digest_targets
from tracker.alerts.rules import Rule
from tracker.alerts.store import load_rules
from tracker.config.settings import Settings

log = logging.getLogger("tracker.alerts")

BACKOFF_BASE_S = 30.0
BACKOFF_MAX_S = 3600.0
CLAIM_S = 300.0
BATCH = 100


@dataclass(frozen=True, slots=True)
class Delivery:
    outbox_id: int
    event_id: int
    rule: str
    kind: str
    channel: str
    status: str  # delivered | pending (will retry) | failed (not retried) | orphaned
    attempts: int
    error: str | None = None
    next_attempt_at: datetime | None = None


def backoff(attempts: int) -> timedelta:
    """Wait before attempt ``attempts + 1``: 30 s, 1 min, 2 min ... at most 1 h."""
    return timedelta(seconds=min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** max(0, attempts - 1)))


def claim(engine: Engine, outbox_id: int, now: datetime, *, ignore_schedule: bool = False) -> bool:
    """Take a pending row for sending; ``False`` when it is delivered, not due, or held by another sender."""
    conditions = [col(Outbox.id) == outbox_id, col(Outbox.status) == "pending",
                  or_(col(Outbox.claimed_until).is_(None), col(Outbox.claimed_until) < now)]
    if not ignore_schedule:
        conditions.append(col(Outbox.next_attempt_at) <= now)
    with session_scope(engine) as session:
        result = session.execute(
            update(Outbox).where(*conditions).values(claimed_until=now + timedelta(seconds=CLAIM_S))
        )
        return result.rowcount == 1  # type: ignore[attr-defined]


def find_target(rule: Rule | DigestTarget | None, row: OutboxRow) -> str | None:
    """The rule's real channel for an outbox row, or ``None`` when it is no longer configured."""
    if rule is None:
        return None
    if row.channel_index < len(rule.notify) and display(rule.notify[row.channel_index]) == row.channel:
        return rule.notify[row.channel_index]
    same = [t for t in rule.notify if display(t) == row.channel]
    return same[0] if len(same) == 1 else None


def _message(event: EventRow, row: OutboxRow) -> Message:
    payload = {**event.details, "event_id": event.id, "delivery_id": row.id, "title": event.title,
               "message": event.message, "created_at": event.created_at.isoformat()}
    return Message(title=event.title, body=event.message, payload=payload, event_id=event.id, delivery_id=row.id)


def _record(engine: Engine, row_id: int, *, now: datetime, ok: bool, error: str | None, final: bool,
            orphaned: bool = False) -> Outbox:
    with session_scope(engine) as session:
        row = session.get(Outbox, row_id)
        assert row is not None
        row.attempts += 0 if orphaned else 1
        row.last_attempt_at, row.claimed_until = now, None
        if ok:
            row.status, row.delivered_at, row.last_error = "delivered", now, None
        elif orphaned:
            row.status, row.last_error = "orphaned", error
        else:
            row.last_error = error
            if final:
                row.status = "failed"
            else:
                row.next_attempt_at = now + backoff(row.attempts)
        session.flush()
        session.expunge(row)
        return row


def deliver_one(engine: Engine, row_id: int, rules: Mapping[str, Rule | DigestTarget], *, now: datetime,
                environ: Mapping[str, str] | None = None, final: bool = False) -> Delivery | None:
    """Send one outbox row if it can be claimed; ``None`` when another sender has it."""
    if not claim(engine, row_id, now, ignore_schedule=final):
        return None
    with engine_reader(engine) as reader:
        [row] = reads.outbox_rows(reader, row_id=row_id)
        event = reads.events_by_id(reader, [row.event_id])[row.event_id]
    rule = rules.get(row.rule)
    target = find_target(rule, row)
    if target is None:
        why = f"rule {row.rule!r} no longer has the channel {row.channel}"
        done = _record(engine, row_id, now=now, ok=False, error=why, final=True, orphaned=True)
        log.warning("alert delivery %s to %s orphaned: %s", row_id, row.channel, why)
        return Delivery(row_id, row.event_id, row.rule, event.kind, row.channel, "orphaned", done.attempts, why)
    assert rule is not None
    error = None
    try:
        send(target, _message(event, row), secret_env=rule.webhook_secret_env, environ=environ,
             allow_hosts=rule.allow_hosts)
    except DeliveryError as exc:
        error = str(exc) or "delivery failed"
    done = _record(engine, row_id, now=now, ok=error is None, error=error, final=final)
    if error is None:
        log.info("alert delivered rule=%s event=%s channel=%s", row.rule, event.kind, row.channel)
    else:
        log.warning("alert delivery failed rule=%s event=%s channel=%s attempt=%d: %s%s", row.rule, event.kind,
                    row.channel, done.attempts, error, "" if final else f" (retry at {done.next_attempt_at:%H:%M:%S})")
    return Delivery(row_id, row.event_id, row.rule, event.kind, row.channel, done.status, done.attempts, error,
                    done.next_attempt_at if done.status == "pending" else None)


def _rules_by_name(engine: Engine, settings: Settings, rules: Sequence[Rule] | None) -> dict[str, Rule | DigestTarget]:
    """Rule name -> rule, plus ``digest:<name>`` -> the digest's channels (``tracker.alerts.digest_config``)."""
    if rules is None:
        with engine_reader(engine) as reader:
            rules = load_rules(settings, reader)
    by_name: dict[str, Rule | DigestTarget] = {r.name: r for r in rules}
    by_name.update(digest_targets(settings))
    return by_name


def deliver_pending(
    engine: Engine,
    settings: Settings,
    *,
    rules: Sequence[Rule] | None = None,
    now: datetime | None = None,
    environ: Mapping[str, str] | None = None,
    limit: int = BATCH,
) -> list[Delivery]:
    """Send every outbox row that is due, oldest first (one attempt each per call)."""
    now = now or utcnow()
    by_name = _rules_by_name(engine, settings, rules)
    with engine_reader(engine) as reader:
        ids = reads.due_outbox_ids(reader, now, limit)
    out = []
    for row_id in ids:
        d = deliver_one(engine, row_id, by_name, now=now, environ=environ)
        if d is not None:
            out.append(d)
    return out


def deliver_event(
    engine: Engine,
    settings: Settings,
    event_id: int,
    *,
    rules: Sequence[Rule] | None = None,
    now: datetime | None = None,
    environ: Mapping[str, str] | None = None,
    final: bool = False,
) -> list[Delivery]:
    """Send one event's outbox rows now, whatever their schedule (``final``: no retry later)."""
    now = now or utcnow()
    by_name = _rules_by_name(engine, settings, rules)
    with engine_reader(engine) as reader:
        ids = [r.id for r in reads.outbox_rows(reader, event_ids=[event_id], statuses=["pending"])]
    return [d for i in ids if (d := deliver_one(engine, i, by_name, now=now, environ=environ, final=final)) is not None]

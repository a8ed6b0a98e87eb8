"""Digests: a daily or weekly summary per channel list, sent through the alerts' outbox.

A digest tells, for every watched GPU, the best current price per GPU-hour (provider, region,
kind) and how it changed since the previous digest. The smallest one::

    [[digests]]
    name = "morning"
    every = "daily"
    at = "08:00"                 # UTC
    notify = ["json://127.0.0.1:9999/hook"]

Every key:

==================  ==========================================================================
name                required; letters, digits, ``.``, ``_``, ``-`` (at most 57)
every               ``"daily"`` (default), ``"weekly"``, or a duration of at least 1h
                    (``"12h"``, ``"3d"``): at least that long after the previous digest
at                  ``"HH:MM"`` in UTC for daily and weekly digests (default ``"00:00"``)
day                 weekly digests: the weekday (``"monday"`` default, ``"mon"`` ...)
gpus                GPU ids, families (``"H100"`` = every variant, one line for all) or
                    prefixes (``"H200*"``); default: every GPU entry of every alert rule
kinds               as in alert rules; default on-demand and community
notify              channels, as in alert rules (Apprise URLs, ``webhook+https://``, ``console``,
                    ``log``, ``env:VAR``); default ``["log"]``
webhook_secret_env  environment variable holding the HMAC secret for ``webhook+`` channels
enabled             false keeps the digest (and its state) without sending it
==================  ==========================================================================

Timing is cron-like: a digest is due at each slot (daily at ``at``, weekly on ``day`` at
``at``) that is later than the previous digest, or, the first time, later than the moment
the scheduler first saw it (``digest_state.created_at``); a duration is measured from the
previous digest. Digests go out from ``tracker.alerts.after_collect``, so at the first
collection after the slot; slots missed while nothing ran produce one digest, not several.
``gpu-tracker alerts digest --now`` sends one at once.

Prices are those alerts see (``tracker.alerts.data``): current offers of providers whose
latest scrape succeeded and is not stale; quarantined prices are never stored as prices.
Offers of providers whose latest scrape failed are named as not counted.

Never twice: the event (kind ``digest``), its outbox rows and the state update are one
transaction, and the state row carries a version, so two processes never both send the same
digest; delivery then follows the outbox's retry and send-once rules. The outbox rows and
events are named ``digest:<name>`` (``alerts history --rule digest:<name>``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from db import reads
from db.engine import engine_reader
from db.models import AlertEvent, DigestState, Outbox
from db.reader import Reader, in_transaction
from db.reads import latest_prices
from db.spans import utcnow
from tracker.alerts.channels import display
from tracker.alerts.data import make_view, provider_status
from tracker.alerts.deliver import Delivery, deliver_event
from tracker.alerts.digest_config import (
    EPSILON,
    UNIT,
    Digest,
    _resolve,
    config_digests,
)
from tracker.alerts.message import (
    SCHEMA_VERSION,
    _offer_json,
    dashboard_link,
    replay_note,
)
from tracker.alerts.rules import Rule
from tracker.alerts.store import load_rules
from tracker.config.settings import Settings
from tracker.errors import ConfigError

log = logging.getLogger("tracker.alerts")

def watched(digest: Digest, rules: Iterable[Rule], catalog_file: Any = None) -> list[tuple[str, tuple[str, ...]]]:
    """(label, canonical ids) per watched GPU: the digest's ``gpus``, else every rule's GPU entries."""
    if digest.watch:
        return list(digest.watch)
    out: list[tuple[str, tuple[str, ...]]] = []
    seen: set[str] = set()
    for rule in rules:
        for q in rule.gpu_query:
            if q.lower() in seen:
                continue
            seen.add(q.lower())
            if len(rule.gpu_query) == 1:
                out.append((q, tuple(rule.gpus)))
            else:
                out.extend(_resolve((q,), f"alert rule {rule.name!r}", catalog_file))
    return out


def snapshot(reader: Reader, settings: Settings, digest: Digest, watch: Sequence[tuple[str, tuple[str, ...]]],
             now: datetime) -> list[dict[str, Any]]:
    """Per watched GPU: the best current offer of fresh providers, and the providers not counted."""
    status = provider_status(reader, settings, now)
    ids = sorted({g for _, gs in watch for g in gs})
    rows = latest_prices(reader, gpus=ids, kinds=list(digest.kinds)) if ids else []
    out = []
    for label, gs in watch:
        mine = [r for r in rows if r["gpu"] in gs]
        probe = Rule(name=digest.name, gpu_query=(label,), gpus=gs, condition="below", threshold=0.0,
                     kinds=digest.kinds)
        view = make_view(probe, [r for r in mine if status.get(r["provider"]) == "fresh"], {})
        out.append({"label": label, "ids": gs, "best": view.best, "offers": len(view.rows),
                    "providers": view.providers,
                    "held": sorted({r["provider"] for r in mine if status.get(r["provider"]) == "held"})})
    return out


def fmt(value: float | None, unit: str = "") -> str:
    """Cents for prices (``0.50``), more digits only below 10 cents (``0.045``)."""
    if value is None:
        return "n/a"
    text = f"{value:.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.2g}"
    return f"{text} {unit}".strip()


def _value(best: Mapping[str, Any] | None) -> dict[str, Any]:
    if best is None:
        return {"price": None}
    return {"price": best["price_per_gpu_hour"], "provider": best.get("provider"), "region": best.get("region"),
            "kind": best.get("kind"), "gpu": best.get("gpu")}


def _where(v: Mapping[str, Any]) -> str:
    kind = str(v.get("kind") or "").replace("_", "-")
    if v.get("term_months"):
        kind += f" {v['term_months']}-month"
    return f"{v.get('provider')} / {v.get('region') or '-'} / {kind}"


def _change(now_price: float | None, before: Mapping[str, Any] | None,
            first: bool) -> tuple[str, float | None, float | None]:
    """(status, change, change in %) against the previous digest's value for this GPU."""
    if first:
        return ("first" if now_price is not None else "none"), None, None
    prev = (before or {}).get("price")
    if now_price is None:
        return ("gone" if prev is not None else "none"), None, None
    if prev is None:
        return "new", None, None
    delta = now_price - prev
    pct = delta / prev * 100 if prev else None
    if abs(delta) < EPSILON:
        return "unchanged", 0.0, 0.0
    return ("down" if delta < 0 else "up"), delta, pct


def _line_text(label: str, best: Mapping[str, Any] | None, status: str, delta: float | None, pct: float | None,
               before: Mapping[str, Any] | None, link: str | None) -> str:
    prev = (before or {}).get("price")
    if best is None:
        text = f"{label}: no current offer"
        if status == "gone":
            text += f" (was {fmt(prev, UNIT)} at {_where(before or {})})"
    else:
        count = best.get("gpu_count")
        count_txt = f"{count:g}x " if isinstance(count, (int, float)) else ""
        avail = ", listed as unavailable" if best.get("available") is False else ""
        text = (f"{label}: {fmt(best['price_per_gpu_hour'], UNIT)} at {_where(best)} "
                f"({count_txt}{best.get('gpu')}, {best.get('sku')}{avail}{replay_note(best)})")
        if status in ("down", "up"):
            sign = "-" if status == "down" else "+"
            text += f"; {status} {fmt(abs(delta or 0.0))} ({sign}{abs(pct or 0.0):.1f}%) from {fmt(prev)}"
        elif status == "unchanged":
            text += "; unchanged"
        elif status == "new":
            text += "; new since the last digest"
        if status in ("down", "up", "unchanged") and before and before.get("provider") != best.get("provider"):
            text += f" (previously at {_where(before)})"
    text += "."
    if link:
        text += f" {link}"
    return text


def render(digest: Digest, lines: Sequence[Mapping[str, Any]], *, previous: Mapping[str, Any],
           previous_at: datetime | None, settings: Settings | None, now: datetime
           ) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """(title, text, details, values to remember) of one digest."""
    first = previous_at is None
    names = [k.replace("_", "-") for k in digest.kinds]
    kinds = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    head = (f"Digest {digest.name} ({digest.describe()}), {now:%Y-%m-%d %H:%M} UTC: the best current price per "
            f"GPU-hour of {kinds} offers")
    head += (". This is the first digest: nothing to compare yet." if first
             else f", and its change since the previous digest ({previous_at:%Y-%m-%d %H:%M} UTC).")
    body = [head]
    items = []
    values: dict[str, Any] = {}
    held: set[str] = set()
    counts: dict[str, int] = {}
    for line in lines:
        label, best = line["label"], line["best"]
        before = previous.get(label) if isinstance(previous.get(label), Mapping) else None
        price = best["price_per_gpu_hour"] if best is not None else None
        status, delta, pct = _change(price, before, first)
        counts[status] = counts.get(status, 0) + 1
        link = dashboard_link(settings, label)
        body.append(_line_text(label, best, status, delta, pct, before, link))
        values[label] = _value(best)
        held.update(line["held"])
        items.append({
            "gpu": label, "gpu_ids": list(line["ids"]), "price_per_gpu_hour": price, "status": status,
            "previous_price_per_gpu_hour": (before or {}).get("price"), "change": delta, "change_pct": pct,
            "offer": _offer_json(best), "previous_offer": dict(before) if before else None,
            "offers_considered": line["offers"], "providers": list(line["providers"]), "link": link,
        })
    if held:
        body.append(f"Not counted (latest scrape failed): {', '.join(sorted(held))}.")
    moves = [f"{counts[s]} {s}" for s in ("down", "up") if counts.get(s)]
    title = f"gpu-tracker digest {digest.name}: {len(lines)} GPU(s) on {now:%Y-%m-%d}"
    if moves:
        title += ", " + ", ".join(moves)
    text = "\n".join(body)
    details = {
        "schema": SCHEMA_VERSION, "kind": "digest", "digest": digest.name, "rule": digest.key,
        "schedule": digest.describe(), "kinds": list(digest.kinds), "unit": UNIT, "gpus": items,
        "previous_digest_at": previous_at.isoformat() if previous_at else None,
        "providers_not_counted": sorted(held), "at": now.isoformat(), "title": title, "message": text,
    }
    return title, text, details, values


# --- running -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DigestRun:
    name: str
    schedule: str
    #: sent | not due | scheduled (first seen: due at the next slot) | preview | disabled |
    #: nothing to watch | concurrent (another process sent it)
    status: str
    due: bool = False
    next_due: datetime | None = None
    last_sent_at: datetime | None = None
    event_id: int | None = None
    title: str | None = None
    message: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    deliveries: tuple[Delivery, ...] = ()
    note: str | None = None


class _Conflict(Exception):
    """Another process sent this digest since its state was read."""


@dataclass(frozen=True, slots=True)
class _State:
    created_at: datetime
    last_sent_at: datetime | None
    last_values: Mapping[str, Any]
    version: int

    @property
    def anchor(self) -> datetime:
        return self.last_sent_at or self.created_at


def _states(engine: Engine, names: Sequence[str]) -> dict[str, _State]:
    with engine_reader(engine) as reader:
        rows = reads.digest_states(reader, names)
    return {r.name: _State(r.created_at, r.last_sent_at, dict(r.last_values or {}), r.version) for r in rows}


def _first_seen(engine: Engine, name: str, now: datetime) -> None:
    """Start the schedule: the first digest goes out at the first slot after ``now``."""
    with Session(engine) as session:
        session.add(DigestState(name=name, created_at=now, version=1))
        try:
            session.commit()
        except IntegrityError:  # another process started it first: same schedule
            session.rollback()


def run(
    engine: Engine,
    settings: Settings,
    *,
    now: datetime | None = None,
    names: Sequence[str] | None = None,
    force: bool = False,
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> list[DigestRun]:
    """Send every digest that is due (``force``: the selected ones now, due or not).

    ``dry_run`` composes the message of each selected digest and stores and sends nothing.
    When none is due this costs one small query.
    """
    now = now or utcnow()
    digests = config_digests(settings)
    if names:
        known = {d.name for d in digests}
        missing = [n for n in names if n not in known]
        if missing:
            raise ConfigError(f"no digest named {missing[0]!r} (digests come from [[digests]] in the config file)")
        digests = [d for d in digests if d.name in names]
    if not digests:
        return []
    states = _states(engine, [d.name for d in digests])
    rules: list[Rule] | None = None
    out = []
    for d in digests:
        st = states.get(d.name)
        anchor = st.anchor if st else now
        due = st is not None and d.is_due(anchor, now)
        if not d.enabled and not (force and names):
            out.append(DigestRun(d.name, d.describe(), "disabled", note="enabled = false"))
            continue
        if not (due or force or dry_run):
            if st is None:
                _first_seen(engine, d.name, now)
            out.append(DigestRun(d.name, d.describe(), "not due" if st else "scheduled", False, d.next_due(anchor),
                                 st.last_sent_at if st else None))
            continue
        if rules is None and not d.watch:
            with engine_reader(engine) as reader:
                rules = load_rules(settings, reader)
        out.append(_compose_and_send(engine, settings, d, st, now, rules or [], due=due, dry_run=dry_run,
                                     environ=environ))
    return out


def _compose_and_send(engine: Engine, settings: Settings, d: Digest, st: _State | None, now: datetime,
                      rules: Sequence[Rule], *, due: bool, dry_run: bool,
                      environ: Mapping[str, str] | None) -> DigestRun:
    anchor = st.anchor if st else now
    next_due = d.next_due(anchor)
    watch = watched(d, rules, settings.catalog_file)
    if not watch:
        return DigestRun(d.name, d.describe(), "nothing to watch", due, next_due,
                         note="no gpus set and no alert rules to take them from")
    previous_at = st.last_sent_at if st else None
    with Session(engine, expire_on_commit=False) as session:
        lines = snapshot(in_transaction(session.connection()), settings, d, watch, now)
        title, text, details, values = render(d, lines, previous=st.last_values if st else {},
                                              previous_at=previous_at, settings=settings, now=now)
        if dry_run:
            return DigestRun(d.name, d.describe(), "preview", due, next_due, previous_at, None, title, text, details,
                             note="due now" if due else f"next due {next_due:%Y-%m-%d %H:%M} UTC")
        event = AlertEvent(rule=d.key, kind="digest", created_at=now, gpu=", ".join(label for label, _ in watch)[:255],
                           title=title, message=text, details=details)
        session.add(event)
        session.flush()
        assert event.id is not None
        for i, target in enumerate(d.notify):
            session.add(Outbox(event_id=event.id, rule=d.key, channel_index=i, channel=display(target),
                               created_at=now, next_attempt_at=now))
        state = {"last_sent_at": now, "last_values": values, "last_event_id": event.id}
        try:
            if st is None:
                session.add(DigestState(name=d.name, created_at=now, version=1, **state))
                session.flush()
            else:
                result = session.execute(
                    update(DigestState)
                    .where(col(DigestState.name) == d.name, col(DigestState.version) == st.version)
                    .values(version=st.version + 1, **state)
                )
                if result.rowcount != 1:  # type: ignore[attr-defined]
                    raise _Conflict(d.name)
        except (_Conflict, IntegrityError):
            session.rollback()
            log.info("digest %s sent concurrently by another process; left to it", d.name)
            return DigestRun(d.name, d.describe(), "concurrent", due, next_due, previous_at,
                             note="sent concurrently by another process")
        session.commit()
        event_id = event.id
    log.info("digest %s composed (event %s)", d.name, event_id)
    deliveries = deliver_event(engine, settings, event_id, rules=(), now=now, environ=environ)
    return DigestRun(d.name, d.describe(), "sent", due, d.next_due(now), now, event_id, title, text, details,
                     tuple(deliveries))

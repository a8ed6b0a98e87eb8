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
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from db.models import AlertEvent, DigestState, Outbox
from db.queries import latest_prices
from db.types import utcnow
from tracker.alerts.channels import check_target, display
from tracker.alerts.data import make_view, provider_status
from tracker.alerts.message import SCHEMA_VERSION, _offer_json, dashboard_link
from tracker.alerts.rules import _ENV_NAME, DEFAULT_KINDS, Rule, _kinds, _show, _str_list, check_table, check_tables
from tracker.alerts.store import load_rules
from tracker.config import Settings, parse_duration
from tracker.errors import ConfigError

if TYPE_CHECKING:
    from tracker.alerts.deliver import Delivery

log = logging.getLogger("tracker.alerts")

PREFIX = "digest:"
KEYS = ("name", "every", "at", "day", "gpus", "kinds", "notify", "webhook_secret_env", "enabled")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MIN_PERIOD_S = 3600.0
UNIT = "USD/GPU-h"
EPSILON = 1e-9
#: ``digest:`` + name must fit ``outbox.rule`` and ``alert_event.rule`` (64 characters).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,56}$")
_AT = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*$")


@dataclass(frozen=True, slots=True)
class DigestTarget:
    """What the outbox needs to send a digest's row: its channels (see ``deliver.find_target``)."""

    name: str
    notify: tuple[str, ...]
    webhook_secret_env: str | None = None


@dataclass(frozen=True, slots=True)
class Digest:
    name: str
    every: str = "daily"  # daily | weekly | interval
    period_s: float = 86400.0
    at_minutes: int = 0  # minutes after 00:00 UTC
    weekday: int = 0  # Monday
    #: (label, canonical ids) per watched GPU; empty: the GPUs of the alert rules.
    watch: tuple[tuple[str, tuple[str, ...]], ...] = ()
    kinds: tuple[str, ...] = DEFAULT_KINDS
    notify: tuple[str, ...] = ("log",)
    webhook_secret_env: str | None = None
    enabled: bool = True

    @property
    def key(self) -> str:
        """The ``rule`` of its events and outbox rows."""
        return PREFIX + self.name

    @property
    def channels(self) -> list[str]:
        return [display(t) for t in self.notify]

    def describe(self) -> str:
        at = f"{self.at_minutes // 60:02d}:{self.at_minutes % 60:02d} UTC"
        if self.every == "daily":
            return f"daily at {at}"
        if self.every == "weekly":
            return f"weekly on {WEEKDAYS[self.weekday].title()} at {at}"
        return f"every {_duration(self.period_s)}"

    def latest_slot(self, now: datetime) -> datetime | None:
        """The most recent scheduled time at or before ``now`` (``None`` for a duration)."""
        if self.every == "interval":
            return None
        now = now.astimezone(UTC)
        slot = now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(minutes=self.at_minutes)
        if self.every == "daily":
            return slot if slot <= now else slot - timedelta(days=1)
        slot -= timedelta(days=(now.weekday() - self.weekday) % 7)
        return slot if slot <= now else slot - timedelta(days=7)

    def next_due(self, anchor: datetime) -> datetime:
        """The first time after ``anchor`` (the previous digest, or when first seen) it is due."""
        if self.every == "interval":
            return anchor + timedelta(seconds=self.period_s)
        slot = self.latest_slot(anchor)
        assert slot is not None
        return slot + timedelta(seconds=self.period_s)

    def is_due(self, anchor: datetime, now: datetime) -> bool:
        return now >= self.next_due(anchor)


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


# --- configuration -------------------------------------------------------------------------


def parse_digest(raw: Mapping[str, Any], *, where: str = "digests", catalog_file: Any = None) -> Digest:
    """Check one ``[[digests]]`` table; ``ConfigError`` names the digest and the key, never a URL."""
    name, where = check_table(raw, where, "a digest", "digest", _NAME, 57, KEYS)

    every_raw = raw.get("every", "daily")
    every, period_s = _every(every_raw, where)
    at_minutes = 0
    if raw.get("at") is not None:
        if every == "interval":
            raise ConfigError(f"{where}: at: only applies to every = \"daily\" or \"weekly\"")
        at_minutes = _at(raw["at"], where)
    weekday = 0
    if raw.get("day") is not None:
        if every != "weekly":
            raise ConfigError(f"{where}: day: only applies to every = \"weekly\"")
        weekday = _weekday(raw["day"], where)

    watch = _resolve(_str_list(raw, "gpus", where), where, catalog_file)

    notify_raw = raw.get("notify", ["log"])
    if isinstance(notify_raw, str):
        notify_raw = [notify_raw]
    if not isinstance(notify_raw, (list, tuple)) or not notify_raw:
        raise ConfigError(f"{where}: notify: must be a list of channel URLs")
    for i, target in enumerate(notify_raw):
        check_target(target, f"{where}: notify[{i}]")
    secret_env = raw.get("webhook_secret_env")
    if secret_env is not None and (not isinstance(secret_env, str) or not _ENV_NAME.match(secret_env)):
        raise ConfigError(f"{where}: webhook_secret_env: must be the name of an environment variable (not the secret)")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: enabled: must be true or false (got {_show(enabled)})")
    return Digest(name=name, every=every, period_s=period_s, at_minutes=at_minutes, weekday=weekday, watch=watch,
                  kinds=_kinds(raw, where), notify=tuple(t.strip() for t in notify_raw),
                  webhook_secret_env=secret_env, enabled=enabled)


def _resolve(query: Sequence[str], where: str, catalog_file: Any = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(entry, canonical ids) per ``gpus`` entry: a family or prefix stays one entry."""
    if not query:
        return ()
    from tracker.catalog import gpu_ids_matching, load_catalog

    catalog = load_catalog(catalog_file) if catalog_file is not None else load_catalog()
    out = []
    for q in dict.fromkeys(query):
        ids = gpu_ids_matching(q, catalog)
        if not ids:
            raise ConfigError(f"{where}: gpus: {q!r} matches no GPU in the catalog (try `gpu-tracker catalog`)")
        out.append((q, tuple(ids)))
    return tuple(out)


def _every(v: Any, where: str) -> tuple[str, float]:
    if isinstance(v, str) and v.strip().lower() in ("daily", "weekly"):
        word = v.strip().lower()
        return word, 86400.0 if word == "daily" else 7 * 86400.0
    bad = f"{where}: every: must be \"daily\", \"weekly\" or a duration like \"12h\" or \"3d\" (got {_show(v)})"
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ConfigError(bad)
    try:
        seconds = parse_duration(v)
    except ValueError:
        raise ConfigError(bad) from None
    if seconds < MIN_PERIOD_S:
        raise ConfigError(f"{where}: every: must be at least 1h (got {_show(v)})")
    return "interval", seconds


def _at(v: Any, where: str) -> int:
    m = _AT.match(v) if isinstance(v, str) else None
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise ConfigError(f"{where}: at: must be a UTC time like \"08:00\" (got {_show(v)})")
    return int(m.group(1)) * 60 + int(m.group(2))


def _weekday(v: Any, where: str) -> int:
    if isinstance(v, str):
        low = v.strip().lower()
        for i, day in enumerate(WEEKDAYS):
            if low == day or (len(low) >= 3 and day.startswith(low)):
                return i
    raise ConfigError(f"{where}: day: must be a weekday like \"monday\" or \"mon\" (got {_show(v)})")


def parse_digests(tables: Sequence[Mapping[str, Any]], *, catalog_file: Any = None) -> list[Digest]:
    seen: set[str] = set()
    out = []
    for i, raw in enumerate(tables):
        d = parse_digest(raw, where=f"digests[{i}]", catalog_file=catalog_file)
        if d.name in seen:
            raise ConfigError(f"digest {d.name!r}: name: used by more than one digest")
        seen.add(d.name)
        out.append(d)
    return out


def config_digests(settings: Settings) -> list[Digest]:
    return parse_digests(settings.digests, catalog_file=settings.catalog_file)


def check_config(settings: Settings) -> list[str]:
    """Every problem of the config file's digests, one message per digest (for ``config check``)."""
    return check_tables(settings.digests, "digests", "digest",
                        lambda raw, where: parse_digest(raw, where=where, catalog_file=settings.catalog_file))


def config_warnings(settings: Settings) -> list[str]:
    """A digest without ``gpus`` watches the alert rules' GPUs; say so when the file has none."""
    if settings.alerts:
        return []
    return [f"digest {raw['name']!r}: gpus not set and no [[alerts]] rules in the config: it only covers GPUs of "
            "rules added with `gpu-tracker alerts add`"
            for raw in settings.digests
            if isinstance(raw, Mapping) and isinstance(raw.get("name"), str) and not raw.get("gpus")]


def digest_targets(settings: Settings) -> dict[str, DigestTarget]:
    """``digest:<name>`` -> channels, for the outbox.

    Read leniently (only name, notify and webhook_secret_env) so a mistake elsewhere in a
    digest (a GPU typo) does not orphan deliveries already in the outbox.
    """
    out: dict[str, DigestTarget] = {}
    for raw in settings.digests:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            continue
        notify = raw.get("notify", ["log"])
        if isinstance(notify, str):
            notify = [notify]
        if not isinstance(notify, (list, tuple)) or not all(isinstance(t, str) for t in notify):
            continue
        secret = raw.get("webhook_secret_env")
        out[PREFIX + raw["name"]] = DigestTarget(raw["name"], tuple(t.strip() for t in notify),
                                                 secret if isinstance(secret, str) else None)
    return out


# --- what a digest says --------------------------------------------------------------------


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


def snapshot(session: Session, settings: Settings, digest: Digest, watch: Sequence[tuple[str, tuple[str, ...]]],
             now: datetime) -> list[dict[str, Any]]:
    """Per watched GPU: the best current offer of fresh providers, and the providers not counted."""
    status = provider_status(session, settings, now)
    ids = sorted({g for _, gs in watch for g in gs})
    rows = latest_prices(session, gpus=ids, kinds=list(digest.kinds)) if ids else []
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
                f"({count_txt}{best.get('gpu')}, {best.get('sku')}{avail})")
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
    with Session(engine) as session:
        rows = session.exec(select(DigestState).where(col(DigestState.name).in_(list(names)))).all()
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
            with Session(engine) as session:
                rules = load_rules(settings, session)
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
        lines = snapshot(session, settings, d, watch, now)
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
    # The outbox is imported here: it imports this module for the digests' channels.
    from tracker.alerts.deliver import deliver_event

    deliveries = deliver_event(engine, settings, event_id, rules=(), now=now, environ=environ)
    return DigestRun(d.name, d.describe(), "sent", due, d.next_due(now), now, event_id, title, text, details,
                     tuple(deliveries))

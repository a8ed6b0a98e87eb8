"""Digest definitions: the ``[[digests]]`` tables of the config, parsed and checked.

The outbox needs the digests' channels and the composer needs their schedules; both read them
from here, so neither imports the other's module for them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tracker.alerts.channels import check_target, display
from tracker.alerts.rules import (
    _ENV_NAME,
    DEFAULT_KINDS,
    _kinds,
    _show,
    _str_list,
    check_table,
    check_tables,
)
from tracker.config.settings import Settings, parse_duration
from tracker.errors import ConfigError

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
    allow_hosts: tuple[str, ...] = ()


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


def parse_digest(raw: Mapping[str, Any], *, where: str = "digests", catalog_file: Any = None,
                 allow_hosts: Sequence[str] = ()) -> Digest:
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
        check_target(target, f"{where}: notify[{i}]", allow_hosts)
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
    from tracker.catalog.specs import gpu_ids_matching, load_catalog

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


def parse_digests(tables: Sequence[Mapping[str, Any]], *, catalog_file: Any = None,
                  allow_hosts: Sequence[str] = ()) -> list[Digest]:
    seen: set[str] = set()
    out = []
    for i, raw in enumerate(tables):
        d = parse_digest(raw, where=f"digests[{i}]", catalog_file=catalog_file, allow_hosts=allow_hosts)
        if d.name in seen:
            raise ConfigError(f"digest {d.name!r}: name: used by more than one digest")
        seen.add(d.name)
        out.append(d)
    return out


def config_digests(settings: Settings) -> list[Digest]:
    return parse_digests(settings.digests, catalog_file=settings.catalog_file,
                         allow_hosts=settings.delivery.allow_hosts)


def check_config(settings: Settings) -> list[str]:
    """Every problem of the config file's digests, one message per digest (for ``config check``)."""
    return check_tables(settings.digests, "digests", "digest",
                        lambda raw, where: parse_digest(raw, where=where, catalog_file=settings.catalog_file,
                                                        allow_hosts=settings.delivery.allow_hosts))


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
                                                 secret if isinstance(secret, str) else None,
                                                 tuple(settings.delivery.allow_hosts))
    return out


# --- what a digest says --------------------------------------------------------------------



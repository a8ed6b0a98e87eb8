"""Notification channels: what a ``notify`` entry may be, and sending one message through it.

A ``notify`` entry is one of:

* an **Apprise URL** (``ntfy://topic``, ``slack://...``, ``discord://...``, ``tgram://...``,
  ``mailto://user:pass@host``, ``json://host/path`` ...), sent with the ``apprise`` library;
* ``webhook+https://host/path`` (or ``webhook+http://``): a plain JSON ``POST`` of the event
  (see ``tracker.alerts.message.payload``). With the rule's ``webhook_secret_env`` set, the
  body is signed: ``X-GPU-Tracker-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>``
  with the secret read from that environment variable at send time. Every POST also carries
  ``X-GPU-Tracker-Event`` (the event id, stable across retries: use it to drop duplicates)
  and ``X-GPU-Tracker-Delivery`` (the outbox id);
* ``console`` (standard output) or ``log`` (a WARNING on the ``tracker.alerts.notify`` logger);
* ``env:VAR``: any of the above, read from the environment variable ``VAR`` when sending, so
  a URL holding a token never has to be written in the config file or the database.

Secrets never leave this module: errors are built from status codes and exception classes,
and any library text is scrubbed of the URL's secret parts (``tracker.alerts.redact``).
Apprise's own logger is detached from the root logger (its failures are reported once, by
``tracker.alerts``), and a filter scrubs every known channel URL from the records of Apprise,
urllib3 and httpx, which print service URLs (tokens included) at debug or info level.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import sys
import warnings
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from tracker import __version__
from tracker.alerts.redact import (
    ENV_PREFIX,
    redact_url,
    register_secret_url,
    scheme_of,
    scrub,
)
from tracker.alerts.targets import check_host, guarded
from tracker.errors import ConfigError

log = logging.getLogger("tracker.alerts.notify")

SIGNATURE_HEADER = "X-GPU-Tracker-Signature-256"
EVENT_HEADER = "X-GPU-Tracker-Event"
DELIVERY_HEADER = "X-GPU-Tracker-Delivery"
WEBHOOK_PREFIX = "webhook+"
SEND_TIMEOUT_S = 15.0
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class DeliveryError(Exception):
    """A channel could not be reached or refused the message; the text is safe to store."""


@dataclass(frozen=True, slots=True)
class Message:
    """What a channel sends: a title and text for people, a JSON document for machines."""

    title: str
    body: str
    payload: Mapping[str, Any]
    event_id: int
    delivery_id: int | None = None


def quiet_apprise() -> None:
    """Keep Apprise's log records (which may hold tokens) away from the application's handlers."""
    logging.getLogger("apprise").propagate = False


def channel_kind(target: str) -> str:
    """``console``, ``log``, ``webhook``, ``env`` or ``apprise`` (no validation)."""
    t = target.strip()
    low = t.lower()
    if low in ("console", "console://", "stdout://"):
        return "console"
    if low in ("log", "log://"):
        return "log"
    if t.startswith(ENV_PREFIX):
        return "env"
    if (scheme_of(t) or "").startswith(WEBHOOK_PREFIX):
        return "webhook"
    return "apprise"


def check_target(target: Any, where: str, allow_hosts: Collection[str] = ()) -> None:
    """Raise ``ConfigError`` (naming ``where``, never the URL) unless ``target`` can be sent to.

    An ``env:VAR`` target is checked for the variable's name only: its value may appear later
    (and is checked when sent). A host on this machine, the local network or a metadata service
    is refused unless ``allow_hosts`` names it (``tracker.alerts.targets``).
    """
    if not isinstance(target, str) or not target.strip():
        raise ConfigError(f"{where}: must be a non-empty string (an Apprise URL, webhook+https://..., console or log)")
    kind = channel_kind(target)
    if kind in ("console", "log"):
        return
    if kind == "env":
        name = target.strip()[len(ENV_PREFIX):]
        if not _ENV_NAME.match(name):
            raise ConfigError(f"{where}: env: must be followed by an environment variable name")
        return
    register_secret_url(target.strip())
    scheme = scheme_of(target)
    if scheme is None:
        raise ConfigError(f"{where}: not a URL (expected scheme://...; an Apprise URL, webhook+https://..., console or log)")
    if kind == "webhook":
        inner = scheme[len(WEBHOOK_PREFIX):]
        if inner not in ("http", "https"):
            raise ConfigError(f"{where}: a webhook URL is webhook+https://host/path or webhook+http://host/path")
        import httpx  # here, not at the top: listing rules (``alerts list``) checks targets without sending

        if not httpx.URL(_webhook_url(target)).host:
            raise ConfigError(f"{where}: the webhook URL has no host")
        check_host(_webhook_url(target), where, allow_hosts)
        return
    check_host(target.strip(), where, allow_hosts)
    if not _apprise_loads(target.strip()):
        hint = " (for a plain JSON webhook write webhook+" + scheme + "://...)" if scheme in ("http", "https") else ""
        raise ConfigError(f"{where}: Apprise does not accept this {scheme}:// URL{hint}")


def _apprise() -> Any:
    """The ``apprise`` module, loaded quietly.

    Its e-mail plugin imports the standard ``imghdr`` module, deprecated since Python 3.11; that
    warning is about Apprise, not about anything a user can change, so it is silenced here once.
    """
    if sys.version_info < (3, 13) and "imghdr" not in sys.modules:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*imghdr.*")
            import imghdr  # noqa: F401
    import apprise

    quiet_apprise()
    return apprise


def _apprise_loads(url: str) -> bool:
    apprise = _apprise()
    return apprise.Apprise.instantiate(url, asset=_asset(), suppress_exceptions=True) is not None


def _asset() -> Any:
    """No redirects: a redirect could lead to an internal address (``tracker.alerts.targets``)."""
    return _apprise().AppriseAsset(storage_mode="memory", http_redirects=False)


def _webhook_url(target: str) -> str:
    return target.strip()[len(WEBHOOK_PREFIX):]


def resolve_target(target: str, environ: Mapping[str, str] | None = None) -> str:
    """The real URL of a ``notify`` entry (``env:VAR`` is looked up now)."""
    t = target.strip()
    if not t.startswith(ENV_PREFIX):
        return t
    name = t[len(ENV_PREFIX):]
    env = os.environ if environ is None else environ
    value = (env.get(name) or "").strip()
    if not value:
        raise DeliveryError(f"set {name} to the channel URL")
    if value.startswith(ENV_PREFIX):
        raise DeliveryError(f"{name} holds another env: reference; put the URL itself there")
    return value


def send(
    target: str,
    message: Message,
    *,
    secret_env: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = SEND_TIMEOUT_S,
    allow_hosts: Collection[str] = (),
) -> None:
    """Send ``message`` through one channel; raise ``DeliveryError`` (scrubbed) on failure.

    The host is checked again (an ``env:`` URL is known only now), and every address it resolves
    to is checked as the channel connects; no channel follows a redirect (``tracker.alerts.targets``)."""
    url = resolve_target(target, environ)
    register_secret_url(url)
    try:
        kind = channel_kind(url)
        if kind in ("webhook", "apprise"):
            try:
                check_host(_webhook_url(url) if kind == "webhook" else url, "channel", allow_hosts)
            except ConfigError as exc:
                raise DeliveryError(str(exc)) from None
        if kind == "console":
            sys.stdout.write(f"{message.title}\n{message.body}\n")
            sys.stdout.flush()
        elif kind == "log":
            log.warning("%s | %s", message.title, message.body.replace("\n", " | "))
        elif kind == "webhook":
            with guarded(allow_hosts):
                _send_webhook(url, message, secret_env, environ, timeout)
        else:
            with guarded(allow_hosts):
                _send_apprise(url, message, timeout)
    except DeliveryError as exc:
        raise DeliveryError(scrub(str(exc), [url])) from None
    except Exception as exc:  # noqa: BLE001 - whatever a channel library raises becomes a safe message
        raise DeliveryError(scrub(f"{type(exc).__name__}: {exc}", [url])) from None


def sign(body: bytes, secret: str) -> str:
    """The signature header value for ``body``: ``sha256=<hex>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _send_webhook(
    url: str, message: Message, secret_env: str | None, environ: Mapping[str, str] | None, timeout: float
) -> None:
    body = json.dumps(message.payload, sort_keys=True, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"gpu-price-tracker/{__version__}",
        EVENT_HEADER: str(message.event_id),
    }
    if message.delivery_id is not None:
        headers[DELIVERY_HEADER] = str(message.delivery_id)
    if secret_env:
        env = os.environ if environ is None else environ
        secret = env.get(secret_env) or ""
        if not secret:
            raise DeliveryError(f"set {secret_env} to the webhook signing secret")
        headers[SIGNATURE_HEADER] = sign(body, secret)
    import httpx

    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            response = client.post(_webhook_url(url), content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise DeliveryError(f"{type(exc).__name__}: {exc}") from None
    if not 200 <= response.status_code < 300:
        raise DeliveryError(f"HTTP {response.status_code} {response.reason_phrase}".strip())


def _send_apprise(url: str, message: Message, timeout: float) -> None:
    notifier = _apprise().Apprise(asset=_asset())
    if not notifier.add(url):
        raise DeliveryError(f"Apprise does not accept this {scheme_of(url) or ''}:// URL")
    lines: list[str] = []

    def keep(entry: Any, _plugin: Any = None) -> None:
        if getattr(entry, "level", "") in ("WARNING", "ERROR", "CRITICAL"):
            lines.append(str(getattr(entry, "message", entry)))

    result = notifier.notify(body=message.body, title=message.title, timeout=timeout, log_callback=keep)
    if not result:
        detail = "; ".join(dict.fromkeys(lines)) or f"status {getattr(getattr(result, 'status', None), 'name', 'FAILURE')}"
        raise DeliveryError(f"Apprise {scheme_of(url)}: {detail}")


def display(target: str) -> str:
    """The form of a ``notify`` entry that may be shown or stored."""
    return redact_url(target)

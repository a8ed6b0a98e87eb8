"""Who may talk to the dashboard and API: a bearer token, the Host header, security headers.

* **Token.** ``serve`` bound anywhere but loopback refuses to start without
  ``$GPU_TRACKER_API_TOKEN``; once a token is set every request (loopback too) needs it, as
  ``Authorization: Bearer <token>`` or, so a browser can open the dashboard, HTTP Basic with the
  token as the password (any user name). Compared with ``hmac.compare_digest`` (constant time).
  ``/healthz`` stays open: container health checks have no token and it shows nothing but
  "ok" and the version.
* **Host.** The Host header must name this server (``web.allowed_hosts``, plus the loopback
  names, the bind address, the machine's name and ``web.base_url``'s host), so a page on
  another site that resolves its own name to 127.0.0.1 (DNS rebinding) cannot read the API.
  Starlette's ``TrustedHostMiddleware`` cuts ``[::1]:8000`` at the first colon, so the check
  is done here.
* **Headers.** ``X-Content-Type-Options``, ``X-Frame-Options``, ``Referrer-Policy`` and a
  Content-Security-Policy of ``'self'`` (the dashboard's plotly.js is served locally, so it
  works under it) on every response.

A plain ASGI middleware rather than ``@app.middleware("http")``: Starlette's
``BaseHTTPMiddleware`` costs a task and a stream per request, which shows in requests/s.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import json
import os
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tracker.config.settings import Settings
from tracker.errors import ConfigError

API_TOKEN_ENV = "GPU_TRACKER_API_TOKEN"
#: A token shorter than this is refused: it could be guessed.
MIN_TOKEN_LENGTH = 16
#: Paths open without a token.
OPEN_PATHS = frozenset({"/healthz"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "*"})
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"content-security-policy", CSP.encode()),
    (b"cross-origin-opener-policy", b"same-origin"),
)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """``localhost`` or an address in 127.0.0.0/8 or ::1."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a Host header, without port and brackets: ``[::1]:8000`` -> ``::1``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else ""
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


@dataclass(frozen=True)
class Security:
    """What the middleware enforces: ``token`` (None: no token asked) and the accepted Host names
    (None: any; ``*.example.com`` matches subdomains)."""

    token: str | None = None
    allowed_hosts: frozenset[str] | None = None

    def host_ok(self, header: str) -> bool:
        if self.allowed_hosts is None or "*" in self.allowed_hosts:
            return True
        name = host_name(header)
        if not name:
            return False
        return name in self.allowed_hosts or any(
            p.startswith("*.") and name.endswith(p[1:]) for p in self.allowed_hosts)

    def authorised(self, authorization: str) -> bool:
        if self.token is None:
            return True
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer":
            given = value
        elif scheme.lower() == "basic":
            try:
                given = base64.b64decode(value, validate=True).decode("utf-8").partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                return False
        else:
            return False
        return hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8"))


def default_allowed_hosts(settings: Settings, bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """Loopback names, the bind address (or, bound to every interface, this machine's names),
    ``web.base_url``'s host, ``web.allowed_hosts`` and ``extra``."""
    names = set(LOOPBACK_NAMES)
    bind = bind_host.strip().strip("[]").lower()
    if bind in WILDCARD_BINDS:
        hostname = socket.gethostname().lower()
        names |= {hostname, hostname.split(".")[0]}
    else:
        names.add(bind)
    if settings.web.base_url:
        base = urlsplit(settings.web.base_url).hostname
        if base:
            names.add(base.lower())
    names |= {h.strip().lower() for h in (*settings.web.allowed_hosts, *extra) if h.strip()}
    return frozenset(names)


def security_for(settings: Settings, bind_host: str | None = None, environ: Mapping[str, str] | None = None,
                 extra_hosts: Iterable[str] = ()) -> Security:
    """The security of a server bound to ``bind_host`` (default ``web.host``).

    Raises ``ConfigError`` when the bind is not loopback and no token is set, or the token is short.
    """
    env = os.environ if environ is None else environ
    host = settings.web.host if bind_host is None else bind_host
    token = env.get(API_TOKEN_ENV) or None
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(f"{API_TOKEN_ENV} is too short: use at least {MIN_TOKEN_LENGTH} random characters "
                          "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    if token is None and not is_loopback(host):
        raise ConfigError(f"serving on {host} (not loopback) needs an API token: set {API_TOKEN_ENV} "
                          f"(at least {MIN_TOKEN_LENGTH} characters); clients send 'Authorization: Bearer <token>'")
    return Security(token=token, allowed_hosts=default_allowed_hosts(settings, host, extra_hosts))


def _is_html_path(path: str) -> bool:
    return not (path.startswith("/api") or path in ("/metrics", "/healthz", "/openapi.json"))


class SecurityMiddleware:
    """Host check, then the token, then the security headers on whatever answers."""

    def __init__(self, app: ASGIApp, security: Security) -> None:
        self.app = app
        self.security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k: v for k, v in scope.get("headers", ()) if k in (b"host", b"authorization")}
        path = scope.get("path", "")
        if not self.security.host_ok(headers.get(b"host", b"").decode("latin-1")):
            await _deny(send, 400, "unknown Host header: add this name to web.allowed_hosts", {})
            return
        if path not in OPEN_PATHS and not self.security.authorised(headers.get(b"authorization", b"").decode("latin-1")):
            challenge = 'Basic realm="gpu-price-tracker"' if _is_html_path(path) else 'Bearer realm="gpu-price-tracker"'
            await _deny(send, 401, f"an API token is required: send 'Authorization: Bearer <{API_TOKEN_ENV}>'",
                        {"www-authenticate": challenge})
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", ())}
                message["headers"] = [*message.get("headers", ()), *(h for h in HEADERS if h[0] not in present)]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _deny(send: Send, status: int, detail: str, extra: dict[str, str]) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store"), *HEADERS, *((k.encode(), v.encode()) for k, v in extra.items())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = ["API_TOKEN_ENV", "Security", "SecurityMiddleware", "is_loopback", "security_for"]

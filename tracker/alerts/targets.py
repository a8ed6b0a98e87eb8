"""Where an alert may be sent: never to this machine, the local network or a cloud metadata
service unless the operator allows that host by name.

An alert URL is written by whoever can edit the config or run ``alerts add``; without this rule
``json://169.254.169.254/...`` would make the collector post to the cloud's metadata service
(server-side request forgery). The rule, checked twice:

* **When a rule is read** (``alerts add``, ``config check``, every load): the URL's host is
  refused when it is an address that is not global -- loopback, private (10/8, 172.16/12,
  192.168/16, fc00::/7), link-local (169.254/16 with the metadata address, fe80::/10),
  unspecified (``0.0.0.0``, ``::``), shared (100.64/10), reserved -- in any spelling
  (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``, ``[::1]``, ``[::ffff:127.0.0.1]``), or a
  name that is local by definition (``localhost``, ``*.localhost``, ``*.internal`` such as
  ``metadata.google.internal``, ``*.local``, ``metadata``, ``instance-data``).
* **When a message is sent**: every address a channel's host resolves to is checked as the
  connection is made (the resolver call the channel library makes is guarded, so what is
  checked is what is connected to: DNS that changes after the first check is caught), and
  no channel follows a redirect.

``[delivery] allow_hosts = ["127.0.0.1", "alerts.lan"]`` allows hosts by name (as written in
the URL; an address in any spelling matches its plain form).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

from tracker.errors import ConfigError

LOCAL_NAMES: Final = frozenset({"localhost", "metadata", "instance-data", "metadata.google.internal"})
LOCAL_SUFFIXES: Final = (".localhost", ".internal", ".local", ".home.arpa")
HINT: Final = "allow it by name in [delivery] allow_hosts if it is yours"

IP = ipaddress.IPv4Address | ipaddress.IPv6Address


def host_of(url: str) -> str | None:
    """The host of ``scheme://[user@]host[:port]/...`` in lower case (brackets of IPv6 removed), or None."""
    if "://" not in url:
        return None
    rest = url.split("://", 1)[1]
    for sep in "/?#":
        rest = rest.split(sep, 1)[0]
    hostport = rest.rsplit("@", 1)[-1]
    if hostport.startswith("["):
        return hostport[1:].split("]", 1)[0].lower() or None
    host, _, port = hostport.partition(":")
    if port and not port.isdigit():
        host = hostport  # ``token:secret`` of a hosted service, not host:port
    return host.lower() or None


def literal_address(host: str) -> IP | None:
    """``host`` as an IP address when it is one in any spelling the resolver accepts
    (dotted, integer, hex, octal, short forms; IPv6 with or without a zone)."""
    text = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if not text or not all(c in "0123456789abcdefx." for c in text):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))  # 2130706433, 0x7f000001, 0177.0.0.1, 127.1
    except OSError:
        return None


def internal_address(ip: IP) -> bool:
    """Not a global address (loopback, private, link-local, shared, reserved, unspecified ...)."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            return internal_address(embedded)
        if ip in ipaddress.IPv6Network("64:ff9b::/96"):  # NAT64 of an IPv4 address
            return internal_address(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return not ip.is_global or ip.is_multicast


def local_name(host: str) -> bool:
    h = host.rstrip(".")
    return h in LOCAL_NAMES or h.endswith(LOCAL_SUFFIXES)


def _normal(host: str) -> str:
    ip = literal_address(host)
    return str(ip) if ip is not None else host.strip().strip("[]").rstrip(".").lower()


def allowed(host: str, allow: Collection[str]) -> bool:
    """Whether the operator allowed ``host`` by name (an address in any spelling matches)."""
    return bool(allow) and _normal(host) in {_normal(a) for a in allow}


def refused_host(url: str, allow: Collection[str] = ()) -> str | None:
    """Why ``url``'s host may not be sent to (a short reason naming the host), or None."""
    host = host_of(url)
    if host is None or allowed(host, allow):
        return None
    ip = literal_address(host)
    if ip is not None and internal_address(ip):
        return f"host {host} is {_kind(ip)} address"
    if ip is None and local_name(host):
        return f"host {host} is a local or metadata name"
    return None


def _kind(ip: IP) -> str:
    if ip.is_loopback:
        return "a loopback"
    if ip.is_link_local:
        return "a link-local (cloud metadata)"
    if ip.is_unspecified:
        return "an unspecified"
    if ip.is_private:
        return "a private"
    return "a non-public"


def check_host(url: str, where: str, allow: Collection[str] = ()) -> None:
    """``ConfigError`` naming ``where`` when ``url``'s host is internal and not allowed."""
    why = refused_host(url, allow)
    if why:
        raise ConfigError(f"{where}: {why}; alerts are not sent to this machine, the local network or a "
                          f"metadata service ({HINT})")


# --- send time ------------------------------------------------------------------------------------

#: The hosts allowed inside ``guarded`` (None outside it). A context variable, not a thread-local:
#: Apprise runs a call with a deadline on a worker thread with a copy of the caller's context.
_allow: ContextVar[frozenset[str] | None] = ContextVar("alert_allow_hosts", default=None)
_install_lock = threading.Lock()
_original: Callable[..., Any] | None = None


class RefusedAddress(OSError):
    """A channel's host resolved to an internal address that is not allowed."""


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    assert _original is not None
    results = _original(host, *args, **kwargs)
    allow = _allow.get()
    if allow is None or host is None:
        return results
    name = host.decode() if isinstance(host, bytes) else str(host)
    if allowed(name, allow):
        return results
    for *_rest, sockaddr in results:
        ip = literal_address(str(sockaddr[0]))
        if ip is None or internal_address(ip):
            raise RefusedAddress(f"refused: the channel's host resolves to {_kind(ip) if ip else 'an unknown'} "
                                 f"address ({HINT})")
    return results


def _no_redirects(send: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Any, request: Any, **kwargs: Any) -> Any:
        if _allow.get() is not None:
            kwargs["allow_redirects"] = False
        return send(self, request, **kwargs)

    wrapper.__wrapped__ = send  # type: ignore[attr-defined]
    return wrapper


def _install() -> None:
    """Guard the resolver (and make ``requests``, which Apprise uses, follow no redirect) for
    code running inside ``guarded`` (its context); outside it both behave as before."""
    global _original
    with _install_lock:
        if _original is not None:
            return
        _original = socket.getaddrinfo
        socket.getaddrinfo = _guarded_getaddrinfo
        try:
            import requests.sessions
        except ImportError:  # pragma: no cover - apprise depends on requests
            return
        requests.sessions.Session.send = _no_redirects(requests.sessions.Session.send)  # type: ignore[method-assign]


@contextmanager
def guarded(allow: Collection[str] = ()) -> Iterator[None]:
    """Within the block (and threads started with its context), no connection is made to an
    internal address unless allowed, and ``requests`` follows no redirect."""
    _install()
    token = _allow.set(frozenset(allow))
    try:
        yield
    finally:
        _allow.reset(token)

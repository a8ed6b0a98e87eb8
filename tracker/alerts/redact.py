"""Keeping notification secrets out of logs, errors, CLI output and the database.

Channel URLs carry credentials in many places: ``mailto://user:password@host``, Slack and
Discord tokens as path segments, a Telegram bot token where a host would be, ``?token=``
query values, an ntfy topic that anyone knowing it can read. So the displayed form keeps
only what identifies a channel without granting access: the scheme, a real-looking host
name (with a dot, ``localhost`` or an IP address) and the port. Everything else becomes
``***``::

    json://127.0.0.1:9999/hook              -> json://127.0.0.1:9999/***
    mailto://user:pass@example.com          -> mailto://***@example.com
    tgram://123456:ABC-token/987            -> tgram://***/***
    webhook+https://h.example.com/x?token=a -> webhook+https://h.example.com/***?***
    env:SLACK_URL                           -> env:SLACK_URL   (only a variable's name)

``scrub(text, url)`` removes every secret-looking part of ``url`` from a message (an error
from a library that echoed the URL), for ``outbox.last_error`` and log lines.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, unquote

_HOSTLIKE = re.compile(
    r"^(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]|(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,})(?::\d{1,5})?$"
)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://(.*)$", re.S)
ENV_PREFIX = "env:"
PLAIN_CHANNELS = ("console", "log")


def scheme_of(url: str) -> str | None:
    """The URL's scheme in lower case (safe to show), or ``None`` when it has none."""
    m = _SCHEME.match(url.strip())
    return m.group(1).lower() if m else None


def _split(rest: str) -> tuple[str, str, str, str]:
    """(userinfo, hostport, path, query) of what follows ``scheme://``."""
    rest = rest.split("#", 1)[0]
    query = ""
    if "?" in rest:
        rest, query = rest.split("?", 1)
    path = ""
    if "/" in rest:
        rest, path = rest.split("/", 1)
    userinfo = ""
    if "@" in rest:
        userinfo, rest = rest.rsplit("@", 1)
    return userinfo, rest, path, query


def redact_url(url: str) -> str:
    """The displayable form of a channel URL (see the module docstring)."""
    text = url.strip()
    if text.startswith(ENV_PREFIX) or text.lower() in PLAIN_CHANNELS:
        return text
    m = _SCHEME.match(text)
    if not m:
        return "***"
    scheme, rest = m.group(1), m.group(2)
    userinfo, hostport, path, query = _split(rest)
    out = f"{scheme}://"
    if userinfo:
        out += "***@"
    out += hostport if _HOSTLIKE.match(hostport) else ("***" if hostport else "")
    if path.strip("/"):
        out += "/***"
    if query:
        out += "?***"
    return out


#: Apprise schemes whose host or path *is* the credential (bot tokens, webhook ids and keys,
#: API keys, a topic anyone knowing it can read): anything after ``scheme://`` is secret.
TOKEN_SCHEMES = frozenset({
    "slack", "slacks", "discord", "tgram", "msteams", "pover", "pbul", "join", "gotify", "gotifys", "ntfy", "ntfys",
    "mmost", "mmosts", "rocket", "rockets", "matrix", "matrixs", "zulip", "twilio", "ifttt", "opsgenie", "pagerduty",
    "signal", "signals", "spush", "techulus", "pushed", "prowl", "pjet", "pjets", "psafer", "psafers", "gchat", "flock",
    "ryver", "kumulos", "line", "workflow", "workflows", "bark", "barks", "lametric", "lametrics", "clicksend",
    "mailgun", "sendgrid", "sparkpost", "ses", "sns", "o365", "azure", "guilded", "revolt", "notica", "notifico",
    "apprise", "apprises", "pushme", "pushplus", "serverchan", "dingtalk", "wxteams", "wecombot", "feishu", "lark",
    "threema", "smseagle", "smseagles", "seven", "bulksms", "bulkvs", "d7sms", "msg91", "plivo", "vonage", "nexmo",
    "sinch", "burstsms", "httpsms", "fcm", "onesignal", "parsep", "parseps", "pushover", "reddit", "twitter",
    "mastodon", "toot", "misskey", "bluesky", "popcorn", "simplepush", "pushbullet", "pushjet", "pushy", "streamlabs",
})
#: Hosts whose webhook URLs carry their secret in the path.
WEBHOOK_HOSTS = frozenset({"hooks.slack.com", "discord.com", "discordapp.com", "outlook.office.com",
                           "chat.googleapis.com", "api.telegram.org", "hooks.zapier.com", "maker.ifttt.com"})
#: Query keys whose value is a credential.
_SECRET_KEYS = re.compile(r"(?i)(token|key|secret|pass|pwd|auth|sig|signature|credential|session|code)")
#: A path segment that looks generated rather than named: long, with letters and digits mixed.
_TOKENISH = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_\-.~%]{16,}$")


def literal_secrets(url: str) -> list[str]:
    """What in a channel URL given literally is a credential (empty: nothing seen).

    The reasons name *where* the secret is (user:password, the token of a ``slack://`` URL, a
    ``token=`` query value, a generated-looking path segment), never its value.
    """
    text = url.strip()
    if text.startswith(ENV_PREFIX) or text.lower() in PLAIN_CHANNELS:
        return []
    m = _SCHEME.match(text)
    if not m:
        return []
    scheme, rest = m.group(1).lower(), m.group(2)
    userinfo, hostport, path, query = _split(rest)
    found: list[str] = []
    if userinfo:
        found.append("a user name or password before '@'")
    if scheme.removeprefix("webhook+") in TOKEN_SCHEMES and (hostport or path.strip("/")):
        found.append(f"the token of a {scheme}:// URL")
    elif path.strip("/") and hostport.lower().rsplit(":", 1)[0] in WEBHOOK_HOSTS:
        found.append(f"the path of a {hostport} webhook")
    elif any(_TOKENISH.match(unquote(seg)) for seg in path.split("/") if seg):
        found.append("a generated-looking path segment (a webhook secret)")
    keys = sorted({k for k, v in parse_qsl(query, keep_blank_values=True) if v and _SECRET_KEYS.search(k)})
    if keys:
        found.append(f"the query value of {', '.join(keys)}")
    return found


def secret_parts(url: str) -> list[str]:
    """Every piece of ``url`` that may be a secret, longest first (for ``scrub``)."""
    text = url.strip()
    if text.startswith(ENV_PREFIX) or text.lower() in PLAIN_CHANNELS:
        return []
    parts: set[str] = {text}
    m = _SCHEME.match(text)
    rest = m.group(2) if m else text
    parts.add(rest)
    userinfo, hostport, path, query = _split(rest)
    for piece in re.split(r"[:@]", userinfo) if userinfo else []:
        parts.update({piece, unquote(piece)})
    if userinfo:
        parts.add(userinfo)
    if hostport and not _HOSTLIKE.match(hostport):
        parts.update({hostport, unquote(hostport)})
        parts.update(p for p in hostport.split(":") if p)
    for seg in path.split("/"):
        if seg:
            parts.update({seg, unquote(seg)})
    if path:
        parts.add(path)
    if query:
        parts.add(query)
        for _k, v in parse_qsl(query, keep_blank_values=True):
            if v:
                parts.add(v)
    # Fragments of one or two characters ("a", "v1") would mangle messages without protecting anything.
    return sorted((p for p in parts if len(p) >= 3), key=len, reverse=True)


def scrub(text: str, urls: Iterable[str]) -> str:
    """``text`` with every secret-looking part of every URL in ``urls`` replaced by ``***``."""
    for url in urls:
        for part in secret_parts(url):
            # whole pieces only: a path segment "hook" must not turn "webhook" into "web***"
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(part)}(?![A-Za-z0-9])", "***", text)
    return text


# --- log records of the libraries that send (they may print a URL with its token) ----------

_known_urls: set[str] = set()
_filtered: set[str] = set()


class SecretFilter(logging.Filter):
    """Scrubs every registered channel URL's secret parts from records of the logger it sits on."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _known_urls:
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is the logging module's business
            return True
        clean = scrub(message, list(_known_urls))
        if clean != message:
            record.msg, record.args = clean, None
        return True


#: Loggers that see channel URLs: Apprise (its plugins log full URLs at debug level), urllib3
#: (request lines, under Apprise), httpx (request URLs at INFO).
LIBRARY_LOGGERS = ("apprise", "urllib3.connectionpool", "httpx")


def register_secret_url(url: str) -> None:
    """Remember a channel URL so its secrets are scrubbed from those libraries' log records."""
    if url.startswith(ENV_PREFIX) or url.lower() in PLAIN_CHANNELS:
        return
    _known_urls.add(url)
    for name in LIBRARY_LOGGERS:
        if name not in _filtered:
            logging.getLogger(name).addFilter(SecretFilter())
            _filtered.add(name)

"""Scrubbing secrets out of what the pipeline keeps: error messages, failed payloads, recordings.

Two nets, because a payload can carry a secret the scraper never held:

* ``scrub``: the values the scraper holds (configured credentials and runtime tokens), matched
  case-insensitively, as they are and percent-encoded (an API may echo a key back changed);
* ``scrub_fields``: the value of any field whose name says it is a secret, in JSON
  (``"access_token": "..."``), in a query string (``?api_key=...``) and in a form or header
  line (``Authorization: Bearer ...``), whoever put it there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import quote, quote_plus

#: What a scrubbed value becomes in a message or a kept payload.
MASK: Final = "***"

#: JSON field names whose values are secrets (an OAuth answer, an echoed request): names no price
#: list uses for anything else, so masking them never changes what a parser reads.
BODY_SECRET_NAMES: Final = (
    "access_token", "refresh_token", "id_token", "client_secret", "api_key", "apikey", "auth_token", "password",
    "private_key", "secret_key", "session_token",
)
#: Query parameter and header names whose values are secrets (a URL's ``?key=``, a signature).
SECRET_NAMES: Final = (
    *BODY_SECRET_NAMES, "api-key", "x-api-key", "token", "passwd", "secret", "authorization", "cookie", "set-cookie",
    "signature", "sig", "key", "x-amz-security-token", "x-amz-signature", "client_id",
)


def _alternation(names: Iterable[str]) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


_JSON_FIELD = re.compile(rf'("(?:{_alternation(BODY_SECRET_NAMES)})"\s*:\s*")((?:[^"\\]|\\.)*)(")', re.IGNORECASE)
_QUERY_FIELD = re.compile(rf"([?&;](?:{_alternation(SECRET_NAMES)})=)([^&#\s\"'<>]*)", re.IGNORECASE)
_HEADER_LINE = re.compile(r"((?:^|[\r\n])\s*(?:authorization|x-api-key|api-key|cookie)\s*:\s*)([^\r\n]*)", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether a query parameter, header or JSON field of this name holds a secret."""
    return name.strip().lower() in SECRET_NAMES


def scrub(message: str, secrets: Iterable[str], mask: str = MASK) -> str:
    """``message`` with every known secret value replaced by ``mask`` (case-insensitive, as is
    and percent-encoded); values shorter than 4 characters are left (they would mask words)."""
    for secret in secrets:
        if not secret or len(secret) < 4:
            continue
        for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
            message = re.sub(re.escape(form), lambda _m: mask, message, flags=re.IGNORECASE)
    return message


def scrub_fields(text: str, mask: str = MASK) -> str:
    """``text`` with the value of every secret-named JSON field, query parameter and header line masked."""
    text = _JSON_FIELD.sub(lambda m: m.group(1) + mask + m.group(3), text)
    text = _QUERY_FIELD.sub(lambda m: m.group(1) + mask, text)
    return _HEADER_LINE.sub(lambda m: m.group(1) + mask, text)


def scrub_all(text: str, secrets: Iterable[str], mask: str = MASK) -> str:
    """Both nets: the known values, then the secret-named fields."""
    return scrub_fields(scrub(text, secrets, mask), mask)

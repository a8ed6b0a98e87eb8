"""Failure capture: the raw payload of a live collection whose parse failed, kept in the store.

A parse error says *what* changed ("payload has no 'data[3].price'"); fixing the scraper needs
the payload that broke it, and the next collection may already be fine again. So when parsing
fails, the payload is kept in ``parse_failure`` beside the prices (a table: it works the same on
SQLite and PostgreSQL): turned into text (``json`` for decoded JSON, ``text`` for a page or
bytes, ``repr`` otherwise), secrets scrubbed (the scraper's own values and any secret-named
field: ``tracker.pipeline.secrets``), then cut at ``MAX_PAYLOAD_CHARS``. Only the last
``KEEP`` per provider are kept. ``gpu-tracker providers --failure NAME [-o FILE]`` shows or
saves the newest one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final, NamedTuple

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from db import reads
from db.engine import engine_reader
from db.models import ParseFailure
from tracker.pipeline.secrets import scrub_all

#: Characters of a payload kept (after scrubbing): a page or an API answer is usually far less.
MAX_PAYLOAD_CHARS: Final = 512 * 1024
#: Failed payloads kept per provider (the newest ones).
KEEP: Final = 3

_table = ParseFailure.__table__  # type: ignore[attr-defined]


class Captured(NamedTuple):
    """A payload as kept: how it was turned into text, the text (scrubbed, cut), its full size."""

    encoding: str
    payload: str
    size: int
    truncated: bool


#: A kept failure, as ``latest`` reads it.
Failure = reads.FailureRow


def _as_text(raw: Any) -> tuple[str, str]:
    if isinstance(raw, (bytes, bytearray)):
        return "text", bytes(raw).decode("utf-8", "replace")
    if isinstance(raw, str):
        return "text", raw
    try:
        return "json", json.dumps(raw, ensure_ascii=False, indent=1, default=str)
    except (TypeError, ValueError, RecursionError):
        return "repr", repr(raw)


def capture(raw: Any, secrets: Iterable[str], limit: int = MAX_PAYLOAD_CHARS) -> Captured:
    """``raw`` as kept: text, secrets scrubbed, then cut to ``limit`` characters (scrubbing before
    the cut, so no prefix of a secret survives it). A huge text is first cut to twice the limit,
    so scrubbing never reads more than that."""
    encoding, body = _as_text(raw)
    size = len(body)
    clean = scrub_all(body[: 2 * limit], list(secrets))
    truncated = size > 2 * limit or len(clean) > limit
    return Captured(encoding, clean[:limit], size, truncated)


def keep(conn: Connection, provider: str, run_id: int | None, at: datetime, error: str, captured: Captured) -> None:
    """Store ``captured`` for ``provider`` and drop its older failures beyond ``KEEP``."""
    conn.execute(_table.insert().values(provider=provider, run_id=run_id, captured_at=at, error=error,
                                        encoding=captured.encoding, payload=captured.payload, size=captured.size,
                                        truncated=captured.truncated))
    conn.execute(text(
        "DELETE FROM parse_failure WHERE provider = :p AND id NOT IN "
        f"(SELECT id FROM parse_failure WHERE provider = :p ORDER BY captured_at DESC, id DESC LIMIT {KEEP})"
    ), {"p": provider})


def latest(engine: Engine, provider: str) -> Failure | None:
    """The newest kept failure of ``provider``, or ``None``."""
    with engine_reader(engine) as reader:
        return reads.latest_failure(reader, provider)


def kept(engine: Engine, provider: str) -> int:
    """How many failures of ``provider`` are kept."""
    with engine_reader(engine) as reader:
        return reads.failures_kept(reader, provider)

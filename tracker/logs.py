"""Log output for the long-running job: readable text, or one JSON object per line.

The per-scrape lines ``tracker.pipeline.collect`` writes are logfmt-like
(``scrape provider=vastai status=ok offers=412 changed=3 duration=1.20s``); the JSON
formatter lifts those pairs into fields, so a log shipper can filter on ``provider`` or
``status`` without parsing text::

    {"ts": "...", "level": "INFO", "logger": "tracker.pipeline.collect", "event": "scrape",
     "provider": "vastai", "status": "ok", "offers": 412, "changed": 3, "duration_s": 1.2,
     "message": "scrape provider=vastai ..."}

Fields passed as ``extra={"fields": {...}}`` are merged in as well.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_PAIR = re.compile(r"(?:^|(?<=\s))([a-z_]+)=")
#: Keys whose value is free text running to the end of the line.
_REST_KEYS = frozenset({"error", "reason"})
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_SECONDS = re.compile(r"^(\d+(?:\.\d+)?)s$")


def parse_pairs(message: str) -> dict[str, Any]:
    """``"scrape provider=x offers=3 duration=0.5s error=E: a b"`` -> fields (``event`` = first word)."""
    matches = list(_PAIR.finditer(message))
    if not matches:
        return {}
    fields: dict[str, Any] = {}
    head = message[: matches[0].start()].strip()
    if head and " " not in head:
        fields["event"] = head
    for i, m in enumerate(matches):
        key = m.group(1)
        if key in _REST_KEYS:
            fields[key] = message[m.end():].strip()
            break
        end = matches[i + 1].start() if i + 1 < len(matches) else len(message)
        raw = message[m.end():end].strip()
        if (sec := _SECONDS.match(raw)) and key.startswith("duration"):
            fields[f"{key}_s" if not key.endswith("_s") else key] = float(sec.group(1))
        elif _NUMBER.match(raw):
            fields[key] = float(raw) if "." in raw else int(raw)
        else:
            fields[key] = raw
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object per record, with logfmt pairs and ``extra={"fields": ...}`` lifted out."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
        }
        for key, value in parse_pairs(message).items():
            data.setdefault(key, value)
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            for key, value in extra.items():
                data.setdefault(key, value)
        data["message"] = message
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


class CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record is emitted.

    A handler bound to the stream object of the moment breaks once that stream is swapped
    and closed (CLI test runners, daemonisers): records then vanish in "I/O operation on
    closed file" tracebacks.
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure(log_format: str = "text", level: int = logging.INFO) -> None:
    """Send logs to stderr in ``text`` or ``json``; quiet the chatty libraries."""
    handler = CurrentStderrHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    quiet = logging.WARNING if level > logging.DEBUG else logging.INFO
    logging.getLogger("apscheduler").setLevel(quiet)
    # Alembic narrates every start (plugins, context, each migration step): only with --debug.
    logging.getLogger("alembic").setLevel(logging.WARNING if level > logging.DEBUG else logging.DEBUG)
    # httpx logs every request URL at INFO, query string included, and some APIs take their
    # key in the query (GCP's ?key=): never let those lines out, not even with --debug.
    for chatty in ("httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)

"""Epoch-second conversions of the stored times, without SQLAlchemy (``db.types`` re-exports
them beside the column types): the read path of ``db.direct`` needs them, not the types."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def epoch(value: datetime) -> int:
    """Integer epoch seconds (floored) of an aware datetime: how interval times are stored."""
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value!r}: timestamps must be timezone-aware UTC")
    return int(value.timestamp() // 1)


def from_epoch(value: int | float) -> datetime:
    """The UTC datetime of stored epoch seconds."""
    return datetime.fromtimestamp(int(value), UTC)

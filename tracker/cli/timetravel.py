"""``--at TIME`` for the commands that answer "now" (prices, value, tco, recommend), and the note
they and ``alerts check`` print when the newest data is older than the staleness limit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

import typer

from tracker.cli.common import State, print_notes

AtOption = Annotated[str | None, typer.Option(
    "--at", help="Answer as of this moment (ISO date-time, UTC): the prices in effect then.")]
StaleOption = Annotated[bool, typer.Option(
    "--include-stale", help="Also show providers whose newest collection is older than their staleness limit "
                            "(three collection intervals); each row says its age and source.")]


def parse_at(text: str | None, option: str = "--at") -> datetime | None:
    """``--at`` as an aware UTC time; a moment in the future is refused, as ``history`` refuses it."""
    if not text:
        return None
    from db.spans import parse_when, utcnow
    from tracker.errors import ConfigError

    when = parse_when(text)
    if when > utcnow():
        raise ConfigError(f"{option} {text}: that is in the future; prices are known up to now")
    return when


def warn_if_stale(st: State, providers: Sequence[str] | None = None, *, hint: str = "") -> str | None:
    """Print (to stderr) and return the staleness note, if the newest data is too old to be current."""
    from db.reads import stale_note

    note = stale_note(st.reader, providers=providers)
    if note:
        note += hint
        print_notes([note])
    return note

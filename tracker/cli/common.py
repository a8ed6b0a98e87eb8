"""What every command shares: the loaded settings and engine, output formats, errors.

Imports here stay light (Typer, Rich, the standard library): every command module imports
this one, so whatever it imports, ``gpu-tracker --help`` pays for. The settings, the engine
and the database layer are imported when a command first asks for them.
"""

from __future__ import annotations

import gc
import json
import math
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from tracker.cli.render import (
    ESSENTIAL,
    ColumnSpec,
    Rows,
    as_columns,
    csv_text,
    pick_columns,
    plain_rows,
    print_table,
    quantity,
    row_keys,
    tsv,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from db.reader import Reader
    from tracker.config.settings import Settings

console = Console()
err_console = Console(stderr=True)


def finite(value: float | None) -> float | None:
    """Option callback: NaN and infinities are no number a user means (``--below nan`` would never fire)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    tsv = "tsv"



@dataclass
class State:
    """Per-invocation context, built lazily so ``--help`` never touches the database."""

    config_path: str | None = None
    db_url: str | None = None
    debug: bool = False
    _settings: Settings | None = None
    _engine: Engine | None = field(default=None, repr=False)
    _reader: Reader | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from tracker.config.settings import load_settings

            self._settings = load_settings(self.config_path, database=self.db_url)
        return self._settings

    @property
    def database_url(self) -> str:
        from db.direct import default_database_url

        return self.settings.database or default_database_url()

    @property
    def writer_engine(self) -> Engine:
        """The engine of a command that writes: when another process is writing to a SQLite store,
        say so and that this one waits for it (up to the busy timeout) instead of hanging silently."""
        from db.direct import SQLITE_BUSY_TIMEOUT_S
        from db.engine import another_writer, mask_url

        if another_writer(self.database_url):
            err_console.print(f"[yellow]waiting:[/yellow] another process is writing to the store "
                              f"{mask_url(self.database_url)} (a scrape, an import or `gpu-tracker run`); waiting "
                              f"up to {SQLITE_BUSY_TIMEOUT_S:.0f} s for it to finish ...", highlight=False,
                              soft_wrap=True)
        return self.engine

    @property
    def collector_engine(self) -> Engine:
        """The engine of a command that collects: the store passes its integrity quick check
        first, so nothing is ever written into a damaged one (``db.integrity``)."""
        if self._engine is None:
            from db.engine import is_read_only, make_engine, mask_url
            from db.integrity import require_sound_store
            from tracker.errors import ConfigError

            probe = make_engine(self.database_url)
            try:
                if is_read_only(probe):
                    raise ConfigError(f"database {mask_url(self.database_url)} is read-only for this user: collecting "
                                      "needs write access to the file and its directory (reading commands work)")
                require_sound_store(probe)
            finally:
                probe.dispose()
        return self.writer_engine

    def close(self) -> None:
        """Release the engine's connections when the command ends (no pooled sockets left behind)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from tracker.pipeline.opening import open_store

            self._engine = open_store(self.settings, self.database_url)
        return self._engine


    @property
    def reader(self) -> Reader:
        """A connection for commands that only read: the store's own driver opened from its URL
        when the store is current (``db.direct``: no SQLAlchemy to import), else one of ``engine``
        (which migrates and syncs the catalog first), on a driver connection of its pool. Every read
        of a command goes through it (``db.reads``); ``engine`` is for writes."""
        if self._reader is None:
            if self._engine is None:
                from db.direct import open_reader
                from tracker.catalog.specs import catalog_rows_for_db, load_catalog

                self._reader = open_reader(self.database_url, catalog_rows_for_db(load_catalog(self.settings.catalog_file)))
            if self._reader is None:
                from db.engine import engine_reader

                self._reader = engine_reader(self.engine)
        return self._reader


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run a command that builds one large answer and prints it without the cyclic garbage
    collector: an hourly year of history is a million objects that all live until printed, none
    in a cycle, and every collection on the way walks those made since the one before (a
    twentieth of such a command, even at the CLI's threshold of 50,000 allocations). The
    collector is on again afterwards, whoever called the command, with what the command made
    kept out of its walks (``gc.freeze``, as ``main`` keeps the imports): switched on with the
    allocations counted while it was off, it would walk them all at once."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    if not isinstance(obj, State):
        obj = State()
        ctx.find_root().obj = obj
    return obj


def emit(
    rows: Rows,
    fmt: Format,
    *,
    columns: Sequence[ColumnSpec] | None = None,
    title: str | None = None,
    wide: bool = False,
    only: str | None = None,
) -> None:
    """Print rows as a table (see ``tracker.cli.render``), JSON (a list of snake_case objects), CSV or TSV.

    ``columns`` (key, header[, priority]) choose, order and label the table's and TSV's
    columns; ``wide`` and ``only`` (``--wide``, ``--columns``) widen or pick them. JSON and
    CSV always carry every key so they can be imported back.
    """
    if fmt is Format.json:
        sys.stdout.write(json.dumps(plain_rows(rows), indent=2) + "\n")
        return
    if fmt is Format.csv:
        sys.stdout.write(csv_text(rows, row_keys(rows) or [c.key for c in as_columns(columns or [])]))
        return
    cols = as_columns(columns or [], rows)
    if fmt is Format.tsv:
        shown, _ = pick_columns(cols, rows, width=None, wide=wide, only=only)
        sys.stdout.write(tsv(rows, shown))
        return
    # A console made now, not at import: the terminal's width and the environment of this call.
    print_table(rows, cols, title=title, wide=wide, only=only)


#: Text longer than this leaves a key/value table and is printed under it, wrapped to the terminal.
LONG_TEXT = 30


def key_values(data: dict[str, Any], *, title: str) -> None:
    """One result as a two-column table for a person: each row is its own quantity, so each number
    is written for itself (cents from 1 up, 4 places below); long texts (sources, notes, lists of
    names) go under the table, where they wrap instead of pushing the values off the screen."""
    rows = [{"key": k, "value": quantity(v)} for k, v in data.items()
            if not (isinstance(v, str) and len(v) > LONG_TEXT)]
    emit(rows, Format.table, columns=[("key", "key", ESSENTIAL), ("value", "value", ESSENTIAL)], title=title)
    for k, v in data.items():
        if isinstance(v, str) and len(v) > LONG_TEXT:
            console.print(f"[bold]{k}[/bold]: {v}", highlight=False)


def print_notes(notes: Sequence[str]) -> None:
    """The notes of an answer, one a line on stderr, so the rows on stdout stay parseable."""
    for n in notes:
        err_console.print(f"[yellow]note:[/yellow] {n}", highlight=False, soft_wrap=True)

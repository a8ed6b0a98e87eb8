"""What every command shares: the loaded settings and engine, output formats, errors."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.engine import Engine

from db.engine import default_database_url
from tracker.config.settings import Settings, load_settings

console = Console()
err_console = Console(stderr=True)


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


@dataclass
class State:
    """Per-invocation context, built lazily so ``--help`` never touches the database."""

    config_path: str | None = None
    db_url: str | None = None
    debug: bool = False
    _settings: Settings | None = None
    _engine: Engine | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_path, database=self.db_url)
        return self._settings

    @property
    def database_url(self) -> str:
        return self.settings.database or default_database_url()

    def close(self) -> None:
        """Release the engine's connections when the command ends (no pooled sockets left behind)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from tracker.pipeline.store import open_store

            self._engine = open_store(self.settings, self.database_url)
        return self._engine


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    if not isinstance(obj, State):
        obj = State()
        ctx.find_root().obj = obj
    return obj


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 10)  # drop float noise, keep small ratios such as USD per TFLOP-hour
    return value


def emit(
    rows: Sequence[dict[str, Any]],
    fmt: Format,
    *,
    columns: Sequence[tuple[str, str]] | None = None,
    title: str | None = None,
) -> None:
    """Print rows as a Rich table, JSON (list of snake_case objects) or CSV.

    ``columns`` (key, header) choose and label the table's columns; JSON and CSV always carry
    every key so they can be imported back.
    """
    if fmt is Format.json:
        sys.stdout.write(json.dumps([{k: _plain(v) for k, v in r.items()} for r in rows], indent=2) + "\n")
        return
    if fmt is Format.csv:
        keys = list(rows[0].keys()) if rows else [k for k, _ in (columns or [])]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _plain(v) for k, v in r.items()})
        sys.stdout.write(buf.getvalue())
        return
    cols = columns or [(k, k) for k in (rows[0].keys() if rows else [])]
    table = Table(title=title, show_lines=False)
    for _, header in cols:
        table.add_column(header)
    for r in rows:
        table.add_row(*[_cell(r.get(k)) for k, _ in cols])
    console.print(table)
    if not rows:
        console.print("[dim]no rows[/dim]")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        return f"{value:,.4f}" if abs(value) < 10 else f"{value:,.2f}"
    return str(value)

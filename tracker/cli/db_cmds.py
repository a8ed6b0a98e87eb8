"""``gpu-tracker db check``: the store's own integrity check (``db.integrity``)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from tracker.cli import app
from tracker.cli.common import Format, console, state

db_app = typer.Typer(help="The store itself: integrity.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@db_app.command("check")
def check(
    ctx: typer.Context,
    quick: Annotated[bool, typer.Option("--quick", help="Only the quick check the collector runs at start.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="table or json.")] = Format.table,
) -> None:
    """Run the database engine's integrity check; exit 1 when it finds a problem.

    SQLite: PRAGMA integrity_check (or quick_check) and foreign_key_check. PostgreSQL: invalid
    indexes, amcheck's bt_index_check on every b-tree index when the extension is installed,
    and a full read of every table. Opens the store read-only: the check never writes.
    """
    from db.engine import make_engine, mask_url
    from db.integrity import check_store

    st = state(ctx)
    engine = make_engine(st.database_url, read_only=True)
    try:
        result = check_store(engine, quick=quick)
    finally:
        engine.dispose()
    where = mask_url(st.database_url)
    if fmt is Format.json:
        sys.stdout.write(json.dumps({"database": where, "backend": result.backend, "ok": result.ok,
                                     "checks": result.checks, "problems": result.problems}, indent=2) + "\n")
    else:
        console.print(f"{where}: {', '.join(result.checks)}", highlight=False, markup=False)
        for problem in result.problems:
            console.print(f"  problem: {problem}", highlight=False, markup=False)
        console.print("ok: no problem found" if result.ok else f"{len(result.problems)} problem(s) found",
                      highlight=False)
    if not result.ok:
        raise typer.Exit(1)

"""The README's schema is the one a fresh store gets: every table and view with its columns,
keys and indexes, regenerated from a store built by the migrations and compared with the text
between the README's ``schema`` markers.

    SCHEMA_REGENERATE=1 .venv/bin/python -m pytest tests/test_schema_doc.py   # rewrite it
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers every table)
from db.engine import make_engine
from db.migrate import init_db

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- schema:start -->", "<!-- schema:end -->"
#: Tables a fresh store has that the tracker's schema does not own.
NOT_OURS = {"alembic_version"}


def _summary(name: str) -> str:
    """The first sentence of the model's docstring for table ``name`` (empty without one)."""
    for mapper in SQLModel._sa_registry.mappers:  # type: ignore[attr-defined]
        if getattr(mapper.local_table, "name", None) == name:
            doc = " ".join((mapper.class_.__doc__ or "").split())
            return (doc.split(". ")[0].rstrip(".") + ".").replace("``", "`") if doc else ""
    return ""


def _column_type(sql_type: object) -> str:
    return str(sql_type).split("(")[0].lower()


def _indexes(engine: Engine, insp: Any, table: str) -> list[tuple[str, bool, str]]:
    """(name, unique, what it indexes) of each index of ``table``, by name: its columns, or, for an
    index of an expression (which SQLAlchemy's SQLite reflection skips with a warning), the
    expression as the store declares it."""
    found = [(ix["name"], bool(ix.get("unique")), ", ".join(ix["column_names"])) for ix in insp.get_indexes(table)]
    with engine.connect() as conn:
        declared = conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                                        "AND sql IS NOT NULL", (table,)).all()
    names = {name for name, _u, _c in found}
    for name, sql in declared:
        if name not in names:  # an expression: the text between the outer parentheses after ON
            found.append((name, sql.lstrip().upper().startswith("CREATE UNIQUE"), sql[sql.index("(") + 1:sql.rindex(")")]))
    return sorted(found)


def render(engine: Engine) -> str:
    """The schema of ``engine``'s store as markdown: tables (columns, primary key, indexes,
    foreign keys), then views (their columns and what they read)."""
    with warnings.catch_warnings():  # expression indexes are read by ``_indexes``
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
        return _render(engine)


def _render(engine: Engine) -> str:
    insp = inspect(engine)
    out: list[str] = []
    for table in sorted(set(insp.get_table_names()) - NOT_OURS):
        pk = insp.get_pk_constraint(table).get("constrained_columns") or []
        summary = _summary(table)
        out.append(f"**`{table}`**" + (f": {summary}" if summary else ""))
        out.append("")
        cols = []
        for c in insp.get_columns(table):
            flags = [f for f, on in (("key", c["name"] in pk), ("null", c["nullable"])) if on]
            cols.append(f"`{c['name']}` {_column_type(c['type'])}" + (f" ({', '.join(flags)})" if flags else ""))
        out.append("- columns: " + ", ".join(cols))
        for name, unique, indexed in _indexes(engine, insp, table):
            out.append(f"- {'unique ' if unique else ''}index `{name}`: ({indexed})")
        for uq in sorted(insp.get_unique_constraints(table), key=lambda u: u["name"] or ""):
            out.append(f"- unique `{uq['name']}`: ({', '.join(uq['column_names'])})")
        for fk in insp.get_foreign_keys(table):
            out.append(f"- ({', '.join(fk['constrained_columns'])}) references "
                       f"`{fk['referred_table']}` ({', '.join(fk['referred_columns'])})")
        out.append("")
    for view in sorted(insp.get_view_names()):
        reads = sorted(set(re.findall(r"\bFROM\s+(\w+)", insp.get_view_definition(view) or "", re.IGNORECASE)))
        out.append(f"**`{view}`** (view of {', '.join(f'`{t}`' for t in reads)})")
        out.append("")
        out.append("- columns: " + ", ".join(f"`{c['name']}`" for c in insp.get_columns(view)))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _readme_section(text: str) -> str:
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def test_the_readme_lists_the_schema_a_fresh_store_has(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    try:
        init_db(engine)
        got = render(engine)
    finally:
        engine.dispose()
    text = README.read_text()
    if os.environ.get("SCHEMA_REGENERATE") == "1":
        before, rest = text.split(START, 1)
        README.write_text(before + START + "\n" + got + END + rest.split(END, 1)[1])
        text = README.read_text()
    assert "`price_interval_open`" in got and "`price_interval`** (view of `price_interval_open`, `price_interval_past`)" in got
    assert _readme_section(text) == got, "README's schema differs from a fresh store's: regenerate (see the docstring)"

"""Alembic environment: runs migrations on the connection ``db.migrate`` hands over."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers every table on SQLModel.metadata)
from db.migrate import include_object
from db.models import UTCDateTime

target_metadata = SQLModel.metadata


def render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    """Write our UTCDateTime as itself so migrations keep the timezone guarantee."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        autogen_context.imports.add("import db.models")  # type: ignore[attr-defined]
        return "db.models.UTCDateTime()"
    if type_ == "type" and type(obj).__module__.startswith("sqlmodel"):
        autogen_context.imports.add("import sqlmodel")  # type: ignore[attr-defined]
        return f"sqlmodel.sql.sqltypes.{obj!r}"
    return False


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through db.migrate, which passes a connection")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        render_item=render_item,
        include_object=include_object(connection.dialect.name),
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()

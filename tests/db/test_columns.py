"""A table's columns are declared once: the SQLAlchemy-free classes of ``db.columns`` (the rows
``db.reads`` returns) and ``tracker.gpu_columns`` (the catalog's rows) make the SQLModel tables
of ``db.models``, so a column added there is in the table, the row and the catalog alike."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Annotated, Any, NamedTuple, get_type_hints

import pytest
from sqlmodel import SQLModel

import db.columns
import db.intervals
import db.models
import db.reads
import db.rollups
from db.models import GpuModel, Model, UTCDateTime
from tracker.catalog.specs import DB_FIELDS, GpuSpec
from tracker.gpu_columns import GpuColumns

#: Each table made from a declaration, and the declaration.
DECLARED = {
    db.models.Provider: db.columns.ProviderRow,
    db.models.ScrapeRun: db.columns.RunRow,
    db.models.AlertState: db.columns.AlertStateRow,
    db.models.AlertEvent: db.columns.EventRow,
    db.models.Outbox: db.columns.OutboxRow,
    db.models.DigestState: db.columns.DigestStateRow,
    db.models.ParseFailure: db.columns.FailureRow,
    GpuModel: GpuColumns,
}


@pytest.mark.parametrize("table", DECLARED, ids=lambda t: t.__name__)
def test_a_table_has_the_columns_its_declaration_has_in_order(table: type[SQLModel]) -> None:
    declared = DECLARED[table]
    names = [f.name for f in dataclasses.fields(declared)] if dataclasses.is_dataclass(declared) else list(declared._fields)
    assert [c.name for c in table.__table__.columns] == names  # type: ignore[attr-defined]
    assert {n: f.annotation for n, f in table.model_fields.items()} == get_type_hints(declared)


def test_the_scheduler_tables_have_their_rows_columns() -> None:
    from tracker.service.leader import leader_table, lease_table

    assert [c.name for c in lease_table.columns] == list(db.columns.LeaseRow._fields)
    assert [c.name for c in leader_table.columns] == list(db.columns.LeaderRow._fields)
    assert lease_table.c.id.autoincrement is False and lease_table.c.released_at.nullable
    assert isinstance(leader_table.c.since.type, UTCDateTime) and leader_table.c.lock.type.length == 255


def test_the_catalog_and_gpu_model_share_their_columns() -> None:
    assert DB_FIELDS == tuple(f.name for f in dataclasses.fields(GpuColumns))
    assert set(GpuSpec.__dataclass_fields__) - set(DB_FIELDS) == {"aliases"}
    assert [c.name for c in GpuModel.__table__.columns] == list(DB_FIELDS)  # type: ignore[attr-defined]


def test_a_declared_column_reaches_the_table_with_its_type_and_storage() -> None:
    wider = dataclasses.make_dataclass("Wider", [("memory_type", Annotated[str, {"max_length": 16}], "")],
                                       bases=(GpuColumns,), frozen=True)

    class WiderRow(NamedTuple):
        name: Annotated[str, {"primary_key": True}]
        seen_at: datetime | None

    class Probe(Model):
        __columns__ = wider

    class RowProbe(Model):
        __columns__ = WiderRow

    assert list(Probe.model_fields) == [*DB_FIELDS, "memory_type"]
    field = Probe.model_fields["memory_type"]
    assert (field.annotation, field.default, field.metadata[0].max_length) == (str, "", 16)  # type: ignore[attr-defined]
    seen = RowProbe.model_fields["seen_at"]
    assert (seen.annotation, seen.default, seen.sa_type) == (datetime | None, None, UTCDateTime)  # type: ignore[attr-defined]
    assert RowProbe.model_fields["name"].primary_key is True  # type: ignore[attr-defined]


#: The column lists the SQL-text writes and reads name (``db.intervals``, ``db.rollups``,
#: ``db.reads``, importable without SQLAlchemy), each with the tables it names and the columns of
#: those tables it leaves out. Each comes from the declaration its tables are made from
#: (``db.columns``): this holds it so whatever the tables add, inherit or override.
NAMED_LISTS = [
    ("db.intervals.COLUMNS", lambda: list(db.intervals.COLUMNS),
     [db.models.PriceIntervalPast, db.models.PriceIntervalOpen], {"id", "available_count"}),
    ("db.rollups.RUN_FIELDS", lambda: db.rollups.RUN_FIELDS.split(", "),
     [db.models.RollupHourRun, db.models.RollupHourOpen], set()),
    ("db.reads.INDEX_COLUMNS", lambda: list(db.reads.INDEX_COLUMNS), [db.models.IndexDay], set()),
    ("db.rollups.COLUMNS", lambda: list(db.rollups.COLUMNS), [db.models.RollupDay], set()),
]


@pytest.mark.parametrize(("name", "listed", "tables", "apart"), NAMED_LISTS, ids=[n for n, *_ in NAMED_LISTS])
def test_a_named_column_list_is_its_tables_columns_in_order(name: str, listed: Any, tables: list[type[SQLModel]],
                                                            apart: set[str]) -> None:
    """A column of one of these tables missing from the list that writes or reads it would be left
    NULL by those writes without a word: this says so instead."""
    for table in tables:
        columns = [c.name for c in table.__table__.columns if c.name not in apart]  # type: ignore[attr-defined]
        assert listed() == columns, f"{name} and {table.__tablename__} differ"

"""The schema: every table the store owns (the views over them are made by migrations).

Rows are compact for years of hourly data: interval times are integer epoch seconds and
provider, GPU, kind and currency small ids from ``label``. A series' newest element (an offer's
interval, a roll-up run) lives in a small table rewritten in place and every earlier one in a
table written once, so an hourly collection touches a few pages whatever the length of the
history (``db.intervals``, ``db.rollups``).
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from types import NoneType
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import sqlalchemy
from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    Table,
    UniqueConstraint,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import declared_attr
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel
from sqlmodel.main import SQLModelMetaclass, get_column_from_field

from db.columns import (
    KEY,
    AlertStateRow,
    DigestStateRow,
    EventRow,
    FailureRow,
    IndexDayFields,
    IntervalFields,
    OutboxRow,
    ProviderRow,
    RollupDayFields,
    RunFields,
    RunRow,
)
from db.reader import utc_datetime
from db.spans import utcnow
from tracker.gpu_columns import GpuColumns


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out on every backend (SQLite stores naive UTC). A naive
    datetime is refused: guessing its zone is how histories get shifted by hours."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: timestamps must be timezone-aware UTC")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return utc_datetime(value)


def declared_fields(declared: type) -> dict[str, Any]:
    """A table class body (annotations and ``Field``s) for the columns ``declared`` declares: a
    NamedTuple or dataclass whose fields are the columns, each with its Python type and, as
    ``Annotated`` metadata, a dict of ``Field`` arguments (``db.columns``). A column's default is
    the class's own, else NULL when it is nullable; a ``datetime`` is a ``UTCDateTime``, a ``dict``
    JSON."""
    defaults = getattr(declared, "_field_defaults", None)
    if defaults is None:
        defaults = {f.name: f.default for f in dataclasses.fields(declared) if f.default is not dataclasses.MISSING}
    annotations: dict[str, Any] = {}
    body: dict[str, Any] = {"__annotations__": annotations}
    for name, hint in get_type_hints(declared, include_extras=True).items():
        args: dict[str, Any] = {}
        if get_origin(hint) is Annotated:
            hint, *extras = get_args(hint)
            args = {k: v for extra in extras if isinstance(extra, dict) for k, v in extra.items()}
        nullable = NoneType in get_args(hint)
        python_type = next(t for t in get_args(hint) if t is not NoneType) if nullable else hint
        if name in defaults:
            args.setdefault("default", defaults[name])
        elif nullable and "default_factory" not in args:
            args.setdefault("default", None)
        if isinstance(args.get("sa_type"), str):  # named where SQLAlchemy is not imported
            args["sa_type"] = getattr(sqlalchemy, args["sa_type"])
        if python_type is datetime:
            args["sa_type"] = UTCDateTime
        elif get_origin(python_type) is dict:
            args["sa_column"] = Column(JSON, nullable=nullable)
        annotations[name] = hint
        body[name] = Field(**args)
    return body


def declared_table(name: str, metadata: MetaData, declared: type) -> Table:
    """A table outside the schema's models (in its own ``metadata``, made when first needed) with
    the columns ``declared`` declares, each made as a model's is (``declared_fields``)."""
    body = declared_fields(declared)
    columns = []
    for column, hint in body["__annotations__"].items():
        field = body[column]
        field.annotation = hint
        made = get_column_from_field(field)
        made.name = made.key = column  # what a model's class attribute name gives its column
        columns.append(made)
    return Table(name, metadata, *columns)


class _DeclaredColumns(SQLModelMetaclass):
    """Makes a table whose body sets ``__columns__`` (a class of ``db.columns``) take its
    columns from there: the one declaration both the tables and the SQLAlchemy-free reads use."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        declared = namespace.pop("__columns__", None)
        if declared is not None:
            body = declared_fields(declared)
            namespace = {**body, **namespace,
                         "__annotations__": {**body["__annotations__"], **namespace.get("__annotations__", {})}}
        return super().__new__(mcs, name, bases, namespace, **kwargs)


class Model(SQLModel, metaclass=_DeclaredColumns):
    """A table named after its class in snake case (``GpuModel``: ``gpu_model``); one whose body
    sets ``__columns__`` has the columns that class declares (``declared_fields``)."""

    @declared_attr  # type: ignore[misc]
    def __tablename__(cls) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def key_column(sa_type: Any = SmallInteger, **kwargs: Any) -> Any:
    """A primary-key column whose values the store gives (never an autoincrement)."""
    return Field(**KEY, sa_type=sa_type, **kwargs)


class Provider(Model, table=True):
    """One provider and its last collection attempt (so the store tells a continuous run from a gap)."""

    __columns__ = ProviderRow


class Label(Model, table=True):
    """Small integer ids for the strings every interval would otherwise repeat
    (``space`` is ``provider``, ``gpu``, ``kind`` or ``currency``)."""

    __table_args__ = (UniqueConstraint("space", "name", name="uq_label_space_name"),)

    id: int | None = Field(default=None, primary_key=True)
    space: str = Field(max_length=16)
    name: str = Field(max_length=255)


class GpuModel(Model, table=True):
    """One GPU of the spec catalog (filled from ``tracker/catalog/data/gpus.csv`` plus user overrides)."""

    __columns__ = GpuColumns


class Offer(Model, table=True):
    """One priced thing, identified by (provider, sku, region, kind, term_months)."""

    #: Every collection rewrites ``last_seen`` of each offer it sees, a column no index holds:
    #: PostgreSQL keeps pages half full so that rewrite fits beside the old row version without
    #: touching the offer's three indexes (as ``PriceIntervalOpen``'s rows).
    __table_args__ = (
        UniqueConstraint("provider", "sku", "region", "kind", "term_months", name="uq_offer_identity"),
        Index("ix_offer_gpu", "gpu"),
        {"postgresql_with": {"fillfactor": 50}},
    )

    id: int | None = Field(default=None, primary_key=True)
    provider: str = Field(foreign_key="provider.name", max_length=64)
    sku: str = Field(max_length=255)
    region: str = Field(default="", max_length=128)
    kind: str = Field(max_length=16)
    term_months: int = 0
    gpu: str | None = Field(default=None, max_length=64)
    gpu_raw: str = Field(max_length=255)
    gpu_count: float
    gpu_memory_gb: float | None = None
    vcpus: float | None = None
    ram_gb: float | None = None
    country: str | None = Field(default=None, max_length=64)
    extra: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    first_seen: datetime = Field(sa_type=UTCDateTime)
    last_seen: datetime = Field(sa_type=UTCDateTime)


class IntervalColumns(Model):
    """The columns of an interval, the same in both of its tables (``db.columns.IntervalFields``)."""

    __columns__ = IntervalFields


#: The GPU index's columns: its key (GPU, then ``last_seen`` and ``first_seen`` for "in effect
#: during [a, b]"), then on SQLite what the reads of prices in effect filter on and return, so
#: they need no table row (``db.reads.interval_lows_at``, ``raw_rows``; the id is the row's own
#: key). PostgreSQL keeps the key alone: a read there visits each row's heap page anyway (MVCC
#: visibility), and its entries would be four times the size for nothing (on the synthetic year:
#: 101 B per interval, the trend table 53 ms against 49).
GPU_INDEX = ("gpu_id", "last_seen", "first_seen", "kind_id", "currency_id", "provider_id", "price_per_gpu_hour",
             "ends_at", "offer_id")
GPU_INDEX_KEY = 3


def for_dialect(index: Index, dialect: str) -> Index:
    """``index`` created on ``dialect`` only (``info["dialect"]`` says which, for the schema check)."""
    index.info["dialect"] = dialect
    return index.ddl_if(dialect=dialect)


class PriceIntervalPast(IntervalColumns, table=True):
    """Every interval that is no longer its offer's newest: written once, when a newer one
    opens (the view ``price_interval`` reads it with ``PriceIntervalOpen``)."""

    #: ``first_seen`` is in the GPU index so "in effect during [a, b]" is answered from the index
    #: alone, and the span index makes the longest interval one step: it bounds ``last_seen``
    #: (``<= b + longest``), so a read of a moment months back scans only the intervals around it.
    #: Not by GPU and start: SQLite then reads such a range by start, four times slower. On SQLite
    #: the GPU index also carries every other column an analysis read filters on or returns
    #: (``GPU_INDEX``), so a moment's prices months back are read from the index without a
    #: table lookup per interval (a fifth more index, the trend table's past prices 40% faster).
    #: The provider index is what a collection's roll-up refresh reads: one provider's recent
    #: intervals, not every provider's of the day.
    __table_args__ = (for_dialect(Index("ix_price_interval_past_gpu_covering", *GPU_INDEX), "sqlite"),
                      for_dialect(Index("ix_price_interval_past_gpu_last_first", *GPU_INDEX[:GPU_INDEX_KEY]),
                              "postgresql"),
                      Index("ix_price_interval_past_span", text("(last_seen - first_seen)")),
                      Index("ix_price_interval_past_provider_last", "provider_id", "last_seen"))

    id: int = key_column(Integer)


class PriceIntervalOpen(IntervalColumns, table=True):
    """Each offer's newest interval, the open end of its series (one row per priced offer): a
    collection that sees the offer unchanged moves this row's ``last_seen`` in place, a failed
    one sets its ``ends_at``; a new price moves it to ``PriceIntervalPast``. Small, so rewriting it
    every hour touches a few pages, whatever the length of the history. "What is on sale now",
    previous prices and market medians read it alone."""

    #: No index holds ``last_seen``, which every collection rewrites; PostgreSQL keeps pages half
    #: full so each rewrite fits beside the old row version without touching an index.
    __table_args__ = (
        Index("ix_price_interval_open_id", "id", unique=True),
        Index("ix_price_interval_open_provider", "provider_id"),
        Index("ix_price_interval_open_gpu", "gpu_id"),
        {"postgresql_with": {"fillfactor": 50}},
    )

    offer_id: int = key_column(Integer, foreign_key="offer.id")
    id: int
    #: GPUs the provider said are free at its newest observation (NULL: it states no count).
    #: Current-only: marketplace counts move every collection, and as an interval column each
    #: move would open a new interval.
    available_count: int | None = None


class RollupDay(Model, table=True):
    """Min, median, max and number of offers of one (gpu, provider, kind) over one day."""

    __table_args__ = {"sqlite_with_rowid": False}
    __columns__ = RollupDayFields


class RollupSeries(Model, table=True):
    """One (gpu, provider, kind) with hourly roll-ups: runs carry this small id instead of three."""

    __table_args__ = (UniqueConstraint("gpu_id", "provider_id", "kind_id", name="uq_rollup_series"),)

    id: int | None = Field(default=None, primary_key=True)
    gpu_id: int = Field(sa_type=SmallInteger)
    provider_id: int = Field(sa_type=SmallInteger)
    kind_id: int = Field(sa_type=SmallInteger)


class HourRun(Model):
    """The columns of an hourly roll-up run, the same in both of its tables (``db.columns.RunFields``)."""

    __columns__ = RunFields


class RollupHourRun(HourRun, table=True):
    """Min, median, max and number of offers of one series, equal over ``hours`` consecutive
    hours from hour ``start`` (hours since the epoch: three bytes in SQLite where seconds take
    four): every run but each series' newest (``RollupHourOpen``; the view ``rollup_hour`` reads
    both). A run is at most ``db.reads.MAX_RUN`` hours long, so the runs of a range are found by a
    primary-key range starting that far before it."""

    __table_args__ = {"sqlite_with_rowid": False}

    start: int = key_column(Integer)


class RollupHourOpen(HourRun, table=True):
    """Each series' newest run (``RollupHourRun``'s columns), the open end of the series: an
    hourly collection mostly lengthens it, and rewriting it here touches one small table instead
    of a page per series spread over a year of runs."""


class IndexDay(Model, table=True):
    """The median per-GPU-hour price and the number of offers of one (gpu, provider, kind, via)
    observed in one day, fractional-GPU offers left out (``db.index_rollup``: what the rental
    index reads)."""

    __table_args__ = {"sqlite_with_rowid": False}
    __columns__ = IndexDayFields


class StoreMeta(Model, table=True):
    """Facts about the store itself (``raw_pruned_before``: the raw-retention horizon)."""

    key: str = Field(primary_key=True, max_length=64)
    value: str = Field(max_length=255)


class SnapshotTime(Model, table=True):
    """One snapshot (collection) of an imported archive series, at ``at`` (epoch seconds).

    An interval stores only its first and last observation, so these times say which lie
    between: an out-of-order import re-cuts intervals exactly, and a backtest evaluates at every
    snapshot (``db.series``)."""

    __table_args__ = {"sqlite_with_rowid": False}

    series: str = Field(primary_key=True, max_length=128)
    at: int = key_column(BigInteger)


class ScrapeRun(Model, table=True):
    """One collection attempt of one provider (or one import into it), whatever happened."""

    __table_args__ = (Index("ix_scrape_run_provider_started", "provider", "started_at"),)

    __columns__ = RunRow


class Quarantine(Model, table=True):
    """An observation kept out of the price history, with the reason."""

    id: int | None = Field(default=None, primary_key=True)
    run_id: int | None = Field(default=None, foreign_key="scrape_run.id", index=True)
    provider: str = Field(max_length=64, index=True)
    sku: str = Field(max_length=255)
    region: str = ""
    kind: str = ""
    term_months: int = 0
    gpu: str | None = None
    gpu_raw: str = ""
    gpu_count: float | None = None
    price_per_hour: float | None = None
    price_per_gpu_hour: float | None = None
    currency: str = "USD"
    #: As observed (NULL: not stated, or quarantined before it was recorded): a held price that is
    #: confirmed later enters the history as it was seen.
    available: bool | None = None
    #: The observation's ``extra`` (NULL: quarantined before it was recorded): what a source said
    #: beside the price, such as where an imported interval began, which a held price that is
    #: confirmed later keeps.
    extra: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    reason: str
    observed_at: datetime = Field(sa_type=UTCDateTime)


class AlertRule(Model, table=True):
    """A rule added with ``gpu-tracker alerts add`` (config-file rules are not stored).

    ``definition`` holds the same keys as an ``[[alerts]]`` table. A notify target written as
    ``env:VAR`` keeps a secret URL out of the database; a literal URL is stored as given.
    """

    name: str = Field(primary_key=True, max_length=64)
    definition: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class AlertState(Model, table=True):
    """Where one rule stands: armed, pending (condition held ``pending_count`` times, waiting
    for ``for``) or firing. Updated with a version check so two evaluators never both fire."""

    __columns__ = AlertStateRow


class AlertEvent(Model, table=True):
    """Something worth telling: a rule fired or resolved, or a test message. Never holds a
    channel URL: the outbox says where it goes."""

    __table_args__ = (Index("ix_alert_event_rule_created", "rule", "created_at"),)

    __columns__ = EventRow


class Outbox(Model, table=True):
    """One delivery of one event to one channel. ``channel`` is the redacted URL, for display;
    the real target is looked up in the rule (config or ``alert_rule``) at send time."""

    __table_args__ = (
        UniqueConstraint("event_id", "channel_index", name="uq_outbox_event_channel"),
        Index("ix_outbox_due", "status", "next_attempt_at"),
    )

    __columns__ = OutboxRow


class DigestState(Model, table=True):
    """Where one ``[[digests]]`` entry stands: when it was first scheduled and last sent, and the
    best price per watched GPU it reported then (the baseline of "changes since the last digest").
    Updated with a version check so two processes never both send the same digest."""

    __columns__ = DigestStateRow


class ParseFailure(Model, table=True):
    """The raw payload of a collection whose parse failed, as text: secrets scrubbed, cut at a
    size limit (``tracker.pipeline.failures``). Only the last few per provider are kept."""

    __table_args__ = (Index("ix_parse_failure_provider_captured", "provider", "captured_at"),)

    __columns__ = FailureRow

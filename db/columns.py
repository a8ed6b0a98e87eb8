"""The columns of the tables read without SQLAlchemy, declared once: each class's fields are a
table's columns, in order, with their Python types (most classes are also the table's row as
``db.reads`` returns it; the interval, run and index-day fields give the column lists the
SQL-text reads and writes name, the day key's fields those of the two day tables), and ``db.models`` makes the SQLModel table from the same class
(``Model.__columns__``), so a new column is one field here.

Standard library only: read commands import this and must start without SQLAlchemy. What a
column needs beyond its type is its ``Annotated`` metadata, a dict of ``sqlmodel.Field``
arguments (``default``, ``default_factory``, ``primary_key``, ``max_length``, ``index``,
``foreign_key``; ``sa_type`` by the name of the SQLAlchemy type), or a default of the class's
own when code makes such rows itself; a nullable column without one defaults to NULL, a
``datetime`` is stored as ``db.models.UTCDateTime`` and a ``dict`` as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, NamedTuple

from db.spans import utcnow

#: ``Field`` arguments of a row id the store numbers on insert.
_ID = {"default": None, "primary_key": True}
#: ``Field`` arguments of a creation time: now, unless given.
_NOW = {"default_factory": utcnow}


#: ``Field`` arguments of a label's small id, and of a time in epoch seconds (the SQLAlchemy type,
#: named: ``db.models`` makes it).
_SMALL = {"sa_type": "SmallInteger"}
_EPOCH = {"sa_type": "BigInteger"}
#: ``Field`` arguments of a primary-key column whose values the store gives (never an autoincrement).
KEY: dict[str, Any] = {"primary_key": True, "sa_column_kwargs": {"autoincrement": False}}


class IntervalFields(NamedTuple):
    """The columns of an interval besides its id, the same in both of its tables and the view
    (``db.intervals``; times in epoch seconds).

    An interval is a run of consecutive collections that saw one offer at the same price,
    currency and availability; anything else (a change, an absence, a failed collection)
    opens a new one."""

    offer_id: Annotated[int, {"foreign_key": "offer.id"}]
    provider_id: Annotated[int, _SMALL]
    gpu_id: Annotated[int | None, _SMALL]
    kind_id: Annotated[int, _SMALL]
    currency_id: Annotated[int, _SMALL]
    price_per_hour: float
    price_per_gpu_hour: float
    available: bool | None
    first_seen: Annotated[int, _EPOCH]
    last_seen: Annotated[int, _EPOCH]
    #: The provider's next collection attempt after ``last_seen``: a price holds until then and
    #: never longer (NULL while the interval may go on).
    ends_at: Annotated[int | None, _EPOCH]
    #: How many collections saw this interval (first included): a one-off versus a plateau.
    observations: Annotated[int, {"default": 1}]
    #: Where the source says the interval began, when before ``first_seen`` (an import whose
    #: observation at the stated start was held for confirmation): a later import that accepts
    #: that observation joins it to this interval. NULL: it began at ``first_seen``.
    stated_start: Annotated[int | None, _EPOCH]


class RunFields(NamedTuple):
    """The columns of an hourly roll-up run, the same in both of its tables and the view
    (``db.rollups``). Figures rarely change from one hour to the next, so runs take a sixth of the
    rows one per hour would."""

    series_id: Annotated[int, KEY, _SMALL]
    start: int
    hours: Annotated[int, _SMALL]
    min: float
    median: float
    max: float
    offers: int


@dataclass
class DayKeyFields:
    """The key of a day's figures of one (gpu, provider, kind): ``bucket`` is the day's start."""

    gpu_id: Annotated[int, KEY, _SMALL]
    bucket: Annotated[int, KEY, _EPOCH]
    provider_id: Annotated[int, KEY, _SMALL]
    kind_id: Annotated[int, KEY, _SMALL]


@dataclass
class RollupDayFields(DayKeyFields):
    """The columns of a day roll-up (``db.models.RollupDay``): the key's, then these."""

    min: float
    median: float
    max: float
    offers: int


@dataclass
class IndexDayFields(DayKeyFields):
    """The columns of a day of the rental index (``db.models.IndexDay``): the key's, then these."""

    #: The cloud an aggregator's offers name ("": the provider's own offers).
    via: Annotated[str, {"default": "", "primary_key": True, "max_length": 64}]
    median: float
    offers: int


class ProviderRow(NamedTuple):
    """A ``provider`` row: one provider and its last collection attempt."""

    name: Annotated[str, {"primary_key": True, "max_length": 64}]
    display_name: Annotated[str, {"default": ""}]
    last_run_at: datetime | None
    last_status: str | None
    #: ``started_at`` of the last successful run: offers seen then are the current ones.
    last_success_at: datetime | None
    #: ``started_at`` of the last attempt, whatever its outcome: an interval continues only
    #: when the previous attempt saw it.
    last_attempt_at: datetime | None
    #: Seconds between collections when it was last collected: how long a price may be taken
    #: to hold after its last observation in buckets finer than that (NULL: one hour).
    interval_s: int | None
    consecutive_failures: Annotated[int, {"default": 0}]


class RunRow(NamedTuple):
    """A ``scrape_run`` row: one collection attempt of one provider (or one import into it)."""

    id: Annotated[int, _ID]
    provider: Annotated[str, {"max_length": 64}]
    started_at: Annotated[datetime, _NOW]
    finished_at: datetime | None
    #: ok | partial | failed | skipped | running
    status: Annotated[str, {"default": "running", "max_length": 16}]
    #: Where the observations came from: ``live`` (a collection), ``replay`` (a collection answered
    #: from recordings) or ``import`` (an archive import: not a collection).
    source: Annotated[str, {"default": "live", "max_length": 8}]
    offers_seen: Annotated[int, {"default": 0}]
    new_offers: Annotated[int, {"default": 0}]
    prices_changed: Annotated[int, {"default": 0}]
    #: Offers seen again after a gap (absent, or a failed or missing collection in between).
    returned_offers: Annotated[int, {"default": 0}]
    quarantined: Annotated[int, {"default": 0}]
    unmapped: Annotated[int, {"default": 0}]
    duration_s: float | None
    error_class: Annotated[str | None, {"max_length": 64}]
    error_message: str | None


class AlertStateRow(NamedTuple):
    """An ``alert_state`` row: where one rule stands. Also the state ``tracker.alerts.evaluate``
    advances, so its defaults are the class's own: ``AlertStateRow(rule)`` is a rule's state
    before its first evaluation (and the table's defaults)."""

    rule: Annotated[str, {"primary_key": True, "max_length": 64}]
    #: Hash of what the rule watches (GPUs, filters, metric, condition type); a change resets the state.
    fingerprint: Annotated[str, {"max_length": 64}] = ""
    #: armed | pending | firing
    state: Annotated[str, {"max_length": 16}] = "armed"
    pending_count: int = 0
    last_value: float | None = None
    #: Providers and scrape times the last evaluation saw: evaluations without new data change nothing.
    data_stamp: str = ""
    last_evaluated_at: datetime | None = None
    last_fired_at: datetime | None = None
    last_resolved_at: datetime | None = None
    #: ``new_low`` rules: lowest value seen, and the low that was last alerted on.
    all_time_low: float | None = None
    alerted_low: float | None = None
    #: ``available_again`` rules: whether matching offers were listed as available last time.
    last_available: bool | None = None
    version: int = 0


class EventRow(NamedTuple):
    """An ``alert_event`` row: something worth telling (never a channel URL)."""

    id: Annotated[int, _ID]
    rule: Annotated[str, {"max_length": 64}]
    #: fired | resolved | test | digest
    kind: Annotated[str, {"max_length": 16}]
    created_at: Annotated[datetime, _NOW]
    gpu: Annotated[str, {"default": "", "max_length": 255}]
    value: float | None
    threshold: float | None
    previous_value: float | None
    provider: Annotated[str | None, {"max_length": 64}]
    region: Annotated[str | None, {"max_length": 128}]
    offer_kind: Annotated[str | None, {"max_length": 16}]
    title: Annotated[str, {"default": ""}]
    message: Annotated[str, {"default": ""}]
    details: Annotated[dict[str, Any], {"default_factory": dict}]


class OutboxRow(NamedTuple):
    """An ``outbox`` row: one delivery of one event to one channel."""

    id: Annotated[int, _ID]
    event_id: Annotated[int, {"foreign_key": "alert_event.id"}]
    rule: Annotated[str, {"max_length": 64}]
    channel_index: int
    #: The redacted URL, for display; the real target is looked up in the rule at send time.
    channel: Annotated[str, {"max_length": 512}]
    #: pending | delivered | failed | orphaned
    status: Annotated[str, {"default": "pending", "max_length": 16}]
    attempts: Annotated[int, {"default": 0}]
    created_at: Annotated[datetime, _NOW]
    next_attempt_at: Annotated[datetime, _NOW]
    last_attempt_at: datetime | None
    #: A sender holds the row until then; another process may take it over only after.
    claimed_until: datetime | None
    last_error: str | None
    delivered_at: datetime | None


class DigestStateRow(NamedTuple):
    """A ``digest_state`` row: where one ``[[digests]]`` entry stands."""

    name: Annotated[str, {"primary_key": True, "max_length": 64}]
    #: When the scheduler first saw this digest: the first one is due at the first slot after it.
    created_at: Annotated[datetime, _NOW]
    last_sent_at: datetime | None
    #: The ``alert_event`` (kind ``digest``) of the last digest; its outbox rows carry the deliveries.
    last_event_id: int | None
    #: GPU label -> {"price": USD per GPU-hour or null, "provider", "region", "kind", "gpu"} as last sent.
    last_values: Annotated[dict[str, Any], {"default_factory": dict}]
    version: Annotated[int, {"default": 0}]


class FailureRow(NamedTuple):
    """A ``parse_failure`` row: a kept payload whose parse failed (``tracker.pipeline.failures``)."""

    id: Annotated[int, _ID]
    provider: Annotated[str, {"max_length": 64}]
    run_id: int | None
    captured_at: Annotated[datetime, _NOW]
    #: The run's error message (scrubbed, cut like every stored error).
    error: Annotated[str, {"default": ""}]
    #: How the payload was turned into text: ``json``, ``text`` or ``repr``.
    encoding: Annotated[str, {"default": "json", "max_length": 16}]
    payload: Annotated[str, {"default": ""}]
    #: Characters of the whole payload text before the cut, and whether it was cut.
    size: Annotated[int, {"default": 0}]
    truncated: Annotated[bool, {"default": False}]


class LeaseRow(NamedTuple):
    """The scheduler lease's row (``tracker.service.leader.lease_table``, id 1)."""

    id: Annotated[int, KEY]
    epoch: int
    owner: Annotated[str, {"max_length": 255}]
    pid: int
    host: Annotated[str, {"max_length": 255}]
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime
    released_at: datetime | None


class LeaderRow(NamedTuple):
    """The last recorded scheduler's row (``tracker.service.leader.leader_table``, id 1)."""

    id: Annotated[int, KEY]
    pid: int
    host: Annotated[str, {"max_length": 255}]
    since: datetime
    heartbeat_at: datetime
    heartbeat_every_s: float
    stopped_at: datetime | None
    lock: Annotated[str, {"default": "", "max_length": 255}]

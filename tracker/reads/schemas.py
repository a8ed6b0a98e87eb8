"""Response models of the read path: what the JSON API answers (and ``/openapi.json`` documents)
and what the MCP tools return as structured output.

Keys are snake_case and match the CLI's ``--format json`` output where both exist
(``/api/prices`` = ``gpu-tracker prices --format json``). Times are ISO 8601 in UTC.
"""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorOut(_Out):
    detail: str = Field(description="What was wrong with the request, e.g. an unknown GPU.")


class PriceOut(_Out):
    """The latest price of one offer (one row of ``gpu-tracker prices --format json``)."""

    provider: str
    gpu: str | None = Field(description="Canonical GPU id, or null when the provider's name is not mapped yet.")
    gpu_raw: str = Field(description="The provider's own GPU name (or instance type).")
    gpu_count: float
    gpu_memory_gb: float | None
    kind: str = Field(description="on_demand, spot, community or reserved.")
    term_months: int = Field(description="Commitment term for reserved prices, 0 otherwise.")
    region: str
    country: str | None
    sku: str
    price_per_hour: float = Field(description="Whole instance, in `currency`.")
    price_per_gpu_hour: float
    currency: str
    available: bool | None = Field(description="Whether the provider listed it as available to rent; null when it "
                                                "does not say (unknown, never taken as unavailable).")
    available_count: int | None = Field(None, description="GPUs the provider said were free to rent at its newest "
                                                           "collection, where it states a count (null otherwise, "
                                                           "and for a past moment: only the newest count is kept).")
    observed_at: datetime = Field(description="When the provider last listed this price.")
    price_since: datetime = Field(description="Since when the price has been unchanged.")
    vcpus: float | None = Field(None, description="vCPUs of the whole instance, where the provider states them.")
    ram_gb: float | None = Field(None, description="Memory (RAM) of the whole instance in GB, where the provider states it.")
    replay: bool = Field(False, description="True when the price was replayed from a bundled or given recording, "
                                             "not collected live.")
    recorded: str | None = Field(None, description="For a replayed price: its recording's date (YYYY-MM-DD, YYYY-MM "
                                                    "or YYYY; `observed_at` is its start), null if unknown.")
    fixture: str | None = Field(None, description="For a replayed price: recording, reference, handmade or api-reference.")
    via: str | None = Field(None, description="For an aggregator's offer: the cloud it is rented from (market "
                                              "figures count it as that cloud's where that cloud is collected too).")
    original_price_per_hour: float | None = Field(None, description="For a price converted to USD: the whole "
                                                                    "instance's price as listed, in `original_currency`.")
    original_currency: str | None = Field(None, description="For a converted price: the currency it was listed in.")
    usd_rate: float | None = Field(None, description="For a converted price: USD per unit of `original_currency`.")
    usd_rate_date: str | None = Field(None, description="For a converted price: the day the rate was read (YYYY-MM-DD).")
    source: str = Field(description="Where the price came from: `live`, `replay <recording date>` (or `replay "
                                    "(handmade)`...), or `import <archive>` for a provider known only from imports.")
    age_s: int | None = Field(description="Seconds since the provider last listed this price (`observed_at`).")


class GpuOut(_Out):
    """One GPU of the spec catalog (``gpu-tracker catalog --format json``)."""

    gpu: str
    family: str
    name: str
    vendor: str
    architecture: str
    form_factor: str
    vram_gb: float | None
    mem_bandwidth_gbps: float | None
    fp32_tflops: float | None
    tf32_dense_tflops: float | None
    fp16_dense_tflops: float | None
    fp16_sparse_tflops: float | None
    fp16_dense_fp16acc_tflops: float | None
    fp16_sparse_fp16acc_tflops: float | None
    fp8_dense_tflops: float | None
    int8_dense_tops: float | None
    tdp_w: float | None
    launch_year: int | None
    purchase_price_usd: float | None
    purchase_price_date: str | None
    purchase_price_source: str | None
    sources: list[str]
    notes: str


class ValueRowOut(_Out):
    gpu: str
    basis: str
    tflops: float | None = Field(description="Dense TFLOPS of the GPU on `basis`; null when the catalog has none.")
    price_per_gpu_hour: float = Field(description="Cheapest current USD price per GPU-hour.")
    cost_per_tflop_hour: float | None = Field(description="USD per TFLOP-hour at the cheapest price.")
    median_price_per_gpu_hour: float | None
    median_cost_per_tflop_hour: float | None
    offers: int
    vram_gb: float | None
    usd_per_gb_vram_hour: float | None
    provider: str | None = Field(None, description="Where the cheapest price is listed.")
    age_s: int | None = Field(None, description="Seconds since that provider last listed the cheapest price.")
    source: str | None = Field(None, description="Where the cheapest price came from: `live`, `replay <date>` or "
                                                 "`import <archive>`.")


class ValueOut(_Out):
    """GPUs ranked by cost per TFLOP-hour of their cheapest current price."""

    basis: str
    basis_label: str
    unit: str
    kinds: list[str] | None = Field(description="Price kinds considered (null = all).")
    rows: list[ValueRowOut]


class MarketPoint(_Out):
    time: datetime
    gpu: str
    min: float | None
    p25: float | None
    median: float | None
    providers: int
    offers: int


class ProviderPoint(_Out):
    time: datetime
    gpu: str
    provider: str
    value: float | None


class HistoryOut(_Out):
    """A GPU's history on a time grid: the market across providers, and each provider's line.

    A bucket no price touched has null market values (gaps stay gaps)."""

    metric: str
    unit: str
    resolution: str
    since: datetime
    until: datetime
    kinds: list[str] | None
    gpus: list[str]
    providers: list[str]
    notes: list[str]
    market: list[MarketPoint]
    by_provider: list[ProviderPoint]


class IndexPoint(_Out):
    """One bucket of the rental index: ``median-of-medians-1`` fills ``index`` and the figures
    beside it, ``ewyluda-1.3`` fills ``series``, ``value`` and ``carried``."""

    time: datetime
    gpu: str
    method: str
    providers: int = Field(description="Providers (sellers) voting in the bucket.")
    index: float | None = Field(default=None, description="Median of the providers' medians, USD per GPU-hour.")
    thin: bool | None = Field(default=None, description="Fewer than 3 providers.")
    q1: float | None = None
    q3: float | None = None
    iqr: float | None = Field(default=None, description="q3 - q1 across the providers' medians.")
    min: float | None = Field(default=None, description="The lowest provider median.")
    max: float | None = Field(default=None, description="The highest provider median.")
    offers: int | None = None
    kinds: str | None = None
    series: str | None = Field(default=None, description="ewyluda-1.3: index, hyperscaler, neocloud, marketplace or spot.")
    value: float | None = Field(default=None, description="ewyluda-1.3: the series' value, rounded half-up to the cent.")
    carried: str | None = Field(default=None, description="ewyluda-1.3: sellers carried forward from an earlier day.")


class IndexOut(_Out):
    """The rental index of a range by a named, versioned method (``gpu-tracker index``)."""

    method: str
    version: str
    resolution: str
    since: datetime
    until: datetime
    kinds: list[str] | None
    source: str = Field(description="rollups (daily) or raw (hourly): what answered.")
    notes: list[str]
    rows: list[IndexPoint]


class AvailabilityOut(_Out):
    """How available a GPU was at one provider and region over a range (one row of ``gpu-tracker
    availability --format json``). Only stated stock counts: a provider that says nothing shows
    null figures (unknown), never 0 %."""

    provider: str
    region: str
    offers: int = Field(description="Offers of the GPU seen there in the range.")
    available_pct: float | None = Field(description="Share of observed time at least one offer was listed as "
                                                    "available, in percent; null when the provider states no stock.")
    observed_h: float = Field(description="Hours in the range with a stated availability (a failed or missing "
                                          "collection is not observed).")
    available_h: float = Field(description="Hours at least one offer was listed as available.")
    longest_unavailable_h: float | None = Field(description="The longest observed stretch with none available, in hours.")
    longest_unavailable_from: datetime | None = Field(description="When that stretch began.")
    last_available: datetime | None = Field(description="The last observation in the range that saw one available "
                                                        "(the end of the range when one was available then).")


class TrendOut(_Out):
    gpu: str
    current: float | None
    provider: str | None
    providers: int
    offers: int
    as_of: datetime
    price_24h_ago: float | None
    change_24h_pct: float | None
    price_7d_ago: float | None
    change_7d_pct: float | None
    price_30d_ago: float | None
    change_30d_pct: float | None
    price_90d_ago: float | None
    change_90d_pct: float | None
    all_time_low: float | None
    all_time_low_at: datetime | None
    all_time_low_provider: str | None
    good_deal: bool = Field(description="Within 5% of the all-time low, with at least 7 days of observations.")
    history_days: int = Field(description="UTC calendar days from the first observation to as_of, both counted (good_deal needs 7).")
    volatility_30d_pct: float | None
    age_s: int | None = Field(None, description="Seconds since the current price was last listed (null without one).")
    source: str | None = Field(None, description="Where the current price came from: `live`, `replay <date>` or "
                                                 "`import <archive>`.")


class ProviderOut(_Out):
    """A registered scraper and how its collection is doing. Credentials are only *named*."""

    provider: str
    display_name: str
    homepage: str
    endpoint: str
    kinds: list[str]
    caveats: str
    enabled: bool
    credentials: list[str] = Field(description="Environment variables it needs (names only, never values).")
    optional_credentials: list[str]
    credentials_missing: list[str] = Field(description="Required variables that are not set.")
    interval_s: float
    health: str = Field(description="ok, partial, stale, failing, skipped, disabled, never_run, retired (no longer collected), or external (imported history only, no scraper).")
    last_run_at: datetime | None
    status: str | None
    last_success_at: datetime | None
    consecutive_failures: int
    data_age_s: float | None
    data_age: str | None
    offers: int = Field(description="Priced offers listed by the latest successful scrape.")
    last_error_class: str | None
    last_error_message: str | None
    external: bool = Field(default=False, description="Known from imported history only: no scraper collects it.")
    retired: bool = Field(default=False, description="No longer collected (its source shut down); its stored history stays readable.")
    retired_on: date | None = Field(default=None, description="Since when it is retired.")
    retired_reason: str | None = Field(default=None, description="Why it is retired.")
    note: str | None


class RunOut(_Out):
    id: int
    provider: str
    started_at: datetime
    finished_at: datetime | None
    status: str
    replay: bool
    offers_seen: int
    new_offers: int
    prices_changed: int
    quarantined: int
    unmapped: int
    duration_s: float | None
    error_class: str | None
    error_message: str | None


class HealthOut(_Out):
    status: str
    version: str
    database: str


class _Loose(BaseModel):
    # alert rows come from tracker.alerts; keys it adds later are dropped, not errors
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class AlertRuleOut(_Loose):
    """An alert rule and where it stands. Channel URLs are redacted."""

    name: str
    source: str | None = None
    enabled: bool
    gpu: str | None = None
    condition: str | None = None
    filters: str | None = None
    for_: int | None = Field(default=None, alias="for", serialization_alias="for")
    rearm: str | float | None = None
    resolved: bool | None = None
    notify: str | None = Field(default=None, description="Channels, redacted (secrets never shown).")
    state: str = Field(description="armed, pending, firing or disabled.")
    pending_count: int = 0
    last_value: float | None = None
    last_evaluated: datetime | None = None
    last_fired: datetime | None = None
    last_resolved: datetime | None = None
    since: datetime | None = Field(default=None, description="When the rule entered its state: firing since it "
                                   "last fired, armed since it last resolved (null: never fired, or pending).")


class AlertDeliveryOut(_Loose):
    channel: str
    status: str
    attempts: int
    delivered_at: datetime | None = None
    next_attempt_at: datetime | None = None
    last_error: str | None = None


class AlertEventOut(_Loose):
    id: int
    at: datetime
    rule: str
    kind: str = Field(description="fired, resolved, test or digest.")
    gpu: str | None = None
    value: float | None = None
    threshold: float | None = None
    previous_value: float | None = None
    provider: str | None = None
    region: str | None = None
    offer_kind: str | None = None
    delivered: str | None = None
    deliveries: list[AlertDeliveryOut] = Field(default_factory=list)
    title: str | None = None


class OutboxRowOut(AlertDeliveryOut):
    """One delivery of one event to one channel (a row of the outbox): the channel is redacted,
    ``next_attempt_at`` is set for pending rows, ``last_error`` (secrets scrubbed) says why the last
    attempt failed; status pending (retried), delivered, failed (not retried) or orphaned (channel gone)."""

    id: int
    event_id: int
    rule: str
    event_kind: str = Field(description="fired, resolved, test or digest.")
    title: str | None = None
    created_at: datetime
    last_attempt_at: datetime | None = None


class DeliveriesOut(_Out):
    counts: dict[str, int] = Field(description="Outbox rows per status, over the whole outbox.")
    deliveries: list[OutboxRowOut]


class BacktestEventOut(_Out):
    time: datetime
    event: str = Field(description="fired or resolved.")
    value: float | None
    threshold: float | None
    provider: str | None = Field(description="The offer with the best value then.")
    region: str | None
    kind: str | None
    offers: int = Field(description="Matching offers in effect then.")


class BacktestOut(_Out):
    """What a rule would have done over stored history (nothing was stored or sent)."""

    rule: str
    description: str
    since: datetime
    until: datetime
    evaluations: int = Field(description="Observation times the rule was evaluated at.")
    fired: int
    resolved: int
    firing_s: float = Field(description="Seconds spent firing within the range.")
    firing_at_end: bool
    events: list[BacktestEventOut]

"""Collect: run scrapers concurrently; fetch -> parse -> normalise -> validate -> store.

Each provider is isolated: its own HTTP client, its own transaction, its own ``scrape_run``
row whatever happens. A provider that times out, answers 500 or changed its format is
recorded as ``failed`` with the error class and message and writes no price; the others
carry on. A provider without its credentials is ``skipped`` with "set ENV to enable".
A cycle's writes run on threads of their own (``CycleWriter``: one on SQLite, two on PostgreSQL),
each provider's as soon as its payload is parsed, while the other providers' requests are still in flight.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
from sqlalchemy.engine import Engine

from db import labels, reads
from db.engine import session_scope
from db.models import ScrapeRun
from db.reader import in_transaction
from db.spans import epoch, utcnow
from scrapers.base import Scraper
from scrapers.http import Http, shared_ssl_context
from scrapers.registry import all_scrapers, get_scraper
from tracker.config.settings import Settings
from tracker.errors import (
    ConfigError,
    FetchError,
    ParseError,
    ProviderSkipped,
    ScraperError,
)
from tracker.pipeline import failures, record
from tracker.pipeline import partial as partial_rule
from tracker.pipeline import store as store_stage
from tracker.pipeline.normalise import NormalisedOffer, normalise
from tracker.pipeline.replay import RecordingInfo, ReplayTransport, recording_info
from tracker.pipeline.secrets import (
    scrub,  # re-exported: error messages are scrubbed here
)
from tracker.pipeline.validate import HELD, MARKET_MIN_OFFERS, validate

log = logging.getLogger("tracker.pipeline.collect")

_runs = ScrapeRun.__table__  # type: ignore[attr-defined]

TransportFactory = Callable[[str], httpx.AsyncBaseTransport | None]
ProgressCallback = Callable[[str, str], None]


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one provider's collection did: the row written to ``scrape_run``, as a value."""

    provider: str
    status: str  # ok | partial | failed | skipped
    started_at: datetime
    duration_s: float
    offers_seen: int = 0
    new_offers: int = 0
    prices_changed: int = 0
    #: Offers seen again after a gap (absent, or a failed or missing collection in between).
    returned_offers: int = 0
    quarantined: int = 0
    unmapped: int = 0
    error_class: str | None = None
    error_message: str | None = None
    run_id: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ok(self) -> bool:
        """Whether it stored prices: a complete collection, or a partial one (``error_message`` says why)."""
        return self.status in ("ok", "partial")


#: Longest error message stored or shown; cut only after ``scrub`` so no prefix of a secret survives.
MAX_ERROR_CHARS = 500


def error_text(message: str, secrets: Iterable[str]) -> str:
    """What is stored and shown of an error: secrets scrubbed first, then cut to ``MAX_ERROR_CHARS``."""
    clean = scrub(message, secrets)
    return clean if len(clean) <= MAX_ERROR_CHARS else clean[: MAX_ERROR_CHARS - 3] + "..."


#: Collections a cycle writes at once on PostgreSQL (two cores: one writer's Python runs while
#: the other's statements run on the server; more gained nothing on the 40-provider market).
PG_WRITERS = 2


class StoreTurns:
    """Whose turn it is to write a collection in this process.

    SQLite allows one writer at a time: this process's writers (a cycle's, and cycles running
    at once, as the scheduler's jobs do) take turns instead of busy-waiting on the file's lock.
    PostgreSQL takes ``PG_WRITERS`` at once: each collection writes its own provider's rows (a
    provider is in one batch at a time: the scheduler's ``Runtime.begin``), and the labels
    they share are inserted ``ON CONFLICT DO NOTHING`` in one sorted statement, so one waits
    for the other's commit at most when both add the same new label (a store's first
    cycle), and never deadlocks. On the synthetic 40-provider market, two writers take a
    cycle from 0.92 s to 0.78 s. An exiting scheduler takes every turn for good (``close``).
    """

    def __init__(self) -> None:
        self._one = threading.Lock()
        self._many = threading.Semaphore(PG_WRITERS)

    @staticmethod
    def writers(engine: Engine) -> int:
        """How many collections may write to ``engine``'s store at once."""
        return PG_WRITERS if engine.dialect.name == "postgresql" else 1

    @contextmanager
    def turn(self, engine: Engine) -> Iterator[None]:
        """Hold a turn to write to ``engine``'s store for the block."""
        with self._many if self.writers(engine) > 1 else self._one:
            yield

    def close(self, timeout: float) -> bool:
        """Take every turn and never give them back, waiting up to ``timeout`` seconds in all for
        the writes in progress to end (none is left half-way through its commit); whether all were taken."""
        deadline = time.monotonic() + timeout
        taken = self._one.acquire(timeout=timeout)
        for _ in range(PG_WRITERS):
            taken = self._many.acquire(timeout=max(0.0, deadline - time.monotonic())) and taken
        return taken


#: This process's turns (``StoreTurns``).
TURNS = StoreTurns()


def observation_time(started_at: datetime, recording: RecordingInfo | None) -> datetime:
    """When a collection observed its prices: when it started, or for a replay when its recording
    was made (``recording.observed_at``); the run itself (``scrape_run``) keeps its real times."""
    return (recording.observed_at if recording is not None else None) or started_at


def _normalised(raw_offers: Sequence[Any], settings: Settings, observed: datetime,
                recording: RecordingInfo | None) -> list[NormalisedOffer]:
    """A collection's offers normalised as observed at ``observed``, each of a replay marked
    ``extra["replay"]``. Pure, so it runs beside the parse, outside the store's write transaction."""
    normalised = [normalise(o, settings.currency_rates, observed) for o in raw_offers]
    if recording is not None:
        normalised = [replace(o, extra={**o.extra, "replay": recording.mark()}) for o in normalised]
    return normalised


def _store(
    engine: Engine, run_id: int, scraper: Scraper, raw_offers: Sequence[Any], normalised: Sequence[NormalisedOffer],
    settings: Settings, observed_at: datetime, started_at: datetime,
) -> dict[str, Any]:
    """Validate and store one collection (``raw_offers`` as parsed, ``normalised`` as observed at
    ``observed_at``: ``_normalised``), and close its run row, in one transaction.

    A partial collection (``tracker.pipeline.partial``) ends its run as ``partial``, with why.
    ``started_at``: the run row's start.
    """
    with TURNS.turn(engine), session_scope(engine) as session:
        reader = in_transaction(session.connection())
        provider = labels.ensure_provider(session, scraper.name, scraper.display_name)
        # the provider's stored offers, read once for validation and the store
        known = store_stage.provider_state(session.connection(), scraper.name)
        previous = store_stage.previous_prices(session.connection(), known, {o.identity: o.currency for o in normalised})
        # the market judges new offers only: a collection of known offers skips its query
        market = (reads.market_medians(reader, MARKET_MIN_OFFERS)
                  if any(o.identity not in previous for o in normalised) else {})
        accepted, rejected = validate(normalised, previous, reads.pending_jumps(reader, scraper.name, HELD), market)
        partial = partial_rule.judge(reader, scraper.name, raw_offers)
        interval = settings.interval_for(scraper.name, type(scraper))
        # a partial collection is stored as a complete one: what it did not see ends at it, as a
        # failed collection ends it (unknown); what makes it partial is the provider's state below
        stats = store_stage.store_observation(session, scraper.name, accepted, observed_at,
                                              provider.last_attempt_at, interval_s=interval, known=known)
        quarantined = store_stage.store_quarantine(session, run_id, rejected, observed_at)
        counts: dict[str, Any] = {
            "offers_seen": len(normalised),
            "new_offers": stats.new_offers,
            "prices_changed": stats.prices_changed,
            "returned_offers": stats.returned,
            "quarantined": quarantined,
            "unmapped": sum(1 for o in normalised if o.gpu is None),
        }
        status, note = "ok", {}
        if partial is not None:
            pid = labels.lookup(session.connection(), "provider", [scraper.name])[0]
            since = epoch(provider.last_success_at or observed_at)
            unseen = partial_rule.unseen(reader, pid, since, epoch(observed_at))
            status = "partial"
            note = {"error_class": partial.rule, "error_message": error_text(
                f"{partial.reason}; {unseen} offers not seen are unknown, not delisted", scraper.secrets())}
        finished = utcnow()
        session.connection().execute(
            _runs.update().where(_runs.c.id == run_id).values(
                status=status, finished_at=finished, duration_s=(finished - started_at).total_seconds(), **counts, **note)
        )
        provider.last_run_at, provider.last_status = finished, status
        provider.last_attempt_at = observed_at
        provider.consecutive_failures = 0
        if partial is None or provider.last_success_at is None:
            # the current list is the last complete one (``tracker.pipeline.partial``)
            provider.last_success_at = observed_at
        return {**counts, "status": status, **note}


def _start_runs(engine: Engine, starts: Sequence[tuple[Scraper, bool, datetime]]) -> list[tuple[int, datetime]]:
    """Write the ``running`` rows of collections starting now (scraper, replay, started_at), in one
    transaction of a few statements; returns each one's (run id, started_at) in the same order."""
    with TURNS.turn(engine), session_scope(engine) as session:
        labels.ensure_providers(session, {scraper.name: scraper.display_name for scraper, _, _ in starts})
        ids = session.connection().execute(
            _runs.insert().returning(_runs.c.id, sort_by_parameter_order=True),
            [{"provider": scraper.name, "started_at": at, "source": "replay" if replay else "live"}
             for scraper, replay, at in starts],
        ).scalars().all()
        return [(run_id, at) for run_id, (_, _, at) in zip(ids, starts, strict=True)]


T = TypeVar("T")


class CycleWriter:
    """A cycle's writes to the store, run on threads of their own in the order asked: one on
    SQLite, ``PG_WRITERS`` on PostgreSQL (``StoreTurns``).

    SQLite takes one writer at a time. Queued on one thread, the cycle's writes run back to back
    on one connection, each provider's collection as soon as it is parsed, while parsing and the
    event loop never wait behind a lock in the shared thread pool. Each write is its own
    transaction, so a failing provider fails alone. The ``running`` rows asked for in one turn
    of the event loop (every provider a cycle starts at once) are written in one transaction.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._thread = ThreadPoolExecutor(max_workers=StoreTurns.writers(engine), thread_name_prefix="collect-writer")
        self._starts: list[tuple[Scraper, bool, datetime, asyncio.Future[tuple[int, datetime]]]] = []

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    def start(self, scraper: Scraper, replay: bool, started_at: datetime) -> asyncio.Future[tuple[int, datetime]]:
        """The run row of a collection starting now: (run id, started_at), once written."""
        loop = asyncio.get_running_loop()
        row: asyncio.Future[tuple[int, datetime]] = loop.create_future()
        self._starts.append((scraper, replay, started_at, row))
        if len(self._starts) == 1:
            loop.call_soon(self._write_starts)
        return row

    def _write_starts(self) -> None:
        batch, self._starts = self._starts, []
        job = asyncio.ensure_future(self.run(_start_runs, self.engine, [(s, r, at) for s, r, at, _ in batch]))

        def settle(done: asyncio.Future[list[tuple[int, datetime]]]) -> None:
            for k, (*_, row) in enumerate(batch):
                if row.done():
                    continue
                if done.cancelled():
                    row.cancel()
                elif done.exception() is not None:
                    row.set_exception(done.exception())  # type: ignore[arg-type]
                else:
                    row.set_result(done.result()[k])

        job.add_done_callback(settle)

    def close(self) -> None:
        """Wait for the write in progress; drop any still queued (the cycle was cancelled)."""
        self._thread.shutdown(wait=True, cancel_futures=True)


def _finish_unsuccessful(engine: Engine, run_id: int, status: str, exc: BaseException, message: str,
                         failure: failures.Captured | None = None) -> None:
    """End a run that stored nothing; ``failure``: the payload whose parse failed, kept with it."""
    with TURNS.turn(engine), session_scope(engine) as session:
        run = session.get(ScrapeRun, run_id)
        assert run is not None
        finished = utcnow()
        run.status, run.finished_at = status, finished
        run.duration_s = (finished - run.started_at).total_seconds()
        run.error_class, run.error_message = type(exc).__name__, message
        provider = labels.ensure_provider(session, run.provider)
        provider.last_run_at, provider.last_status = finished, status
        # unknown is not "unchanged": the prices seen before this attempt end at it
        store_stage.record_failed_attempt(session, run.provider, run.started_at)
        provider.last_attempt_at = run.started_at
        if status == "failed":
            provider.consecutive_failures += 1
        if failure is not None:
            failures.keep(session.connection(), run.provider, run_id, finished, message, failure)


async def collect_one(
    engine: Engine,
    scraper: Scraper,
    settings: Settings,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    on_progress: ProgressCallback | None = None,
    recording: RecordingInfo | None = None,
    writer: CycleWriter | None = None,
) -> RunResult:
    """Collect one provider end to end; never raises for provider trouble.

    ``recording``: what a replay replays (its prices are stored at its recording date, marked).
    ``writer``: the cycle's (``collect_async``); without it the collection has one of its own.
    """
    if writer is None:
        own = CycleWriter(engine)
        try:
            return await collect_one(engine, scraper, settings, transport=transport, on_progress=on_progress,
                                     recording=recording, writer=own)
        finally:
            own.close()
    notify = on_progress or (lambda _p, _s: None)
    # the run row is written while the fetch goes on: a provider's request never waits for it
    starting = writer.start(scraper, scraper.replay, utcnow())
    t0 = time.monotonic()
    raw: Any = None
    parsing = False  # a failure while parsing keeps the payload (``tracker.pipeline.failures``)
    try:
        scraper.check_credentials()
        notify(scraper.name, "fetching")
        async with httpx.AsyncClient(
            transport=transport, timeout=settings.http.timeout_s, follow_redirects=True, verify=shared_ssl_context()
        ) as client:
            body, download = settings.provider(scraper.name).body_limits(scraper.max_body_bytes, scraper.max_download_bytes)
            http = Http(client, provider=scraper.name, retries=settings.http.retries, backoff_s=settings.http.backoff_s,
                        hosts=scraper.allowed_hosts(), max_body_bytes=body, max_download_bytes=download)
            limit = settings.fetch_timeout_s(scraper.name, download)
            try:
                raw = await asyncio.wait_for(scraper.fetch(http), limit)
            except TimeoutError:
                raise FetchError(
                    f"{scraper.name}: fetch took longer than {limit:g}s "
                    f"(http.provider_timeout_s or providers.{scraper.name}.timeout_s)"
                ) from None
        # the run row is in the store before any parsing: a process killed from here on leaves
        # a `running` row the next leader marks abandoned
        run_id, started = await starting
        notify(scraper.name, "parsing")
        parsing = True
        offers = await asyncio.to_thread(scraper.parse_payload, raw)
        if not offers:
            raise ParseError(f"{scraper.name}: the payload held no offers; refusing to record an empty price list")
        parsing = False
        observed = observation_time(started, recording)
        normalised = await asyncio.to_thread(_normalised, offers, settings, observed, recording)
        notify(scraper.name, "storing")
        counts = await writer.run(_store, engine, run_id, scraper, offers, normalised, settings, observed, started)
    except ProviderSkipped as exc:
        message = error_text(str(exc), scraper.secrets())
        run_id, started = await starting
        await writer.run(_finish_unsuccessful, engine, run_id, "skipped", exc, message)
        log.info("scrape provider=%s status=skipped reason=%s", scraper.name, message)
        return RunResult(scraper.name, "skipped", started, time.monotonic() - t0, error_class=type(exc).__name__,
                         error_message=message, run_id=run_id)
    except Exception as exc:  # noqa: BLE001 - any provider failure is recorded, never propagated
        message = error_text(str(exc) or type(exc).__name__, scraper.secrets())
        if not isinstance(exc, ScraperError) and log.isEnabledFor(logging.DEBUG):
            trace = "".join(traceback.format_exception(exc))
            log.debug("unexpected error in %s:\n%s", scraper.name, scrub(trace, scraper.secrets()))
        run_id, started = await starting  # re-raises when the run row itself could not be written
        failure = None
        if parsing and not scraper.replay:  # a live payload that broke the parser: kept to fix it from
            try:
                failure = await asyncio.to_thread(failures.capture, raw, scraper.secrets())
            except Exception:  # noqa: BLE001 - keeping the payload must never hide the failure itself
                log.warning("scrape provider=%s: the payload that failed to parse could not be kept", scraper.name)
        await writer.run(_finish_unsuccessful, engine, run_id, "failed", exc, message, failure)
        duration = time.monotonic() - t0
        log.warning("scrape provider=%s status=failed duration=%.2fs error=%s: %s",
                    scraper.name, duration, type(exc).__name__, message)
        return RunResult(scraper.name, "failed", started, duration, error_class=type(exc).__name__,
                         error_message=message, run_id=run_id)
    duration = time.monotonic() - t0
    status = counts.pop("status")
    log.info(
        "scrape provider=%s status=%s offers=%d new=%d changed=%d quarantined=%d unmapped=%d duration=%.2fs%s",
        scraper.name, status, counts["offers_seen"], counts["new_offers"], counts["prices_changed"],
        counts["quarantined"], counts["unmapped"], duration,
        f" partial={counts['error_message']}" if status == "partial" else "",
    )
    return RunResult(scraper.name, status, started, duration, run_id=run_id, **counts)


def retired_refusal(cls: type[Scraper]) -> str | None:
    """Why ``cls`` is not collected (one line: since when and why), or ``None`` while it is active.

    A retired provider's source is gone: asking for it is a user error, never a failed run, and
    its stored history stays readable."""
    retired = cls.retired
    if retired is None:
        return None
    return (f"{cls.name} is retired since {retired.on.isoformat()} and no longer collected: {retired.reason} "
            "(its stored history stays readable)")


def check_active(classes: Iterable[type[Scraper]]) -> None:
    """Raise ``ConfigError`` naming the first retired scraper asked for by name."""
    for cls in classes:
        if (reason := retired_refusal(cls)) is not None:
            raise ConfigError(reason)


def selected_scrapers(settings: Settings, names: Sequence[str] | None = None) -> list[type[Scraper]]:
    """The scrapers to run: the named ones (a retired one is refused), or every enabled active one."""
    if names:
        classes = [get_scraper(n) for n in names]
        check_active(classes)
        return classes
    return [cls for name, cls in all_scrapers().items() if settings.provider(name).enabled and cls.retired is None]


async def collect_async(
    engine: Engine,
    settings: Settings,
    names: Sequence[str] | None = None,
    *,
    replay: bool = False,
    replay_dir: Path | None = None,
    transport_factory: TransportFactory | None = None,
    environ: Mapping[str, str] | None = None,
    on_progress: ProgressCallback | None = None,
    classes: Sequence[type[Scraper]] | None = None,
    record_dir: Path | None = None,
) -> list[RunResult]:
    """Collect the selected providers concurrently (bounded by ``http.concurrency``).

    ``classes`` bypasses the registry (tests and embedding applications). ``record_dir``: also
    save every provider's answers there as replay recordings (``tracker.pipeline.record``); a
    provider whose collection stored prices gets ``extra["recorded"]``, the folder written.
    """
    if record_dir is not None and replay:
        raise ConfigError("--record makes the real requests: it cannot be combined with --replay")
    classes = list(classes) if classes is not None else selected_scrapers(settings, names)
    check_active(classes)
    limit = asyncio.Semaphore(settings.http.concurrency)
    await asyncio.to_thread(shared_ssl_context)  # built once, off the event loop
    writer = CycleWriter(engine)

    async def one(cls: type[Scraper]) -> RunResult:
        env = settings.provider_env(cls.name, dict(environ) if environ is not None else None)
        scraper = cls(env=env, replay=replay)
        recording = None
        if replay:
            transport: httpx.AsyncBaseTransport | None = ReplayTransport.for_provider(cls.name, replay_dir)
            recording = recording_info(cls.name, replay_dir) or RecordingInfo(cls.name, None, "unknown")
        else:
            transport = transport_factory(cls.name) if transport_factory else None
        recorder = None
        if record_dir is not None:
            recorder = record.RecordingTransport(transport or httpx.AsyncHTTPTransport(verify=shared_ssl_context()))
            transport = recorder
        async with limit:
            result = await collect_one(engine, scraper, settings, transport=transport, on_progress=on_progress,
                                       recording=recording, writer=writer)
        if recorder is not None and record_dir is not None and result.status in ("ok", "partial"):
            folder = await asyncio.to_thread(record.save, record_dir, cls.name, recorder.exchanges, scraper.secrets(),
                                             result.started_at)
            result = replace(result, extra={**result.extra, "recorded": str(folder)})
        return result

    try:
        return list(await asyncio.gather(*(one(c) for c in classes)))
    finally:
        writer.close()


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while the block runs, then restored as it was.

    A cycle allocates a few containers per offer (offers, their ``extra``, stored rows) that
    reference counting frees as soon as a provider is stored. The cyclic collector, left on,
    runs every 700 allocations and walks them and the process's long-lived objects (the catalog,
    the schema's metadata) about 170 times in a cycle of 20,000 offers: 15-20% of its time. Held
    off, what a cycle leaves in reference cycles (a few exceptions and futures) waits for the
    next collection after it; a cycle's size bounds it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def collect(engine: Engine, settings: Settings, names: Sequence[str] | None = None, **kwargs: Any) -> list[RunResult]:
    """Synchronous entry point for the CLI and the scheduler (``cyclic_gc_paused`` while it runs)."""
    with cyclic_gc_paused():
        return asyncio.run(collect_async(engine, settings, names, **kwargs))


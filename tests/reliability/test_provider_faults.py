"""The real collector against a misbehaving server on 127.0.0.1, one fault class at a time.

Three healthy providers (linode, voltagepark, hyperbolic) are served their recordings; one victim
(akash for JSON, coreweave for a page, vastai for a marketplace price) gets the fault. For every
fault, on SQLite and PostgreSQL: the victim alone fails with a recorded reason, or its bad prices
are quarantined with one; nothing wrong is stored; an alert rule that would fire on any stored
victim price does not fire; the healthy providers succeed; the huge body and the gzip bomb are
read in bounded memory. Timeouts are short so the whole module takes seconds.
"""

from __future__ import annotations

import email.utils
import json
import time
import tracemalloc
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from db.models import Quarantine, ScrapeRun
from tests.reliability.conftest import (
    Asked,
    FaultServer,
    Handler,
    LocalTransport,
    recorded_file,
)
from tracker import alerts
from tracker.config.settings import Settings
from tracker.pipeline.collect import RunResult, collect

HEALTHY = ("linode", "voltagepark", "hyperbolic")
AKASH = "console-api.akash.network"
COREWEAVE = "www.coreweave.com"
VASTAI = "console.vast.ai"
LIMIT_MB = 1


def settings_for(victim: str) -> Settings:
    return Settings(
        http={"timeout_s": 0.3, "retries": 1, "backoff_s": 0, "provider_timeout_s": 1.5, "concurrency": 8},
        providers={victim: {"max_body_mb": LIMIT_MB}},
        alerts=[
            # would fire on any stored price of the victim, low or high
            {"name": "victim-below", "gpu": "A100", "below": 100000, "providers": [victim], "notify": ["log"]},
            {"name": "victim-above", "gpu": "A100", "above": 10, "providers": [victim], "notify": ["log"]},
        ],
    )


# --- faults ----------------------------------------------------------------------------------


def status(code: int, headers: dict[str, str] | None = None) -> Callable[[Handler, Asked], None]:
    return lambda h, _: h.send_body(code, b'{"error": "boom"}', headers=headers)


def body(payload: bytes, content_type: str = "application/json") -> Callable[[Handler, Asked], None]:
    return lambda h, _: h.send_body(200, payload, content_type)


def sleep_then_answer(h: Handler, asked: Asked) -> None:
    time.sleep(1.0)  # past timeout_s: the client has given up
    h.replay(asked)


def slow_body(h: Handler, _: Asked) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "100000")
    h.end_headers()
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:  # one byte every 0.1 s: never a read timeout, never done
        h.wfile.write(b" ")
        h.wfile.flush()
        time.sleep(0.1)


def endless(h: Handler, _: Asked) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(200 << 20))
    h.end_headers()
    chunk = b"[" + b"1," * (1 << 15)
    for _ in range((200 << 20) // len(chunk)):
        h.wfile.write(chunk)


def gzip_bomb(decoded_mb: int = 256) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    return b"".join(compressor.compress(block) for _ in range(decoded_mb)) + compressor.flush()


BOMB = gzip_bomb()


def bomb(h: Handler, _: Asked) -> None:
    h.send_body(200, BOMB, headers={"Content-Encoding": "gzip"})


def redirect(location: str) -> Callable[[Handler, Asked], None]:
    return lambda h, _: h.send_body(302, b"", headers={"Location": location})


def once_then_replay(first: Callable[[Handler, Asked], None]) -> Callable[[Handler, Asked], None]:
    calls: list[int] = []

    def fault(h: Handler, asked: Asked) -> None:
        calls.append(1)
        (first if len(calls) == 1 else Handler.replay)(h, asked)

    return fault


def akash_with(change: Callable[[dict[str, Any]], None]) -> bytes:
    payload = json.loads(recorded_file("akash", "gpu-prices.json"))
    change(payload)
    return json.dumps(payload).encode()


def _price(value: Any) -> Callable[[dict[str, Any]], None]:
    def change(payload: dict[str, Any]) -> None:
        payload["models"][0]["price"]["med"] = value
    return change


def vastai_text_price(h: Handler, _: Asked) -> None:
    """Every search gets one GPU name's answer (not a clamp, so fetch asks once), one price spoiled."""
    offers = json.loads(recorded_file("vastai", "bundles_gpu_rtx_5090_2026_reference.json"))
    listing = offers["offers"] if isinstance(offers, dict) else offers
    listing[0]["dph_base"] = "call for price"
    h.send_body(200, json.dumps(offers).encode())


AKASH_PAGE = recorded_file("akash", "gpu-prices.json")
COREWEAVE_PAGE = recorded_file("coreweave", "pricing_2026_reference.html")


@dataclass(frozen=True)
class Case:
    name: str
    victim: str
    host: str
    fault: Callable[[Handler, Asked], None] | None
    reason: str  # in the victim's error message (failed) or quarantine reason (quarantined)
    outcome: str = "failed"  # failed | quarantined
    refused: bool = False
    bounded_memory: bool = False


CASES = [
    Case("refused", "akash", AKASH, None, "failed after 2 attempts: ConnectError", refused=True),
    Case("timeout", "akash", AKASH, sleep_then_answer, "failed after 2 attempts: ReadTimeout"),
    Case("slow body", "akash", AKASH, slow_body, "fetch took longer than 1.5s"),
    Case("500", "akash", AKASH, status(500), "GET https://console-api.akash.network/v1/gpu-prices -> HTTP 500 after 2 attempts"),
    Case("429 seconds", "akash", AKASH, status(429, {"Retry-After": "0"}), "HTTP 429 after 2 attempts"),
    Case("429 date", "akash", AKASH, status(429, {"Retry-After": email.utils.formatdate(0, usegmt=True)}), "HTTP 429 after 2 attempts"),
    Case("429 junk", "akash", AKASH, status(429, {"Retry-After": "soon"}), "HTTP 429 after 2 attempts"),
    Case("truncated JSON", "akash", AKASH, body(AKASH_PAGE[: len(AKASH_PAGE) // 2]), "did not return JSON"),
    Case("wrong-shape JSON", "akash", AKASH, body(b'{"models": {"a100": "cheap"}}'), "akash: "),
    Case("empty list", "akash", AKASH, body(b'{"availability": {}, "models": []}'), "akash: "),
    Case("invalid UTF-8", "akash", AKASH, body(AKASH_PAGE.replace(b"nvidia", b"nvid\xff\xfea")), "did not return JSON"),
    Case("huge body", "akash", AKASH, endless, f"the body is larger than {LIMIT_MB} MiB", bounded_memory=True),
    Case("gzip bomb", "akash", AKASH, bomb, f"the body is larger than {LIMIT_MB} MiB", bounded_memory=True),
    Case("redirect to another host", "akash", AKASH, redirect("https://evil.example/v1/gpu-prices"),
         "evil.example is not one of the provider's hosts"),
    Case("redirect to a sibling host", "akash", AKASH, redirect("https://user-content.akash.network/v1/gpu-prices"),
         "user-content.akash.network is not one of the provider's hosts"),
    Case("https to http", "akash", AKASH, redirect(f"http://{AKASH}/v1/gpu-prices"), "https -> http"),
    Case("changed HTML layout", "coreweave", COREWEAVE,
         body(COREWEAVE_PAGE.replace(b"table-row-v2", b"price-list"), "text/html"),
         "coreweave: "),
    Case("invalid UTF-8 page", "coreweave", COREWEAVE, body(COREWEAVE_PAGE.replace(b"H100", b"H\xff100"), "text/html"),
         "did not return valid utf-8 text"),
    Case("absurd price", "akash", AKASH, body(akash_with(_price(1e6))), "above the 200 USD plausibility limit", outcome="quarantined"),
    Case("non-numeric price", "akash", AKASH, body(akash_with(_price("1.48 USD"))), "akash: "),
    Case("text price in a marketplace", "vastai", VASTAI, vastai_text_price, "price field searches[0].response.offers[0].dph_base holds 'call for price', not a number",
         outcome="quarantined"),
]


def by_provider(results: Sequence[RunResult]) -> dict[str, RunResult]:
    return {r.provider: r for r in results}


def run_collect(engine: Engine, server: FaultServer, case: Case, settings: Settings) -> dict[str, RunResult]:
    refused = frozenset({case.host}) if case.refused else frozenset()
    names = [case.victim, *HEALTHY]
    return by_provider(collect(engine, settings, names, transport_factory=lambda _: LocalTransport(server.port, refused)))


def victim_prices(engine: Engine, victim: str) -> list[float]:
    with Session(engine) as s:
        return list(s.scalars(text("SELECT i.price_per_hour FROM price_interval i JOIN offer o ON o.id = i.offer_id "
                                   "WHERE o.provider = :provider"), {"provider": victim}))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_one_fault_fails_or_quarantines_only_its_provider(engine: Engine, fault_server: FaultServer, case: Case) -> None:
    if case.fault is not None:
        fault_server.faults[case.host] = case.fault
    settings = settings_for(case.victim)
    if case.bounded_memory:
        tracemalloc.start()
    try:
        results = run_collect(engine, fault_server, case, settings)
        if case.bounded_memory:
            _, peak = tracemalloc.get_traced_memory()
            assert peak < 48 << 20, f"peak {peak >> 20} MiB reading a body cut at {LIMIT_MB} MiB"
    finally:
        if case.bounded_memory:
            tracemalloc.stop()

    for name in HEALTHY:
        assert results[name].ok and results[name].offers_seen > 0, results[name]
    victim = results[case.victim]
    with Session(engine) as s:
        run = s.get(ScrapeRun, victim.run_id)
        assert run is not None
        quarantined = list(s.scalars(select(Quarantine).where(Quarantine.provider == case.victim)))
    if case.outcome == "failed":
        assert victim.status == "failed", victim
        assert case.reason in (victim.error_message or ""), victim.error_message
        assert run.status == "failed" and run.error_message == victim.error_message
        assert "Error:" not in run.error_message and "Traceback" not in run.error_message
        assert victim_prices(engine, case.victim) == []
    else:
        assert victim.status == "ok" and victim.quarantined >= 1, victim
        assert any(case.reason in q.reason for q in quarantined), [q.reason for q in quarantined]
        assert 1e6 not in victim_prices(engine, case.victim)
    fired = alerts.check(engine, settings, dry_run=True).fired
    # a failed victim stored nothing to alert on; a quarantined price is never alerted on (the
    # victim's other, sane offers may still meet the low-price rule)
    assert fired == [] if case.outcome == "failed" else "victim-above" not in fired
    # nothing was asked of a host outside the providers' own
    assert all(a.host in {case.host, *HEALTHY_HOSTS} for a in fault_server.asked), {a.host for a in fault_server.asked}


HEALTHY_HOSTS = {"api.linode.com", "cloud-api.voltagepark.com", "api.hyperbolic.ai"}


@pytest.mark.parametrize("retry_after", ["1", "soon", "date"])
def test_a_429_is_retried_as_the_server_asks_then_collected(engine: Engine, fault_server: FaultServer, retry_after: str) -> None:
    value = email.utils.formatdate(time.time() + 1, usegmt=True) if retry_after == "date" else retry_after
    fault_server.faults[AKASH] = once_then_replay(status(429, {"Retry-After": value}))
    settings = settings_for("akash").model_copy(update={"alerts": []})
    started = time.monotonic()
    results = run_collect(engine, fault_server, Case("429", "akash", AKASH, None, ""), settings)
    waited = time.monotonic() - started
    assert results["akash"].ok and results["akash"].offers_seen == 1, results["akash"]
    assert [a.host for a in fault_server.asked].count(AKASH) == 2
    if retry_after == "1":
        assert waited >= 1.0


def test_a_50x_jump_is_held_and_the_stored_price_stays(engine: Engine, fault_server: FaultServer) -> None:
    settings = settings_for("akash")
    case = Case("jump", "akash", AKASH, None, "")
    assert run_collect(engine, fault_server, case, settings)["akash"].ok
    assert victim_prices(engine, "akash") == [1.48]
    fault_server.faults[AKASH] = body(akash_with(_price(1.48 * 50)))
    before = alerts.check(engine, settings, dry_run=True)
    assert "victim-above" not in before.fired
    second = run_collect(engine, fault_server, case, settings)
    assert second["akash"].ok and second["akash"].quarantined == 1
    with Session(engine) as s:
        (q,) = s.scalars(select(Quarantine).where(Quarantine.provider == "akash"))
    assert "price jumped from 1.48 to 74" in q.reason and "held until a second scrape confirms it" in q.reason
    assert 74.0 not in victim_prices(engine, "akash")
    assert "victim-above" not in alerts.check(engine, settings, dry_run=True).fired
    assert all(second[n].ok for n in HEALTHY)

"""Record mode (``scrape --record DIR``, ``tracker.pipeline.record``) over real HTTP on 127.0.0.1:
no credential, token or key in a recording, and recording then replaying stores the same offers,
on both backends.

The scrapers run unchanged (``https://<their host>/...``, every check of ``Http``); the reliability
suite's ``LocalTransport`` sends their requests over a real socket to a server on 127.0.0.1.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from sqlalchemy import text

from scrapers.base import Http, ScrapedOffer, Scraper, require
from scrapers.registry import get_scraper
from tests.conftest import run_main
from tests.reliability.conftest import (  # noqa: F401
    Asked,
    FaultServer,
    Handler,
    LocalTransport,
    fault_server,
)
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.pipeline.replay import recording_info
from tracker.pipeline.store import open_store

KEY = "SK-fake-0123456789abcdef"  # the configured key: header, query string and request body
TOKEN = "tok-runtime-fedcba9876543210"  # an OAuth token obtained while fetching
STRANGER = "sk-live-never-held-by-the-scraper"  # a secret-named field the scraper never held
HOST = "api.secretcloud.test"


class SecretCloud(Scraper):
    """Signs in with its key (form body), then lists offers with the token and the key (header, query)."""

    name: ClassVar[str] = "secretcloud"
    display_name: ClassVar[str] = "Secret Cloud"
    homepage: ClassVar[str] = f"https://{HOST}/"
    endpoint: ClassVar[str] = f"POST https://{HOST}/oauth/token, GET https://{HOST}/v1/offers"
    credentials: ClassVar[tuple[str, ...]] = ("SECRET_CLOUD_KEY",)

    async def fetch(self, http: Http) -> Any:
        key = self.credential("SECRET_CLOUD_KEY")
        auth = await http.post_json(f"https://{HOST}/oauth/token",
                                    json={"grant_type": "client_credentials", "client_id": "tracker", "client_secret": key})
        token = require(auth, "access_token", provider=self.name)
        self.remember_secret(token)
        pages = []
        for page in (1, 2):
            pages.append(await http.get_json(f"https://{HOST}/v1/offers", params={"page": page, "api_key": key},
                                             headers={"Authorization": f"Bearer {token}", "X-Api-Key": key}))
        return pages

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        return [self.offer(sku=o["sku"], gpu_raw=o["gpu"], gpu_count=o["count"], price_per_hour=o["price"], region="r1")
                for page in raw for o in require(page, "offers", provider=self.name, kind=list)]


def secret_cloud(handler: Handler, asked: Asked) -> None:
    """The provider: checks the key and the token where they are sent, echoes them back in its answers."""
    if asked.url.endswith("/robots.txt"):
        handler.send_body(404, b"none", "text/plain")
    elif asked.url.endswith("/oauth/token"):
        assert json.loads(asked.body)["client_secret"] == KEY
        handler.send_body(200, json.dumps({"access_token": TOKEN, "token_type": "bearer",
                                           "note": f"issued for {KEY}"}).encode())
    else:
        assert asked.headers["authorization"] == f"Bearer {TOKEN}" and asked.headers["x-api-key"] == KEY
        assert f"api_key={KEY}" in asked.url
        page = 1 if "page=1" in asked.url else 2
        body = {"offers": [{"sku": f"h100-{page}-{i}", "gpu": "H100 SXM", "count": 8, "price": 20.0 + page + i / 10}
                           for i in range(3)],
                "debug": {"request": asked.url, "api_key": STRANGER, "auth": f"Bearer {TOKEN.upper()}"}}
        data, extra = json.dumps(body).encode(), {}
        if page == 2:  # compressed on the wire, as most providers answer
            data, extra = gzip.compress(data), {"Content-Encoding": "gzip"}
        handler.send_body(200, data, "application/json; charset=utf-8",
                          {"Link": f"<https://{HOST}/v1/offers?page={page + 1}&api_key={KEY}>; rel=\"next\"",
                           "Set-Cookie": f"session={TOKEN}", **extra})


@pytest.fixture
def server(fault_server: FaultServer) -> Iterator[FaultServer]:  # noqa: F811 - the reliability suite's fixture
    fault_server.faults[HOST] = secret_cloud
    yield fault_server


def _offers(url: str) -> dict[tuple[str, str, str], float]:
    settings = Settings(database=url)
    engine = open_store(settings, url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text(
                "SELECT o.provider, o.sku, o.kind, i.price_per_hour FROM offer o "
                "JOIN price_interval_open i ON i.offer_id = o.id")).all()
    finally:
        engine.dispose()
    return {(p, sku, kind): round(float(price), 6) for p, sku, kind, price in rows}


def _collect(url: str, classes: list[type[Scraper]], **kwargs: Any) -> list[Any]:
    settings = Settings(database=url)
    engine = open_store(settings, url)
    try:
        return collect(engine, settings, classes=classes, **kwargs)
    finally:
        engine.dispose()


def test_a_recording_holds_no_secret_and_replays_to_the_same_offers(server: FaultServer, db_url: str,
                                                                      tmp_path: Path) -> None:
    out = tmp_path / "recorded"
    [run] = _collect(db_url, [SecretCloud], record_dir=out, environ={"SECRET_CLOUD_KEY": KEY},
                     transport_factory=lambda _name: LocalTransport(server.port))
    assert run.status == "ok" and run.offers_seen == 6 and run.extra["recorded"] == str(out / "secretcloud")
    assert [a.url.split("?")[0] for a in server.asked if a.host == HOST][-3:] == [
        f"https://{HOST}/oauth/token", f"https://{HOST}/v1/offers", f"https://{HOST}/v1/offers"]  # real requests

    files = sorted((out / "secretcloud").iterdir())
    everything = b"".join(f.read_bytes() for f in files).lower()
    for secret in (KEY, TOKEN, STRANGER):
        for form in (secret, secret.lower(), secret.upper()):
            assert form.lower().encode() not in everything, (secret, [f.name for f in files])
    manifest = json.loads((out / "secretcloud" / "manifest.json").read_text())
    assert manifest["fixture"] == "recording" and manifest["recorded"].startswith(run.started_at.strftime("%Y-%m-%dT%H:%M"))
    info = recording_info("secretcloud", out)
    assert info is not None and info.observed_at is not None
    entries = {(e["method"], e["url"], json.dumps(e.get("query"))): e for e in manifest["responses"]}
    assert set(entries) == {
        ("POST", f"https://{HOST}/oauth/token", "null"),
        ("GET", f"https://{HOST}/v1/offers", '{"page": "1"}'),  # the api_key parameter is left out
        ("GET", f"https://{HOST}/v1/offers", '{"page": "2"}'),
    }
    page1 = entries[("GET", f"https://{HOST}/v1/offers", '{"page": "1"}')]
    assert page1["status"] == 200 and page1["content_type"] == "application/json"
    assert page1["headers"] == {"link": f"<https://{HOST}/v1/offers?page=2&api_key=***>; rel=\"next\""}  # no cookie
    body = json.loads((out / "secretcloud" / page1["file"]).read_text())
    assert body["offers"][0] == {"sku": "h100-1-0", "gpu": "H100 SXM", "count": 8, "price": 21.0}
    assert body["debug"]["api_key"] == "***"
    page2 = entries[("GET", f"https://{HOST}/v1/offers", '{"page": "2"}')]
    assert json.loads((out / "secretcloud" / page2["file"]).read_text())["offers"][2]["price"] == 22.2  # decoded
    token_entry = entries[("POST", f"https://{HOST}/oauth/token", "null")]
    assert token_entry["body_contains"] == '{"grant_type":"client_credentials","client_id":"tracker","client_secret":"'

    # replaying the recording (no key: replay stands in its placeholder) stores the same offers
    replayed = f"sqlite:///{tmp_path / 'replayed.db'}"
    [again] = _collect(replayed, [SecretCloud], replay=True, replay_dir=out, environ={})
    assert again.status == "ok", again.error_message
    assert _offers(replayed) == _offers(db_url) and len(_offers(db_url)) == 6


def test_recording_real_scrapers_then_replaying_stores_the_same_offers(server: FaultServer, db_url: str,
                                                                         tmp_path: Path) -> None:
    """Bundled recordings served over HTTP stand in for the providers: a page (lambda), a GraphQL
    POST (runpod) and a paginated API whose key goes in the query string (gcp)."""
    names = ["lambda", "runpod", "gcp"]
    classes = [get_scraper(n) for n in names]
    out = tmp_path / "recorded"
    env = {"GCP_API_KEY": KEY}
    runs = _collect(db_url, classes, record_dir=out, environ=env, transport_factory=lambda _n: LocalTransport(server.port))
    assert [(r.provider, r.status) for r in runs] == [(n, "ok") for n in names], [r.error_message for r in runs]
    for name in names:
        assert KEY.lower().encode() not in b"".join(f.read_bytes() for f in (out / name).iterdir()).lower()
    replayed = f"sqlite:///{tmp_path / 'replayed.db'}"
    again = _collect(replayed, classes, replay=True, replay_dir=out, environ={})
    assert {r.status for r in again} == {"ok"}, [r.error_message for r in again]
    recorded, live = _offers(replayed), _offers(db_url)
    assert recorded == live and {p for p, _, _ in live} == set(names)


def test_record_is_not_a_replay_and_a_failed_provider_keeps_its_recording(capsys: Any, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 't.db'}"
    code, _, err = run_main(capsys, "--db", db, "scrape", "--record", str(tmp_path / "r"), "--replay")
    assert code == 2 and err.strip() == "error: --record makes the real requests: it cannot be combined with --replay"

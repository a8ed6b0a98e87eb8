"""Failure capture (``tracker.pipeline.failures``): a live payload that failed to parse is kept in
the store, cut and with secrets scrubbed, the last few per provider, and ``providers --failure``
shows or saves it; on both backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from scrapers.base import Http, ParseError, ScrapedOffer, Scraper
from tests.conftest import run_main
from tracker.config.settings import Settings
from tracker.pipeline import failures
from tracker.pipeline.collect import collect
from tracker.pipeline.store import open_store

KEY = "FAKEKEY-9f8e7d6c5b4a"
TOKEN = "tok-RUNTIME-0a1b2c3d4e"


class Payload:
    body: Any = None


class BrokenScraper(Scraper):
    """A provider whose layout changed: its payload has no ``offers`` any more."""

    name: ClassVar[str] = "brokencloud"
    display_name: ClassVar[str] = "Broken Cloud"
    credentials: ClassVar[tuple[str, ...]] = ("BROKEN_KEY",)

    async def fetch(self, http: Http) -> Any:
        self.remember_secret(TOKEN)
        return Payload.body

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        if isinstance(raw, dict) and "offers" in raw:
            return [self.offer(sku="a", gpu_raw="H100", gpu_count=1, price_per_hour=2.0)]
        raise ParseError(f"{self.name}: payload has no 'offers'")


def _collect(url: str, *, replay: bool = False) -> str:
    settings = Settings(database=url)
    engine = open_store(settings, url)
    try:
        [run] = collect(engine, settings, classes=[BrokenScraper], environ={"BROKEN_KEY": KEY}, replay=replay)
        return run.status
    finally:
        engine.dispose()


def test_the_payload_that_broke_the_parser_is_kept_without_secrets(db_url: str, capsys: Any, tmp_path: Path) -> None:
    Payload.body = {
        "data": {"gpus": [{"name": "H100", "hourly": "2.10"}]},  # the new layout
        "echo": f"your key is {KEY.lower()}",  # an API echoing the key back, case changed
        "auth": {"access_token": "sk-live-notoursbutsecret", "expires": 3600},  # a token the scraper never held
        "next": f"https://api.example.test/v2/gpus?page=2&api_key={KEY}&token={TOKEN}",
        "session": TOKEN,
    }
    assert _collect(db_url) == "failed"
    settings = Settings(database=db_url)
    engine = open_store(settings, db_url)
    try:
        kept = failures.latest(engine, "brokencloud")
    finally:
        engine.dispose()
    assert kept is not None and kept.encoding == "json" and not kept.truncated
    assert kept.error == "brokencloud: payload has no 'offers'"
    data = json.loads(kept.payload)  # still the payload's structure
    assert data["data"]["gpus"][0] == {"name": "H100", "hourly": "2.10"}
    assert data["auth"] == {"access_token": "***", "expires": 3600}
    for secret in (KEY, KEY.lower(), TOKEN, "sk-live-notoursbutsecret"):
        assert secret.lower() not in kept.payload.lower()

    capsys.readouterr()  # the collection's log lines
    code, out, err = run_main(capsys, "--db", db_url, "providers", "--failure", "brokencloud")
    assert code == 0 and json.loads(out) == data
    assert err.startswith("brokencloud: payload (json, secrets scrubbed) of the collection that failed at ")
    target = tmp_path / "broken.json"
    code, out, err = run_main(capsys, "--db", db_url, "providers", "--failure", "brokencloud", "-o", str(target))
    assert code == 0 and out == "" and json.loads(target.read_text()) == data
    assert err.startswith(f"saved to {target}")
    code, out, err = run_main(capsys, "--db", db_url, "providers", "--failure", "lambda")
    assert code == 2 and err.strip().startswith("error: --failure: no failed parse of 'lambda' is kept")


def test_only_the_last_few_are_kept_and_each_is_bounded(db_url: str) -> None:
    bodies = [f"<html>layout {i}</html>" for i in range(failures.KEEP + 2)]
    for body in bodies:
        Payload.body = body
        assert _collect(db_url) == "failed"
    Payload.body = ("x" * 1000 + KEY) * 3000  # ~3 MB of page with the key in it
    assert _collect(db_url) == "failed"
    settings = Settings(database=db_url)
    engine = open_store(settings, db_url)
    try:
        assert failures.kept(engine, "brokencloud") == failures.KEEP
        newest = failures.latest(engine, "brokencloud")
    finally:
        engine.dispose()
    assert newest is not None and newest.encoding == "text" and newest.truncated
    assert len(newest.payload) == failures.MAX_PAYLOAD_CHARS and newest.size == len(Payload.body)
    assert KEY not in newest.payload and "***" in newest.payload


def test_a_working_parse_or_a_replay_keeps_nothing(db_url: str) -> None:
    Payload.body = {"offers": []}
    assert _collect(db_url) == "ok"
    Payload.body = "<html>changed</html>"
    assert _collect(db_url, replay=True) == "failed"  # replayed payloads are already on disk
    settings = Settings(database=db_url)
    engine = open_store(settings, db_url)
    try:
        assert failures.kept(engine, "brokencloud") == 0
    finally:
        engine.dispose()


@pytest.mark.parametrize("raw", [b"\xff\xfe bytes", ("a", 1), {1, 2}])
def test_any_payload_becomes_text(raw: Any) -> None:
    captured = failures.capture(raw, [])
    assert captured.payload and captured.encoding in ("text", "json", "repr")

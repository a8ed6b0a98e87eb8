"""Configured secrets never leave the provider side after failures: not in a log line, a
``scrape_run`` row, CLI output or an API response, and never in a request to another host.

The fault server echoes every credential back (in error bodies, GraphQL messages, next-page links
and a long message that would have been cut just after the key's first characters), and the real
collector runs against it with DEBUG logging; then every place an error is stored or shown is
searched for each secret and for its first eight characters.
"""

from __future__ import annotations

import json
import logging

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from db.models import ScrapeRun
from tests.reliability.conftest import Asked, FaultServer, Handler, LocalTransport
from tracker import logs
from tracker.cli import app as cli_app
from tracker.config.settings import Settings
from tracker.pipeline.collect import MAX_ERROR_CHARS, collect, error_text
from tracker.web import create_app

ACCESS_TOKEN = "verda-access-7d1c0e5a9b2f4e63a8c1"  # handed out by the fake token endpoint
SECRETS = {
    "DIGITALOCEAN_TOKEN": "dop_v1_4f1e2d3c4b5a69788796a5b4c3d2e1f0aa11bb22",
    "RUNPOD_API_KEY": "rpa_K3Y9Q2W8E7R6T5Y4U3I2O1P0ASDFGHJKL",
    "GCP_API_KEY": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "JARVISLABS_TOKEN": "jl_tok_55e0c1f29a8b47d6b3e2a1908f7c6d5e",
    "VERDA_CLIENT_ID": "verda-client-id-0c9b8a7f6e5d",
    "VERDA_CLIENT_SECRET": "verda-client-secret-1a2b3c4d5e6f7a8b",
}
OWN_DOMAIN = {
    "DIGITALOCEAN_TOKEN": "api.digitalocean.com", "RUNPOD_API_KEY": "api.runpod.io",
    "GCP_API_KEY": "cloudbilling.googleapis.com", "JARVISLABS_TOKEN": ".jarvislabs.net",
    "VERDA_CLIENT_ID": "api.verda.com", "VERDA_CLIENT_SECRET": "api.verda.com",
}
ALL_SECRETS = [*SECRETS.values(), ACCESS_TOKEN]
PROVIDERS = ["digitalocean", "runpod", "gcp", "jarvislabs", "verda"]


def bearer(asked: Asked) -> str:
    return asked.headers.get("authorization", "").removeprefix("Bearer ")


def digitalocean(h: Handler, asked: Asked) -> None:
    """Page 1 points at another host, with the token in the link for good measure."""
    link = f"https://evil.example/v2/sizes?page=2&token={bearer(asked)}"
    h.send_body(200, json.dumps({"sizes": [], "links": {"pages": {"next": link}}}).encode())


def runpod(h: Handler, asked: Asked) -> None:
    """A GraphQL error whose 300th character falls inside the echoed key: for the keyed query, and
    for the anonymous one it falls back to (a server echoing the key it was sent before)."""
    message = "x" * 280 + f" invalid api key {SECRETS['RUNPOD_API_KEY']} for this query"
    h.send_body(200, json.dumps({"data": None, "errors": [{"message": message}]}).encode())


def gcp(h: Handler, asked: Asked) -> None:
    h.send_body(403, json.dumps({"error": {"message": f"API key {asked.url.split('key=')[-1]} not valid"}}).encode())


def jarvislabs(h: Handler, asked: Asked) -> None:
    h.send_body(401, json.dumps({"detail": f"token {bearer(asked)} expired"}).encode())


def verda(h: Handler, asked: Asked) -> None:
    if asked.url.endswith("/oauth2/token"):
        h.send_body(200, json.dumps({"access_token": ACCESS_TOKEN, "token_type": "Bearer"}).encode())
    else:
        h.send_body(200, json.dumps({"error": f"token {bearer(asked)} lacks scope", "echo": asked.body.decode()}).encode())


FAULTS = {
    "api.digitalocean.com": digitalocean,
    "api.runpod.io": runpod,
    "cloudbilling.googleapis.com": gcp,
    **{host: jarvislabs for host in ("backendprod.jarvislabs.net", "backendn.jarvislabs.net",
                                     "backendc.jarvislabs.net", "backendeu.jarvislabs.net")},
    "api.verda.com": verda,
}


def leaks(text: str) -> list[str]:
    """Each secret (whole, or its first 8 characters) found in ``text``."""
    lowered = text.lower()
    return [s for s in ALL_SECRETS if s.lower() in lowered or s[:8].lower() in lowered]


@pytest.fixture
def failed_store(engine: Engine, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]) -> tuple[Engine, str]:
    """Collect the five credentialed providers against echoing faults; return the engine and every log line."""
    fault_server.faults.update(FAULTS)
    settings = Settings(http={"timeout_s": 1, "retries": 0, "backoff_s": 0, "provider_timeout_s": 5})
    logs.configure("json", logging.DEBUG)
    try:
        results = collect(engine, settings, PROVIDERS, environ=SECRETS,
                          transport_factory=lambda _: LocalTransport(fault_server.port))
    finally:
        logs.configure("text", logging.WARNING)
    assert {r.provider: r.status for r in results} == dict.fromkeys(PROVIDERS, "failed"), results
    return engine, capsys.readouterr().err


def test_no_secret_in_logs_or_run_rows(failed_store: tuple[Engine, str], fault_server: FaultServer) -> None:
    engine, log_text = failed_store
    assert log_text.strip(), "the collector logged nothing to search"
    assert leaks(log_text) == []
    with Session(engine) as s:
        rows = list(s.scalars(select(ScrapeRun)))
    assert len(rows) == len(PROVIDERS)
    for row in rows:
        dumped = json.dumps({c.name: getattr(row, c.name) for c in ScrapeRun.__table__.columns}, default=str)
        assert leaks(dumped) == [], dumped
        assert row.error_message and len(row.error_message) <= MAX_ERROR_CHARS
    runpod_row = next(r for r in rows if r.provider == "runpod")
    assert "***" in (runpod_row.error_message or "")  # scrubbed, then cut: the key is gone whole


def test_the_token_never_reaches_another_host(failed_store: tuple[Engine, str], fault_server: FaultServer) -> None:
    hosts = {a.host for a in fault_server.asked}
    assert "evil.example" not in hosts and "api.digitalocean.com" in hosts
    for asked in fault_server.asked:
        sent = json.dumps(asked.headers) + asked.url + asked.body.decode("utf-8", "replace")
        for name, secret in SECRETS.items():
            if secret in sent:
                assert asked.host.endswith(OWN_DOMAIN[name]), f"{name} was sent to {asked.host}"


def test_no_secret_in_cli_output(failed_store: tuple[Engine, str], db_url: str) -> None:
    runner = CliRunner()
    for args in (["providers"], ["providers", "--format", "json"], ["info"]):
        result = runner.invoke(cli_app, ["--db", db_url, *args], env=SECRETS)
        assert result.exit_code == 0, result.output
        assert leaks(result.output) == [], result.output
        if args[0] == "providers":
            assert "runpod" in result.output


def test_no_secret_in_api_responses(failed_store: tuple[Engine, str]) -> None:
    engine, _ = failed_store
    with TestClient(create_app(Settings(), engine), base_url="http://127.0.0.1") as client:
        for path in ("/api/runs", "/api/providers", "/providers", "/", "/healthz"):
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            assert leaks(response.text) == [], path
        runs = client.get("/api/runs").json()
        assert {r["provider"] for r in runs} >= set(PROVIDERS)


def test_error_text_scrubs_before_it_cuts() -> None:
    key = SECRETS["RUNPOD_API_KEY"]
    message = "x" * (MAX_ERROR_CHARS - 10) + key
    text = error_text(message, [key])
    assert len(text) <= MAX_ERROR_CHARS and key[:8] not in text
    assert error_text(f"bad key {key.upper()}", [key]) == "bad key ***"


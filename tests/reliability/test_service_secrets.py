"""Every configured secret -- provider keys, the API token, the database password, a notify URL
kept in the environment, a literal one in the config file, a webhook signing secret -- is
searched for in every log line, every CLI output, every run row, every API response and a dump
of the whole database, after the real commands ran on it (SQLite and PostgreSQL).

The test also shows each secret was in use (the receiver was called on the secret path and
with a signature made with the secret), so a secret missing from everything is not vacuous.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine, make_url

from tests.alerts.helpers import Receiver, start_receiver
from tests.conftest import recordings_recorded_now
from tests.reliability.service_procs import cli, serve
from tracker.web.security import API_TOKEN_ENV

pytestmark = pytest.mark.slow

GCP_KEY = "AIzaSyFAKE-gcp-key-7f3c91d2e4b6a805"
RUNPOD_KEY = "rpa_FAKE5e1d0c9b8a7f6e5d4c3b2a19"
API_TOKEN = "api-token-FAKE-0b1c2d3e4f5a6b7c8d9e"
DB_PASSWORD = "dbpass-FAKE-9a8b7c6d5e4f"
HOOK_PATH = "hookpath-FAKE-1a2b3c4d5e6f7a8b"
HOOK_SIGNING = "hmac-FAKE-signing-5f4e3d2c1b0a"
CONFIG_TOKEN = "cfgtoken-FAKE-c0ffee15600d"
SECRETS = (GCP_KEY, RUNPOD_KEY, API_TOKEN, DB_PASSWORD, HOOK_PATH, HOOK_SIGNING, CONFIG_TOKEN)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from start_receiver()


def with_password(db_url: str) -> str:
    """PostgreSQL: the URL with a password (the test server trusts local connections, so it is
    carried everywhere but never needed); SQLite has none."""
    url = make_url(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    if url.get_backend_name() != "postgresql":
        return db_url
    return url.set(password=DB_PASSWORD).render_as_string(hide_password=False)


def dump(engine: Engine, db_url: str) -> str:
    """Every row of every table: SQLite's iterdump, or a full select of each PostgreSQL table."""
    if engine.url.get_backend_name() == "sqlite":
        with sqlite3.connect(make_url(db_url).database or "") as conn:
            return "\n".join(conn.iterdump())
    out: list[str] = []
    with engine.connect() as conn:
        for table in inspect(conn).get_table_names():
            out += [repr(tuple(row)) for row in conn.execute(text(f'SELECT * FROM "{table}"'))]
    return "\n".join(out)


def test_no_configured_secret_appears_anywhere(engine: Engine, db_url: str, tmp_path: Path,
                                               receiver: Receiver) -> None:
    url = with_password(db_url)
    config = tmp_path / "config.toml"
    config.write_text(
        '[delivery]\nallow_hosts = ["127.0.0.1"]\n'  # the test's receiver, allowed by name
        '[providers.gcp]\napi_key_env = "MY_GCP_KEY"\n'
        '[[alerts]]\nname = "h100-any"\ngpu = "H100"\nbelow = 1000.0\n'
        'notify = ["env:ALERT_HOOK"]\nwebhook_secret_env = "HOOK_SIGNING"\n'
        '[[alerts]]\nname = "b200-any"\ngpu = "B200"\nbelow = 0.01\n'
        f'notify = ["json://bot:{CONFIG_TOKEN}@127.0.0.1:9/x?token={CONFIG_TOKEN}"]\n'
    )
    env = {"GPU_TRACKER_CONFIG": str(config), "MY_GCP_KEY": GCP_KEY, "RUNPOD_API_KEY": RUNPOD_KEY,
           API_TOKEN_ENV: API_TOKEN, "ALERT_HOOK": f"webhook+http://127.0.0.1:{receiver.port}/{HOOK_PATH}",
           "HOOK_SIGNING": HOOK_SIGNING}
    texts: dict[str, str] = {}

    def run(*args: str) -> str:
        done = cli("--db", url, *args, env=env, timeout=300)
        texts[" ".join(args)] = done.stdout + done.stderr
        return done.stdout

    # recordings dated now, so the prices are current and the alert rules really fire and deliver
    recordings = str(recordings_recorded_now(tmp_path, ["lambda", "runpod", "gcp"]))
    run("-v", "scrape", "--replay-dir", recordings, "--provider", "lambda", "--provider", "runpod", "--provider", "gcp")
    run("run", "--once", "--replay-dir", recordings, "--provider", "runpod", "--log-format", "json")
    run("--debug", "alerts", "check")
    run("alerts", "add", "leaky", "--gpu", "H100", "--below", "1", "--notify", f"slack://T1/B2/{CONFIG_TOKEN}")
    for command in (("info",), ("config", "show"), ("config", "check"), ("providers",), ("status", "--format", "json"),
                    ("alerts", "list", "--format", "json"), ("alerts", "history"), ("prices", "--format", "json"),
                    ("db", "check")):
        run(*command)
    scraped = texts[next(k for k in texts if "scrape" in k)]
    assert "lambda" in scraped and "runpod" in scraped and "No such option" not in scraped
    assert "--notify env:ALERT_SLACK_URL" in texts[next(k for k in texts if k.startswith("alerts add"))]
    listed = {r["name"]: r for r in json.loads(texts["alerts list --format json"].split("\n", 1)[-1]
                                               if not texts["alerts list --format json"].startswith("[")
                                               else texts["alerts list --format json"])}
    assert set(listed) == {"h100-any", "b200-any"} and "***" in listed["b200-any"]["notify"]
    assert [k for k, v in texts.items() if "Usage:" in v or "Traceback" in v] == []  # every command really ran
    # the secrets were in use: the hook was called on its secret path, signed with the secret
    assert receiver.requests and {r.path for r in receiver.requests} == {f"/{HOOK_PATH}"}
    signed = receiver.requests[0]
    signature = next(v for k, v in signed.headers.items() if "signature" in k)
    assert hmac.new(HOOK_SIGNING.encode(), signed.body, hashlib.sha256).hexdigest() in signature

    with serve(tmp_path, url, env=env) as (base, proc):
        auth = {"Authorization": f"Bearer {API_TOKEN}"}
        spec = httpx.get(f"{base}/openapi.json", headers=auth).json()
        paths = [p for p, ops in spec["paths"].items() if "get" in ops and "{" not in p]
        assert {"/api/prices", "/api/runs", "/api/alerts", "/api/providers", "/metrics", "/healthz"} <= set(paths)
        required = {"/api/tco": "/api/tco?gpu=H100", "/api/history": "/api/history?gpu=H100"}
        for path in [required.get(p, p) for p in paths] + ["/", "/providers", "/gpu/H100", "/api/runs?limit=1000"]:
            for headers in (auth, {}):
                r = httpx.get(base + path, headers=headers, timeout=60)
                texts[f"GET {path} {bool(headers)}"] = r.text + json.dumps(dict(r.headers))
        assert httpx.get(f"{base}/api/runs", headers=auth).json()  # the run rows are served
    texts["serve log"] = "\n".join(proc.lines())
    texts["database dump"] = dump(engine, db_url)
    assert "scrape_run" in texts["database dump"] or "lambda" in texts["database dump"]

    leaks = [(where, secret) for where, body in texts.items() for secret in SECRETS if secret in body]
    assert leaks == []
    # and no telling prefix of a key either (an error cut before it was scrubbed)
    prefixes = [(where, s[:12]) for where, body in texts.items() for s in (GCP_KEY, RUNPOD_KEY, API_TOKEN)
                if s[:12] in body]
    assert prefixes == []

"""Web tests: a store filled through the real replay path, the app on it, a test client; an
alert scenario (rules firing, resolving, delivered and failing) through the real outbox."""

from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy.engine import Engine

from db.engine import make_engine
from db.migrate import init_db
from tests.alerts.helpers import Market, Receiver, fast_settings, h100, start_receiver
from tests.conftest import recordings_recorded_now
from tracker.alerts import send_test
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.pipeline.replay import BUNDLED_RECORDINGS

with warnings.catch_warnings():
    # starlette >= 1.x prefers the httpx2 package for its test client and warns at import
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

#: Fake secret values: they must never appear in any response.
GCP_SECRET = "AIzaFAKE-gcp-key-0123456789-never-shown"
NOTIFY_SECRET = "topic-secret-98765"
#: The config renames GCP's credential, so the API must name MY_GCP_KEY.
GCP_ENV = "MY_GCP_KEY"
BROKEN_PROVIDER = "lambda"


@dataclass
class Store:
    url: str
    engine: Engine
    settings: Settings


def make_settings(url: str) -> Settings:
    return Settings(
        database=url,
        providers={"gcp": {"api_key_env": GCP_ENV}},
        alerts=[{"name": "h100-cheap", "gpu": "H100", "below": 100.0,
                 "notify": ["log", f"webhook+https://hooks.example.com/{NOTIFY_SECRET}"]}],
    )


def filled_store(tmp: Path) -> Store:
    """Every bundled recording replayed once (as if recorded now), then one provider failing (a changed page)."""
    url = f"sqlite:///{tmp / 'tracker.db'}"
    engine = make_engine(url)
    init_db(engine)
    settings = make_settings(url)
    results = collect(engine, settings, replay=True, replay_dir=recordings_recorded_now(tmp))
    assert {r.status for r in results} == {"ok"}, [(r.provider, r.error_message) for r in results if not r.ok]
    broken = tmp / "broken"
    shutil.copytree(BUNDLED_RECORDINGS / BROKEN_PROVIDER, broken / BROKEN_PROVIDER)
    for body in (broken / BROKEN_PROVIDER).iterdir():
        if body.name != "manifest.json":
            body.write_text("<html><body>we moved our prices</body></html>")
    [failed] = collect(engine, settings, [BROKEN_PROVIDER], replay=True, replay_dir=broken)
    assert failed.status == "failed"
    return Store(url, engine, settings)


@pytest.fixture(scope="module")
def secret_env() -> Iterator[None]:
    """The fake GCP key is in the environment for the whole module (scrape and requests)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(GCP_ENV, GCP_SECRET)
        mp.setenv("GCP_API_KEY", GCP_SECRET)
        yield


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, secret_env: None) -> Iterator[Store]:
    s = filled_store(tmp_path_factory.mktemp("web"))
    yield s
    s.engine.dispose()


@pytest.fixture(scope="module")
def client(store: Store) -> Iterator[TestClient]:
    from tracker.web import create_app

    with TestClient(create_app(store.settings, store.engine), base_url="http://127.0.0.1") as c:
        yield c


def get_json(client: TestClient, url: str, status: int = 200) -> Any:
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.text[:500])
    return r.json()


# --- alerts: a small market through the real pipeline and outbox --------------------------------

#: Secret parts of channel URLs in the alert scenario: never shown on any page or in the API.
HOOK_SECRET = "hook-path-secret-4242"
DEAD_SECRET = "dead-path-secret-1717"


def free_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released): connections there are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """``app`` on a real uvicorn server on 127.0.0.1, for the duration of the block."""
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


def alert_scenario(engine: Engine, receiver: Receiver) -> Settings:
    """Collections of a fake provider and the scheduler's alert hook, as in production:

    * ``h100-under-2`` (delivered to a local receiver) fires, resolves, fires again: firing;
    * ``h100-dead-hook`` sends to a refused port: fired, then resolved, both pending with a reason;
      its test message (one attempt, no retry) failed;
    * ``a100-under-1`` never fires: armed, never fired.
    """
    hook = receiver.url("webhook+http", HOOK_SECRET)
    dead = f"json://127.0.0.1:{free_port()}/{DEAD_SECRET}"
    settings = fast_settings(
        {"name": "h100-under-2", "gpu": "H100", "below": 2.0, "notify": [hook], "resolved": True},
        {"name": "h100-dead-hook", "gpu": "H100", "below": 2.0, "notify": [dead], "resolved": True},
        {"name": "a100-under-1", "gpu": "A100", "below": 1.0, "notify": ["log"]},
        database=engine.url.render_as_string(hide_password=False),
    )
    market = Market(engine, settings)
    market.cycle(p1=[h100("a", 2.5)])
    market.cycle(p1=[h100("a", 1.9)])
    market.cycle(p1=[h100("a", 2.6)])
    market.cycle(p1=[h100("a", 1.8)])
    [failed] = send_test(engine, settings, "h100-dead-hook")
    assert failed.status == "failed"
    return settings


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from start_receiver()

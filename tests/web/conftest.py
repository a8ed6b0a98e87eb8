"""Web tests: a store filled through the real replay path, the app on it, a test client."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from db.engine import make_engine
from db.migrate import init_db
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
    """Every bundled recording replayed once, then one provider failing (a changed page)."""
    url = f"sqlite:///{tmp / 'tracker.db'}"
    engine = make_engine(url)
    init_db(engine)
    settings = make_settings(url)
    results = collect(engine, settings, replay=True)
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

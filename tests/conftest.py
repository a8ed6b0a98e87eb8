"""Shared fixtures: recorded payloads, databases (SQLite always, PostgreSQL when configured)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from db.engine import engine_reader, make_engine
from db.migrate import init_db

FIXTURES = Path(__file__).parent / "fixtures"
PG_ENV = "TRACKER_TEST_DATABASE_URL"


def fixture_path(relative: str) -> Path:
    return FIXTURES / relative


def load_json(relative: str) -> Any:
    return json.loads(fixture_path(relative).read_text())


def load_text(relative: str) -> str:
    return fixture_path(relative).read_text()


def recording_path(relative: str) -> Path:
    """A file of the bundled replay recordings (``tracker/recordings/<provider>/<file>``): where a
    reference fixture lives once, read by its parser tests and by replay alike."""
    from tracker.pipeline.replay import BUNDLED_RECORDINGS

    return BUNDLED_RECORDINGS / relative


def load_recording_json(relative: str) -> Any:
    return json.loads(recording_path(relative).read_text())


def load_recording_text(relative: str) -> str:
    return recording_path(relative).read_text()


def read(engine: Engine, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn`` (a read: ``db.reads`` or ``tracker.analysis``) on a ``Reader`` of one of ``engine``'s
    driver connections, given back afterwards, as every interface reads."""
    with engine_reader(engine) as reader:
        return fn(reader, *args, **kwargs)


def run_main(capsys: Any, *args: str) -> tuple[int, str, str]:
    """``gpu-tracker ARGS`` in this process through the real entry point (its error handling
    included): (exit code, stdout, stderr)."""
    import sys

    from tracker.cli import main

    old = sys.argv
    sys.argv = ["gpu-tracker", *args]
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = old
    out = capsys.readouterr()
    return code, out.out, out.err


def postgres_url() -> str | None:
    return os.environ.get(PG_ENV) or None


def _fresh_postgres_schema(url: str) -> tuple[str, Callable[[], None]]:
    """A throwaway schema on the test server, so tests never see each other's rows."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = make_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    admin.dispose()
    parsed = make_url(url if "+psycopg" in url else url.replace("postgresql://", "postgresql+psycopg://", 1))
    scoped = parsed.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)

    def drop() -> None:
        eng = make_engine(url)
        with eng.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        eng.dispose()

    return scoped, drop


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL: a SQLite file, and PostgreSQL when $TRACKER_TEST_DATABASE_URL is set."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tracker.db'}"
        return
    url = postgres_url()
    if not url:
        pytest.skip(f"PostgreSQL tests need {PG_ENV} (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    scoped, drop = _fresh_postgres_schema(url)
    try:
        yield scoped
    finally:
        drop()


#: Bundled recordings behind ``replay_store``: per-GPU (runpod), per-instance with long region
#: codes (azure, aws) and a page scraper (lambda).
REPLAY_STORE_PROVIDERS = ("runpod", "azure", "aws", "lambda")


def recordings_recorded_now(directory: Path, providers: list[str] | None = None) -> Path:
    """A copy of the bundled recordings (of ``providers``, default all) under ``directory``
    whose manifests say they were recorded now.

    For tests that need current prices from a replay (fresh providers, alerts that fire, a
    history ending now): the bundled recordings carry their real, older dates, which a replay
    keeps. Handmade samples (no date) are copied as they are.
    """
    import shutil

    from db.spans import utcnow
    from tracker.pipeline.replay import BUNDLED_RECORDINGS, recorded_providers

    out = directory / "recordings-now"
    now = utcnow().isoformat()
    for name in providers or recorded_providers():
        shutil.copytree(BUNDLED_RECORDINGS / name, out / name)
        manifest = out / name / "manifest.json"
        data = json.loads(manifest.read_text())
        if data.get("recorded") is not None:
            data["recorded"] = now
        manifest.write_text(json.dumps(data))
    return out


def replay_recordings_at(engine: Engine, directory: Path, times: Sequence[datetime]) -> None:
    """Every bundled recording replayed through the real collector into ``engine`` once at each of
    ``times`` (a copy under ``directory`` whose manifests say it was recorded then, the
    collector's clock set to it), each replay storing at least 20 providers."""
    from tracker.config.settings import Settings
    from tracker.pipeline import collect as collect_mod

    recordings = recordings_recorded_now(directory)
    clock = {"now": times[0]}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(collect_mod, "utcnow", lambda: clock["now"])
        cfg = Settings(database=engine.url.render_as_string(hide_password=False))
        for at in times:
            clock["now"] = at
            for manifest in recordings.glob("*/manifest.json"):
                data = json.loads(manifest.read_text())
                if data.get("recorded") is not None:
                    data["recorded"] = at.isoformat()
                manifest.write_text(json.dumps(data))
            results = collect_mod.collect(engine, cfg, replay=True, replay_dir=recordings)
            assert sum(r.ok for r in results) >= 20, [(r.provider, r.error_message) for r in results if not r.ok]


def _replayed_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, *, recorded_now: bool
) -> Iterator[str]:
    """A database URL filled by a replay of ``REPLAY_STORE_PROVIDERS``' real recordings, at their
    recording dates or (``recorded_now``) as if recorded now."""
    from tracker.config.settings import load_settings
    from tracker.pipeline.collect import collect
    from tracker.pipeline.store import open_store

    drop: Callable[[], None] | None = None
    tmp = tmp_path_factory.mktemp("replay")
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'tracker.db'}"
    else:
        server = postgres_url()
        if not server:
            pytest.skip(f"PostgreSQL tests need {PG_ENV} (e.g. postgresql://postgres@127.0.0.1:5432/test)")
        url, drop = _fresh_postgres_schema(server)
    settings = load_settings(None, database=url)
    eng = open_store(settings, url)
    names = list(REPLAY_STORE_PROVIDERS)
    replay_dir = recordings_recorded_now(tmp, names) if recorded_now else None
    try:
        results = collect(eng, settings, names, replay=True, replay_dir=replay_dir)
        assert {r.status for r in results} == {"ok"}, [(r.provider, r.error_message) for r in results]
    finally:
        eng.dispose()
    try:
        yield url
    finally:
        if drop is not None:
            drop()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def replay_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A store filled once per test module (and backend) by a replay of the real recordings at
    their recording dates; tests must only read it."""
    yield from _replayed_store(request, tmp_path_factory, recorded_now=False)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fresh_replay_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Like ``replay_store``, but the recordings say they were recorded now: one fresh day of history."""
    yield from _replayed_store(request, tmp_path_factory, recorded_now=True)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    init_db(eng)
    try:
        yield eng
    finally:
        eng.dispose()


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    """SQLite only, for tests that do not depend on the backend."""
    eng = make_engine(f"sqlite:///{tmp_path / 'tracker.db'}")
    init_db(eng)
    try:
        yield eng
    finally:
        eng.dispose()


def mock_transport(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.MockTransport:
    return httpx.MockTransport(handler)

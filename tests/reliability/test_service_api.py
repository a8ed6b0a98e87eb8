"""`gpu-tracker serve` as a real process, spoken to over real sockets: the token beyond loopback,
the Host check and the security headers (on SQLite and PostgreSQL)."""

from __future__ import annotations

import base64
import hmac
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import Engine

from tests.reliability.service_procs import cli, serve
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.web.security import (
    API_TOKEN_ENV,
    Security,
    host_name,
    is_loopback,
    security_for,
)

pytestmark = pytest.mark.slow

TOKEN = "test-api-token-3f9a1c7e5b2d4f60"


@pytest.fixture
def filled(engine: Engine, db_url: str) -> str:
    [result] = collect(engine, Settings(database=db_url), ["lambda"], replay=True)
    assert result.status == "ok"
    return db_url


@pytest.fixture
def server(filled: str, tmp_path: Path) -> Iterator[str]:
    with serve(tmp_path, filled, env={API_TOKEN_ENV: TOKEN}) as (base, _proc):
        yield base


def test_serving_beyond_loopback_without_a_token_is_a_one_line_error(filled: str) -> None:
    done = cli("--db", filled, "serve", "--host", "0.0.0.0", "--port", "1", timeout=30)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and API_TOKEN_ENV in lines[0] and "Traceback" not in done.stderr
    short = cli("--db", filled, "serve", "--host", "0.0.0.0", "--port", "1", env={API_TOKEN_ENV: "short"}, timeout=30)
    assert short.returncode == 2 and "too short" in short.stderr and "short'" not in short.stderr


def test_every_route_but_healthz_needs_the_token(server: str) -> None:
    good = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/api/prices", "/api/runs", "/metrics", "/openapi.json", "/", "/providers", "/static/style.css"):
        bare = httpx.get(server + path)
        assert bare.status_code == 401, path
        assert bare.json()["detail"].startswith("an API token is required")
        assert "realm=" in bare.headers["www-authenticate"]
        assert httpx.get(server + path, headers={"Authorization": f"Bearer {TOKEN}x"}).status_code == 401
        assert httpx.get(server + path, headers={"Authorization": TOKEN}).status_code == 401
        assert httpx.get(server + path, headers=good).status_code == 200, path
    assert httpx.get(server + "/api/prices").headers["www-authenticate"].startswith("Bearer")
    assert httpx.get(server + "/").headers["www-authenticate"].startswith("Basic")  # a browser asks for it
    prices = httpx.get(server + "/api/prices", headers=good).json()
    assert prices and {p["provider"] for p in prices} == {"lambda"}
    basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
    assert httpx.get(server + "/", headers={"Authorization": f"Basic {basic}"}).status_code == 200
    wrong = base64.b64encode(f"{TOKEN}:nope".encode()).decode()
    assert httpx.get(server + "/", headers={"Authorization": f"Basic {wrong}"}).status_code == 401
    health = httpx.get(server + "/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"


def test_host_header_must_name_this_server(server: str) -> None:
    good = {"Authorization": f"Bearer {TOKEN}"}
    port = server.rsplit(":", 1)[1]
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", ""):
        r = httpx.get(server + "/api/prices", headers={**good, "Host": host})
        assert r.status_code == 400, host
        assert "Host" in r.json()["detail"]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
        assert httpx.get(server + "/api/prices", headers={**good, "Host": host}).status_code == 200, host


def test_extra_allowed_hosts(filled: str, tmp_path: Path) -> None:
    with serve(tmp_path, filled, "--allowed-host", "tracker.example.org", "--allowed-host", "*.internal.example",
               env={API_TOKEN_ENV: TOKEN}) as (base, _):
        good = {"Authorization": f"Bearer {TOKEN}"}
        for host, status in (("tracker.example.org", 200), ("a.internal.example", 200), ("internal.example", 400),
                             ("other.example.org", 400)):
            assert httpx.get(base + "/api/gpus?gpu=H100", headers={**good, "Host": host}).status_code == status, host


def test_security_headers_on_every_response(server: str) -> None:
    good = {"Authorization": f"Bearer {TOKEN}"}
    for path, headers in (("/", good), ("/api/prices", good), ("/healthz", {}), ("/api/prices", {}),
                          ("/nothing-here", good), ("/static/plotly.min.js", good)):
        r = httpx.get(server + path, headers=headers)
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert r.headers["x-frame-options"] == "DENY", path
        assert r.headers["referrer-policy"] == "same-origin", path
        csp = r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "default-src 'self'" in csp, path
        assert TOKEN not in r.text and TOKEN not in str(r.headers)


def test_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    sec = Security(token=TOKEN)
    assert sec.authorised(f"Bearer {TOKEN}") and not sec.authorised("Bearer nope")
    assert calls == [(TOKEN.encode(), TOKEN.encode()), (b"nope", TOKEN.encode())]


def test_security_for_the_bind_address() -> None:
    settings = Settings()
    assert security_for(settings, "127.0.0.1", {}).token is None
    assert security_for(settings, "::1", {}).token is None
    with pytest.raises(Exception, match=API_TOKEN_ENV):
        security_for(settings, "0.0.0.0", {})
    with pytest.raises(Exception, match=API_TOKEN_ENV):
        security_for(settings, "192.0.2.10", {})
    bound = security_for(settings, "192.0.2.10", {API_TOKEN_ENV: TOKEN})
    assert bound.token == TOKEN and bound.allowed_hosts is not None and "192.0.2.10" in bound.allowed_hosts
    assert [is_loopback(h) for h in ("localhost", "127.0.0.5", "[::1]", "0.0.0.0", "example.org")] == [
        True, True, True, False, False]
    assert [host_name(h) for h in ("[::1]:8000", "Example.org:80", "::1", "x")] == ["::1", "example.org", "::1", "x"]

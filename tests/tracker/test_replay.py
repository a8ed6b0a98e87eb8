"""Replay: manifests map requests to recorded bodies; unknown requests fail loudly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from tracker.errors import ConfigError
from tracker.pipeline.replay import ReplayTransport, load_manifest


def write_recording(root: Path) -> Path:
    d = root / "demo"
    d.mkdir(parents=True)
    (d / "p1.json").write_text(json.dumps({"page": 1}))
    (d / "p2.json").write_text(json.dumps({"page": 2}))
    (d / "manifest.json").write_text(json.dumps({
        "source": "test", "recorded": "2026-01-01",
        "responses": [
            {"method": "GET", "url": "https://api.demo.test/skus", "query": {"pageToken": "abc"}, "file": "p2.json",
             "headers": {"Link": '<https://api.demo.test/skus?page=3>; rel="next"'}},
            {"method": "GET", "url": "https://api.demo.test/skus", "file": "p1.json"},
            {"method": "POST", "url": "https://api.demo.test/graphql", "body_contains": "gpuTypes", "file": "p1.json", "status": 201},
        ],
    }))
    return root


def get(transport: ReplayTransport, method: str, url: str, **kw: object) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport) as c:
            return await c.request(method, url, **kw)  # type: ignore[arg-type]

    return asyncio.run(go())


def test_requests_are_answered_from_the_manifest(tmp_path: Path) -> None:
    t = ReplayTransport.for_provider("demo", write_recording(tmp_path))
    assert get(t, "GET", "https://api.demo.test/skus?key=x").json() == {"page": 1}
    second = get(t, "GET", "https://api.demo.test/skus", params={"pageToken": "abc"})
    assert second.json() == {"page": 2}
    assert second.headers["Link"] == '<https://api.demo.test/skus?page=3>; rel="next"'  # recorded headers are served
    assert get(t, "POST", "https://api.demo.test/graphql", json={"query": "{ gpuTypes { id } }"}).status_code == 201
    missing = get(t, "POST", "https://api.demo.test/graphql", json={"query": "{ pods }"})
    assert missing.status_code == 404 and "no recording for POST" in missing.text
    assert len(t.requests) == 4


def test_a_bad_manifest_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"responses": [{"method": "GET"}]}))
    with pytest.raises(ConfigError, match="not a valid manifest"):
        load_manifest(tmp_path)

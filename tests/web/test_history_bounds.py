"""The API refuses a history grid larger than the documented bound with a JSON 422, and dates out
of range with a JSON 400; never a 500."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.web.conftest import get_json


def test_too_many_buckets_is_a_422_naming_the_bound(client: TestClient) -> None:
    body = get_json(client, "/api/history?gpu=H100&since=3y&every=hour", status=422)
    assert "10,000" in str(body)


def test_dates_out_of_range_are_a_clear_400(client: TestClient) -> None:
    for q in ("since=0001-01-01&every=week", "until=9999-01-01&since=30d", "since=99999999999d"):
        body = get_json(client, f"/api/history?gpu=H100&{q}", status=400)
        assert "Traceback" not in str(body)

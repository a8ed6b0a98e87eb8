"""The rental index on the dashboard: under each GPU of the overview, and as the headline of a GPU
page beside the cheapest offer, the same values /api/index answers (replayed store of
tests/web/conftest.py, recorded now)."""

from __future__ import annotations

import re

from tests.web.conftest import TestClient, get_json
from tracker.web.pages import money


def newest(client: TestClient, gpu: str) -> dict[str, object]:
    rows = [r for r in get_json(client, f"/api/index?gpu={gpu}&since=7d")["rows"] if r["gpu"] == gpu]
    assert rows
    return rows[-1]


def test_the_overview_shows_each_gpus_index_with_its_iqr_and_providers(client: TestClient) -> None:
    html = client.get("/").text
    row = newest(client, "H100-SXM")
    cell = re.search(r'data-gpu-index="H100-SXM">(.*?)</div>', html, re.S)
    assert cell, "no index under H100-SXM"
    text = re.sub(r"<[^>]+>", "", cell.group(1))
    assert f"index {money(row['index'])} · IQR {money(row['q1'])}–{money(row['q3'])} · {row['providers']} providers" in text


def test_a_gpu_page_heads_with_the_index_beside_the_cheapest_offer(client: TestClient) -> None:
    html = client.get("/gpu/H100").text
    headline = re.search(r'<ul id="index-headline".*?</ul>', html, re.S)
    assert headline
    item = re.search(r'<li data-gpu="H100-SXM">(.*?)</li>', headline.group(0), re.S)
    assert item
    text = " ".join(re.sub(r"<[^>]+>", "", item.group(1)).split())
    row = newest(client, "H100-SXM")
    cheapest = min(r["price_per_gpu_hour"] for r in get_json(client, "/api/prices?gpu=H100-SXM")
                   if r["currency"] == "USD")
    assert f"rental index {money(row['index'])} /GPU-h" in text and f"{row['providers']} providers" in text
    assert f"cheapest now {money(cheapest)}" in text

"""Stock as each provider states it, read from its bundled fixture or replay recording: whether an
offer is available, the GPUs free now (``available_count``) where a count is given, and the
provider's own stock word (``extra["stock"]``) where it gives a level. An offer whose provider
says nothing stays unknown (``None``), never unavailable.

The expected values are read off the payloads by hand (a count of free units times the GPUs of
one unit where the provider counts instances: gpu.ai's 8-GPU offering with 2 free is 16 GPUs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from scrapers.base import STOCK_LEVEL, ParseError, ScrapedOffer
from scrapers.registry import all_scrapers
from tests.conftest import load_json
from tests.scrapers.contract import replayed_payload
from tests.scrapers.test_verda import raw_payload as verda_api_payload

#: (available, available_count, stock word or "-" when the provider gives none) of chosen offers,
#: keyed by (sku, region, kind); then how many offers fall under each (available, count stated).
Expected = dict[tuple[str, str, str], tuple[bool | None, int | None, str | None]]

CASES: dict[str, tuple[Callable[[], Any], Expected, dict[tuple[bool | None, bool], int]]] = {
    "runpod": (
        lambda: load_json("runpod/runpod_graphql_gpuTypes_anonymous_2026_reference.json"),
        {("NVIDIA H100 80GB HBM3:secure", "", "on_demand"): (True, None, "High"),
         ("NVIDIA H100 80GB HBM3:community", "", "community"): (True, None, "Low"),
         ("NVIDIA GeForce RTX 4090:secure", "", "on_demand"): (False, None, None)},  # stockStatus null: none in stock
        {(True, False): 8, (False, False): 1},
    ),
    "scaleway": (
        lambda: replayed_payload("scaleway"),
        {("H100-1-80G", "fr-par-2", "on_demand"): (True, None, "available"),
         ("H100-2-80G", "fr-par-2", "on_demand"): (True, None, "scarce"),
         ("H100-SXM-2-80G", "fr-par-2", "on_demand"): (False, None, "shortage")},
        {(True, False): 6, (False, False): 4, (None, False): 6},  # zones without a stock answer: unknown
    ),
    "verda": (
        verda_api_payload,
        {("2A6000.20V", "FIN-01", "on_demand"): (False, None, "-"),
         ("2A6000.20V", "FIN-01", "spot"): (True, None, "-"),
         ("1V100.6V", "FIN-01", "on_demand"): (True, None, "-")},
        {(True, False): 3, (False, False): 3},
    ),
    "akash": (
        lambda: replayed_payload("akash"),
        {("nvidia-a100-80gi-sxm4", "", "community"): (True, 6, "-")},
        {(True, True): 1},
    ),
    "voltagepark": (
        lambda: replayed_payload("voltagepark"),
        {("h100-sxm5-80gb:ethernet", "5e0c2b7a-91d4-4f3e-b6a8-2c7d0e94f1a3", "on_demand"): (False, 0, "-"),
         ("h100-sxm5-80gb:infiniband", "5e0c2b7a-91d4-4f3e-b6a8-2c7d0e94f1a3", "on_demand"): (True, 16, "-"),
         ("h100-sxm5-80gb:ethernet", "b71f4d08-3c6e-4a92-8e15-d9a0f6c2e7b4", "on_demand"): (True, 8, "-")},
        {(True, True): 2, (False, True): 2},
    ),
    "vastai": (
        lambda: replayed_payload("vastai"),
        {("31137636", "Oregon, US", "on_demand"): (True, 8, "-"),
         ("31137636", "Oregon, US", "spot"): (True, 8, "-"),
         ("31140999", "Ontario, CA", "on_demand"): (True, 1, "-")},
        {(True, True): 168},  # every listing the rentable search returns: its GPUs are free
    ),
    "lium": (
        lambda: replayed_payload("lium"),
        {("00000000-0000-0000-0000-00000000a001", "US", "on_demand"): (True, 8, "-"),
         ("00000000-0000-0000-0000-00000000a002", "FI", "on_demand"): (True, 6, "-"),
         ("00000000-0000-0000-0000-00000000a006", "US", "on_demand"): (False, 0, "-")},
        {(True, True): 11, (False, True): 2},
    ),
    "gpuai": (
        lambda: replayed_payload("gpuai"),
        {("f0e1d2c30001", "eu-west", "community"): (True, 3, "-"),  # 1 GPU, 3 free
         ("f0e1d2c30004", "us-east", "on_demand"): (False, 0, "-"),
         ("f0e1d2c30005", "us-east", "community"): (True, 16, "-"),  # 8 GPUs, 2 free
         ("f0e1d2c30006", "ca-central", "on_demand"): (True, 8, "-")},  # 8 GPUs, 1 free
        {(True, True): 17, (False, True): 2},
    ),
    "packetai": (
        lambda: replayed_payload("packetai"),
        {("NVIDIA B200:dedicated:4x", "Los Angeles, US (LA-1)", "on_demand"): (True, None, "in_stock"),
         ("NVIDIA B200:dedicated:8x", "Los Angeles, US (LA-1)", "on_demand"): (False, None, "out_of_stock")},
        {(True, False): 19, (False, False): 12},
    ),
    "gmicloud": (
        lambda: replayed_payload("gmicloud"),
        {("nvidia-h100-gpu", "", "on_demand"): (True, None, "-"),
         ("nvidia-b200-gpu", "", "on_demand"): (True, None, "limited"),
         ("nvidia-gb300", "", "on_demand"): (False, None, "-")},  # pre-order: not rentable yet
        {(True, False): 4, (False, False): 1},
    ),
    "latitude": (
        lambda: replayed_payload("latitude"),
        {("g3-h100-small", "United States", "on_demand"): (True, None, "medium"),
         ("g3-h100-small", "Brazil", "on_demand"): (False, None, "unavailable"),
         ("g3-h100-large", "United States", "on_demand"): (True, None, "low")},
        {(True, False): 9, (False, False): 4},
    ),
    "hyperbolic": (
        lambda: replayed_payload("hyperbolic"),
        {("h200-sxm5-1x-virtual-machine-ethernet-normal", "us-central-1", "on_demand"): (False, 0, "-"),
         ("h100-pcie-1x-virtual-machine-ethernet-normal", "ca-central-1", "on_demand"): (True, 3, "-"),
         ("h200-sxm5-8x-bare-metal-infiniband", "us-west-2", "on_demand"): (True, 8, "-"),  # one 8-GPU option
         ("h100-sxm5-1x-virtual-machine-ethernet-normal", "us-west-2", "on_demand"): (None, None, "-")},
        {(True, True): 2, (False, True): 1, (None, False): 9},  # no totalAvailable: unknown
    ),
    "sesterce": (
        lambda: replayed_payload("sesterce"),
        {("H100_sxm5@AZ_17", "austin-usa-1", "on_demand"): (True, None, "-"),
         ("H100_sxm5@AZ_17", "us-midwest-2", "on_demand"): (False, None, "-")},
        {(True, False): 6, (False, False): 4},
    ),
    "cudo": (
        lambda: replayed_payload("cudo"),
        {("cascade-lake:nvidia-rtx-3080", "br-saopaulo-1", "on_demand"): (True, 24, "-"),
         ("epyc-rome-rtx-a5000:nvidia-rtx-a5000", "no-luster-1", "on_demand"): (True, 7, "-")},
        {(True, True): 2},
    ),
    "jarvislabs": (
        lambda: load_json("jarvislabs/server_meta_handmade.json"),  # the keyed API: the page states no stock
        {("L4/container", "india-noida-01", "on_demand"): (True, 3, "-"),
         ("L4/container", "india-noida-01", "spot"): (True, 2, "-")},
        {(True, True): 11},
    ),
    "digitalocean": (lambda: replayed_payload("digitalocean"), {}, {(None, False): 13}),  # the page states no stock
    "shadeform": (  # an aggregator: launchable in a region now, per cloud it names
        lambda: replayed_payload("shadeform"),
        {("lambda:H100x8", "us-west-1", "on_demand"): (True, None, "-"),
         ("lambda:H100x8", "us-east-1", "on_demand"): (False, None, "-"),
         ("crusoe:L40S", "", "on_demand"): (None, None, "-")},  # a type listed without regions says nothing
        {(True, False): 7, (False, False): 2, (None, False): 1},
    ),
    "computepulse": (
        lambda: replayed_payload("computepulse"),
        {("vastai:A100 SXM:1x", "us", "on_demand"): (True, None, "-"),
         ("hotaisle:MI300X:1x", "", "on_demand"): (None, None, "-")},  # available null: unknown
        {(True, False): 9, (None, False): 8},
    ),
}


def offers_of(name: str) -> list[ScrapedOffer]:
    load = CASES[name][0]
    return all_scrapers()[name](env={}).parse(load())


@pytest.mark.parametrize("name", sorted(CASES))
def test_stock_is_read_as_the_provider_states_it(name: str) -> None:
    offers = offers_of(name)
    by_key = {(o.sku, o.region, o.kind): o for o in offers}
    for key, (available, count, word) in CASES[name][1].items():
        o = by_key[key]
        assert (o.available, o.available_count) == (available, count), key
        assert o.extra.get(STOCK_LEVEL, "-") == word, key
    assert Counter((o.available, o.available_count is not None) for o in offers) == CASES[name][2]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_count_always_agrees_with_available(name: str) -> None:
    for o in offers_of(name):
        assert o.available_count is None or o.available is (o.available_count > 0)


def test_vastai_listings_that_are_not_rentable_have_no_free_gpus() -> None:
    offers = all_scrapers()["vastai"](env={}).parse(load_json("vastai/vast_search_offers_raw_2025-01-17.json"))
    assert sorted({(o.sku, o.available, o.available_count) for o in offers}) == [
        ("16014632", True, 1), ("16014633", False, 0), ("16014636", False, 0), ("16014638", False, 0)]


@pytest.mark.parametrize(("count", "available", "message"), [
    (-1, None, "whole number >= 0"), (2.5, True, "whole number >= 0"), (True, True, "whole number >= 0"),
    (0, True, "above zero"), (3, False, "above zero"), (3, None, "above zero"),
])
def test_a_count_that_is_no_count_or_disagrees_is_refused(count: Any, available: bool | None, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        ScrapedOffer(provider="p", sku="s", gpu_raw="H100", gpu_count=1, price_per_hour=2.0, available=available,
                     available_count=count)

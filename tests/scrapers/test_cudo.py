"""Cudo Compute: VM machine-type GPU prices (handmade sample) and the live request shape."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import ScrapedOffer
from scrapers.cudo import MACHINE_TYPES_URL, CudoScraper
from tests.conftest import load_json
from tests.scrapers.contract import ProviderContract, run_fetch

# HANDMADE: gpuhunt's test_cudo.py `machine_types` literal @ ed6d79e2 (2 machine types), the bare
# machineTypes list without its {"machineTypes": ...} envelope. Values plausible, not recorded.
HANDMADE = "cudo/cudo_machine_types_handmade.json"


def items() -> list[dict[str, Any]]:
    return load_json(HANDMADE)


def pick(offers: list[ScrapedOffer], region: str) -> ScrapedOffer:
    [match] = [o for o in offers if o.region == region]
    return match


class TestCudo(ProviderContract):
    scraper_cls = CudoScraper
    handmade = True  # the sample is handmade, not a recorded response

    def load_raw(self) -> Any:
        return {"machineTypes": items()}

    def broken_payloads(self) -> list[Any]:
        first = items()[0]
        no_price = {k: v for k, v in first.items() if k != "gpuPriceHr"}
        no_dc = {k: v for k, v in first.items() if k != "dataCenterId"}
        no_gpu_keys = {k: v for k, v in first.items() if k not in ("gpuModel", "gpuModelId")}
        cpu_only = {**first, "gpuModel": "", "gpuModelId": ""}
        return [
            {},
            {"machineTypes": []},
            {"machineTypes": {"0": first}},
            {"error": "unauthenticated"},
            [no_price],
            [no_dc],
            [no_gpu_keys],
            [cpu_only],
            [first, "x"],
        ]

    def test_a5000_in_norway(self, offers: list[ScrapedOffer]) -> None:
        o = pick(offers, "no-luster-1")
        assert o.sku == "epyc-rome-rtx-a5000:nvidia-rtx-a5000"
        assert (o.gpu_raw, o.gpu_count, o.kind, o.price_per_hour) == ("RTX A5000", 1, "on_demand", 0.52)
        assert (o.country, o.currency, o.available) == ("NO", "USD", True)
        assert o.gpu_memory_gb is None and o.vcpus is None and o.ram_gb is None
        assert o.extra["gpu_component_only"] is True
        assert o.extra["price_per_vcpu_hour"] == 0.0021
        assert o.extra["price_per_memory_gib_hour"] == 0.0034
        assert o.extra["price_per_storage_gib_hour"] == 0.000107
        assert o.extra["price_per_ipv4_hour"] == 0.0035
        assert (o.extra["gpus_free"], o.extra["gpus_free_total"]) == (4, 7)
        assert o.extra["renewable_energy"] is False

    def test_rtx3080_in_brazil(self, offers: list[ScrapedOffer]) -> None:
        o = pick(offers, "br-saopaulo-1")
        assert (o.sku, o.gpu_raw, o.price_per_hour, o.country) == ("cascade-lake:nvidia-rtx-3080", "RTX 3080", 0.05, "BR")
        assert o.extra["max_vcpu_per_gpu"] == 13

    def test_bare_list_parses_like_the_envelope(self) -> None:
        scraper = CudoScraper(env={})
        assert scraper.parse(items()) == scraper.parse({"machineTypes": items()})

    def test_cpu_only_zero_price_and_no_free_gpu(self) -> None:
        # Test-built variants of the handmade records.
        a5000, rtx3080 = items()[1], items()[0]
        cpu_only = {**copy.deepcopy(rtx3080), "machineType": "epyc-milan", "gpuModel": "", "gpuModelId": "",
                    "gpuPriceHr": {"value": "0"}}
        unsold = {**copy.deepcopy(rtx3080), "dataCenterId": "se-smedjebacken-1", "gpuPriceHr": {"value": "0.000000"}}
        full = {**copy.deepcopy(a5000), "dataCenterId": "gb-bournemouth-1", "maxGpuFree": 0,
                "gpuPriceHr": {"value": "0.61", "currency": "usd"}}
        offers = CudoScraper(env={}).parse({"machineTypes": [cpu_only, unsold, full, a5000]})
        assert sorted(o.region for o in offers) == ["gb-bournemouth-1", "no-luster-1"]
        gb = pick(offers, "gb-bournemouth-1")
        assert (gb.price_per_hour, gb.available, gb.country, gb.currency) == (0.61, False, "GB", "USD")


def test_fetch_gets_machine_types_anonymously() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"machineTypes": items()})

    raw = run_fetch(CudoScraper(env={}), httpx.MockTransport(handler))
    [request] = seen
    assert request.method == "GET"
    assert str(request.url) == MACHINE_TYPES_URL  # no data-centre filter: all of them
    assert "authorization" not in request.headers
    assert len(CudoScraper(env={}).parse(raw)) == 2


def test_fetch_sends_the_optional_key_as_bearer() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"machineTypes": items()})

    run_fetch(CudoScraper(env={"CUDO_API_KEY": "cudo-123"}), httpx.MockTransport(handler))
    assert seen[0].headers["authorization"] == "Bearer cudo-123"
    assert "cudo-123" not in str(seen[0].url)


def test_key_is_optional() -> None:
    scraper = CudoScraper(env={})
    scraper.check_credentials()  # the listing is public: no MissingCredentials
    assert scraper.credentials == () and scraper.optional_credentials == ("CUDO_API_KEY",)


def test_unauthorized_is_a_fetch_error_without_the_key() -> None:
    from scrapers.base import FetchError

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"code": 16, "message": "unauthenticated"})

    with pytest.raises(FetchError, match="cudo: GET https://rest.compute.cudo.org/v1/vms/machine-types -> HTTP 401") as info:
        run_fetch(CudoScraper(env={"CUDO_API_KEY": "cudo-secret"}), httpx.MockTransport(handler))
    assert "cudo-secret" not in str(info.value)

"""OCI scraper: cetools price list (real, trimmed) + Cost Estimator shapes (real excerpt, CPU shapes only)."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from scrapers.base import UNREADABLE_PRICE, FetchError
from scrapers.oci import PRODUCTS_URL, SHAPES_URL, OciScraper
from tests.conftest import load_json
from tests.scrapers.contract import NamedOffer, ProviderContract, run_fetch

PRODUCTS = "oci/oci_cetools_products_usd_2024-01_trimmed.json"
SHAPES = "oci/oci_cost_estimator_shapes_excerpt.json"


def raw(shapes: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"products": [load_json(PRODUCTS)], "shapes": shapes if shapes is not None else load_json(SHAPES)}


def gpu_shape(name: str, part: str, gpus: int, ocpus: int, **over: Any) -> dict[str, Any]:
    """A GPU shape built by the test in the real shapes.json layout (the real excerpt has no GPU shape).

    The layout (one product, the GPU part, typed "ocpu" with the OCPU count) follows gpuhunt's reading
    of the real file; counts are the test's own.
    """
    shape = copy.deepcopy(load_json(SHAPES)["items"][0])
    shape.update(
        name=name,
        gpuQty=gpus,
        gpuMemoryQty=80 * gpus,
        bundleMemoryQty=2048,
        allowPreemptible=True,
        processorType={"value": "intel"},
        shapeType={"value": "bm"},
        subType={"value": "gpu"},
        products=[{"partNumber": part, "qty": ocpus, "type": {"value": "ocpu"}}],
    )
    shape.update(over)
    return shape


class TestOci(ProviderContract):
    scraper_cls = OciScraper
    named_offer = NamedOffer("Compute - GPU - L40S", 1, "on_demand", "", 3.5)
    min_offers = 7

    def load_raw(self) -> Any:
        return raw()

    def broken_payloads(self) -> list[Any]:
        products = load_json(PRODUCTS)
        no_gpu = {"items": [i for i in products["items"] if i["metricName"] != "GPU Per Hour"]}
        no_price = copy.deepcopy(products)
        for item in no_price["items"]:
            item.pop("currencyCodeLocalizations")
        no_metric = copy.deepcopy(products)
        no_metric["items"][0].pop("metricName")
        return [
            {},
            {"products": [{"items": []}], "shapes": load_json(SHAPES)},
            {"products": [{"data": products["items"]}], "shapes": load_json(SHAPES)},
            {"products": [no_gpu], "shapes": load_json(SHAPES)},
            {"products": [no_price], "shapes": load_json(SHAPES)},
            {"products": [no_metric], "shapes": load_json(SHAPES)},
            {"products": [products]},  # shapes missing
            {"products": [products], "shapes": {"shapes": []}},
        ]

    def test_every_gpu_part_is_one_offer_per_gpu(self, offers: list[Any]) -> None:
        assert {o.sku for o in offers} == {"B88517", "B88518", "B89734", "B92740", "B95907", "B95909", "B98415"}
        for o in offers:
            assert o.gpu_count == 1 and o.kind == "on_demand" and o.region == "" and o.currency == "USD"
            assert o.gpu is None

    def test_h100_part(self, offers: list[Any]) -> None:
        h100 = next(o for o in offers if o.sku == "B98415")
        assert h100.gpu_raw == "Oracle Cloud Infrastructure - Compute - GPU - H100"
        assert h100.price_per_hour == 10
        assert h100.extra["part_number"] == "B98415"

    def test_gpu_raw_is_the_exact_display_name(self, offers: list[Any]) -> None:
        by = {o.sku: o for o in offers}
        assert by["B95909"].gpu_raw == "Compute  - GPU - A10"  # Oracle's double space kept
        assert by["B95909"].price_per_hour == 2
        assert by["B92740"].gpu_raw == "Compute - GPU - E3"
        assert by["B92740"].price_per_hour == 3.05
        assert by["B95907"].gpu_raw == "Compute - GPU - A100 - v2"
        assert by["B95907"].price_per_hour == 4
        assert by["B88517"].gpu_raw == "Compute - Bare Metal GPU Standard - X7"
        assert by["B88517"].price_per_hour == 1.275
        assert by["B89734"].price_per_hour == 2.95

    def test_cpu_shapes_are_not_offers(self, offers: list[Any]) -> None:
        assert not any(o.sku.startswith("BM.") for o in offers)


class TestShapeJoin:
    def test_a_gpu_shape_replaces_its_part_with_the_whole_instance(self) -> None:
        shapes = load_json(SHAPES)
        shapes["items"].append(gpu_shape("BM.GPU.H100.8", "B98415", gpus=8, ocpus=112))
        offers = OciScraper(env={}).parse(raw(shapes))
        skus = {o.sku for o in offers}
        assert "BM.GPU.H100.8" in skus and "B98415" not in skus
        shape = next(o for o in offers if o.sku == "BM.GPU.H100.8")
        assert shape.gpu_raw == "Oracle Cloud Infrastructure - Compute - GPU - H100"
        assert shape.gpu_count == 8
        assert shape.price_per_hour == 80  # 8 GPUs x $10, the OCPU count is not multiplied in
        assert shape.price_per_gpu_hour == 10
        assert shape.gpu_memory_gb == 80
        assert shape.vcpus == 224 and shape.ram_gb == 2048
        assert shape.extra == {"part_number": "B98415", "preemptible_allowed": True, "ocpus": 112}

    def test_other_priced_parts_of_a_shape_are_added(self) -> None:
        shapes = load_json(SHAPES)
        shape = gpu_shape("BM.GPU.TEST.2", "B95909", gpus=2, ocpus=30)
        shape["products"].append({"partNumber": "B98204", "qty": 2, "type": {"value": "disk"}})
        shape["products"].append({"partNumber": "NOT-LISTED", "qty": 1, "type": {"value": "memory"}})
        shapes["items"].append(shape)
        offer = next(o for o in OciScraper(env={}).parse(raw(shapes)) if o.sku == "BM.GPU.TEST.2")
        assert offer.price_per_hour == pytest.approx(2 * 2 + 2 * 0.0612)
        assert offer.extra["unpriced_parts"] == ["NOT-LISTED"]

    def test_an_unreadable_price_quarantines_the_offers_that_use_it_instead_of_pricing_them_without_it(self) -> None:
        products = load_json(PRODUCTS)
        for item in products["items"]:
            if item["partNumber"] in ("B98204", "B88517"):
                item["currencyCodeLocalizations"][0]["prices"][0]["value"] = "call us"
        shapes = load_json(SHAPES)
        shape = gpu_shape("BM.GPU.TEST.2", "B95909", gpus=2, ocpus=30)
        shape["products"].append({"partNumber": "B98204", "qty": 2, "type": {"value": "disk"}})
        shapes["items"].append(shape)
        offers = {o.sku: o for o in OciScraper(env={}).parse({"products": [products], "shapes": shapes})}
        for sku, part in (("BM.GPU.TEST.2", "B98204"), ("B88517", "B88517")):  # a component, a GPU part
            assert offers[sku].price_per_hour is None
            assert offers[sku].extra[UNREADABLE_PRICE] == f"price field prices.value of part {part} holds 'call us', not a number"
        others = [o for sku, o in offers.items() if sku not in ("BM.GPU.TEST.2", "B88517")]
        assert others and all(o.price_per_hour and UNREADABLE_PRICE not in o.extra for o in others)

    def test_hidden_shapes_and_shapes_without_gpu_count_fall_back_to_the_part(self) -> None:
        shapes = load_json(SHAPES)
        shapes["items"].append(gpu_shape("BM.GPU.H100.8", "B98415", gpus=8, ocpus=112, hidden=True))
        shapes["items"].append(gpu_shape("VM.GPU.A10.1", "B95909", gpus=1, ocpus=15, gpuQty=None))
        skus = {o.sku for o in OciScraper(env={}).parse(raw(shapes))}
        assert {"B98415", "B95909"} <= skus
        assert not skus & {"BM.GPU.H100.8", "VM.GPU.A10.1"}

    def test_arm_shapes_get_no_vcpu_guess(self) -> None:
        shapes = load_json(SHAPES)
        shapes["items"].append(gpu_shape("BM.GPU.X.1", "B98415", gpus=1, ocpus=72, processorType={"value": "arm"}))
        offer = next(o for o in OciScraper(env={}).parse(raw(shapes)) if o.sku == "BM.GPU.X.1")
        assert offer.vcpus is None and offer.extra["ocpus"] == 72


class TestFetch:
    def test_requests_price_list_in_usd_and_the_shapes(self) -> None:
        seen: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            if request.url.host == "www.oracle.com":
                return httpx.Response(200, json=load_json(SHAPES))
            return httpx.Response(200, json=load_json(PRODUCTS))

        scraper = OciScraper(env={})
        fetched = run_fetch(scraper, httpx.MockTransport(handler))
        assert [r.method for r in seen] == ["GET", "GET"]
        assert str(seen[0].url.copy_with(query=None)) == PRODUCTS_URL
        assert dict(seen[0].url.params) == {"currencyCode": "USD"}
        assert "authorization" not in seen[0].headers
        assert str(seen[1].url) == SHAPES_URL
        assert len(scraper.parse(fetched)) == 7

    def test_follows_ords_next_links(self) -> None:
        items = load_json(PRODUCTS)["items"]
        next_url = PRODUCTS_URL + "?currencyCode=USD&offset=8"

        def handler(request: httpx.Request) -> httpx.Response:
            if request.url.host == "www.oracle.com":
                return httpx.Response(200, json=load_json(SHAPES))
            if request.url.params.get("offset") == "8":
                return httpx.Response(200, json={"items": items[8:], "hasMore": False})
            return httpx.Response(
                200, json={"items": items[:8], "hasMore": True, "links": [{"rel": "next", "href": next_url}]}
            )

        scraper = OciScraper(env={})
        fetched = run_fetch(scraper, httpx.MockTransport(handler))
        assert len(fetched["products"]) == 2
        assert len(scraper.parse(fetched)) == 7

    def test_has_more_without_a_next_link_is_an_error(self) -> None:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json={"items": [], "hasMore": True, "links": []})

        with pytest.raises(FetchError, match="oci: .*next link"):
            run_fetch(OciScraper(env={}), httpx.MockTransport(handler))

    def test_no_credentials_needed(self) -> None:
        OciScraper(env={}).check_credentials()
        assert OciScraper.credentials == ()


PRODUCTS_2026 = "oci/oci_cetools_products_gpu_items_2026-10-01.json"


class TestPriceList2026:
    """The real 2026 price list (GPU-related items only) beside the real shapes excerpt."""

    @pytest.fixture()
    def offers(self) -> list[Any]:
        return OciScraper(env={}).parse({"products": [load_json(PRODUCTS_2026)], "shapes": load_json(SHAPES)})

    def test_cloud_at_customer_and_resource_commit_parts_are_not_offers(self, offers: list[Any]) -> None:
        skus = {o.sku for o in offers}
        assert not skus & {"B110965", "B111454", "B111455"}  # Cloud@Customer L40S, incl. the $0.60 Resource Commit
        assert not any("Cloud@Customer" in o.gpu_raw or "Commit" in o.gpu_raw for o in offers)
        assert not any(o.price_per_gpu_hour < 1 for o in offers)

    def test_public_parts_keep_their_list_prices(self, offers: list[Any]) -> None:
        by = {o.sku: o for o in offers}
        assert by["B109479"].gpu_raw == "Compute - GPU - L40S" and by["B109479"].price_per_hour == 3.5
        assert by["B112237"].price_per_hour == 15  # B300
        assert by["B112140"].price_per_hour == 18  # GB300
        assert by["B111758"].price_per_hour == 8.6  # MI355X
        assert by["B98415"].price_per_hour == 10  # H100
        # 26 items: 3 VMware node commits and 2 per-day parts are other metrics, 3 are Cloud@Customer
        assert len(offers) == 18

    def test_per_day_and_node_parts_are_not_gpu_hours(self, offers: list[Any]) -> None:
        skus = {o.sku for o in offers}
        assert not skus & {"B108806", "B108807", "B108808", "B109493", "B111463"}

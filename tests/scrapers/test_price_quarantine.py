"""One offer's bad price or GPU count is quarantined with a reason naming the field, not fatal.

Each case takes the provider's bundled fixture (tests/fixtures, through its provider test's
``load_raw``), spoils the price (or GPU count) of one offer in place, then runs the real parse,
normalise and validate stages: that offer is quarantined with a one-line reason that names the
field, every other offer comes out as before. On a pricing page one offer is one table row or
card: one real price cell is replaced, and the reason names its column and row. AWS's offer
files are read from disk, so their case writes the spoiled copy of the real excerpt to a file.
The collector then stores the rest (checked on both backends at the end). Spoiling the same
field in *every* offer (or a page's price column in every row) is a changed payload, not a bad
row: a ``ParseError`` naming the field.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db import reads
from db.models import Quarantine, ScrapeRun
from db.reader import in_transaction
from scrapers.aws import AwsScraper
from scrapers.base import UNREADABLE_PRICE, ParseError, Scraper, read_count, read_price
from scrapers.registry import all_scrapers
from tests.scrapers import (
    test_akash,
    test_aws,
    test_aws_offer_file,
    test_aws_spot,
    test_azure,
    test_coreweave,
    test_crusoe,
    test_cudo,
    test_datacrunch,
    test_digitalocean,
    test_hyperbolic,
    test_hyperstack,
    test_jarvislabs,
    test_lambda_,
    test_linode,
    test_modal,
    test_nebius,
    test_oci,
    test_paperspace,
    test_runpod,
    test_scaleway,
    test_tensordock,
    test_vastai,
    test_verda,
    test_voltagepark,
    test_vultr,
)
from tests.scrapers.contract import ProviderContract, replayed_payload
from tracker.config.settings import Settings
from tracker.pipeline.collect import collect
from tracker.pipeline.normalise import normalise
from tracker.pipeline.validate import validate

MISSING = object()
#: A corruptor sets (or, for ``MISSING``, deletes) one offer's field in the payload and returns the
#: field's path as the reason must name it.
Corrupt = Callable[[Any, Any], str]


def put(node: dict[str, Any], key: str, bad: Any) -> None:
    if bad is MISSING:
        del node[key]
    else:
        node[key] = bad


def _akash(raw: Any, bad: Any) -> str:
    put(raw["models"][0]["price"], "med", bad)
    return "models[0].price.med"


def _aws(raw: Any, bad: Any) -> str:
    location, rows = next(iter(raw.items()))
    region = rows["regions"][location]
    key = next(iter(region))
    put(region[key], "price", bad)
    return f"regions[{location!r}][{key!r}].price"


def _aws_spot(raw: Any, bad: Any) -> str:
    groups = raw["config"]["regions"][0]["instanceTypes"]
    g = next(g for g, group in enumerate(groups) if group["type"] == "gpuCurrentGen")
    s = next(s for s, size in enumerate(groups[g]["sizes"]) if size["size"] == "p5.48xlarge")
    put(groups[g]["sizes"][s]["valueColumns"][0]["prices"], "USD", bad)
    return f"config.regions[0].instanceTypes[{g}].sizes[{s}].valueColumns[0].prices.USD"


def _azure(raw: Any, bad: Any) -> str:
    put(raw[0]["Items"][0], "retailPrice", bad)
    return "payload[0].Items[0].retailPrice"


def _cudo(raw: Any, bad: Any) -> str:
    i = next(i for i, m in enumerate(raw["machineTypes"]) if m.get("gpuModel"))
    put(raw["machineTypes"][i]["gpuPriceHr"], "value", bad)
    return f"machineTypes[{i}].gpuPriceHr.value"


def _digitalocean(raw: Any, bad: Any) -> str:
    i = next(i for i, s in enumerate(raw[0]["sizes"]) if s.get("gpu_info"))
    put(raw[0]["sizes"][i], "price_hourly", bad)
    return f"payload[0].sizes[{i}].price_hourly"


def _gcp(raw: Any, bad: Any) -> str:
    """GCP's money is ``{units, nanos}``: the ``units`` of the first SKU's price is spoiled."""
    sku = raw[0]["skus"][0]
    tiers = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"]
    put(tiers[-1]["unitPrice"], "units", bad)
    return f"sku {sku['skuId']} pricingInfo[0].pricingExpression.tieredRates[{len(tiers) - 1}].unitPrice"


def _hyperbolic(raw: Any, bad: Any) -> str:
    put(raw[0], "costPerHourCents", bad)
    return "payload[0].costPerHourCents"


def _jarvislabs(raw: Any, bad: Any) -> str:
    put(raw["server_meta"][0], "price_per_hour", bad)
    return "server_meta[0].price_per_hour"


def _linode(raw: Any, bad: Any) -> str:
    i = next(i for i, p in enumerate(raw[0]["data"]) if p["gpus"])
    put(raw[0]["data"][i]["price"], "hourly", bad)
    return f"payload[0].data[{i}].price.hourly"


def _oci(raw: Any, bad: Any) -> str:
    """The price of a GPU part that is offered on its own (no shape uses it)."""
    alone = next(o.sku for o in all_scrapers()["oci"](env={}).parse(raw) if o.extra.get("per") == "GPU")
    for page in raw["products"] if isinstance(raw["products"], list) else [raw["products"]]:
        for item in page["items"]:
            if item.get("partNumber") == alone:
                put(item["currencyCodeLocalizations"][0]["prices"][0], "value", bad)
    return f"prices.value of part {alone}"


def _runpod(raw: Any, bad: Any) -> str:
    put((raw if isinstance(raw, list) else raw["data"]["gpuTypes"])[0], "securePrice", bad)
    return "data.gpuTypes[0].securePrice"


def _scaleway_servers(raw: Any) -> tuple[str, dict[str, Any]]:
    """The first zone listing a GPU type, and its first page's types."""
    for zone, entry in raw.items():
        pages = entry["servers"] if isinstance(entry, dict) else entry
        if any(v.get("gpu") for v in pages[0]["servers"].values()):
            return zone, pages[0]["servers"]
    raise AssertionError("no GPU type in the fixture")


def _scaleway(raw: Any, bad: Any) -> str:
    zone, servers = _scaleway_servers(raw)
    name = next(k for k, v in servers.items() if v.get("gpu"))
    put(servers[name], "hourly_price", bad)
    return f"{zone} servers.{name}.hourly_price"


def _tensordock(raw: Any, bad: Any) -> str:
    put(raw["data"]["locations"][0]["gpus"][0], "price_per_hr", bad)
    return "data.locations[0].gpus[0].price_per_hr"


def _vastai_first(raw: Any) -> tuple[dict[str, Any], str]:
    """The first offer of the first per-GPU-name search (what decides; the clamped search is read
    after it), and its path."""
    if isinstance(raw, dict) and "searches" in raw:
        i = next(i for i, s in enumerate(raw["searches"]) if s["search"].startswith("gpu_name="))
        return raw["searches"][i]["response"]["offers"][0], f"searches[{i}].response.offers[0]"
    return (raw if isinstance(raw, list) else raw["offers"])[0], "offers[0]"


def _vastai(raw: Any, bad: Any) -> str:
    offer, at = _vastai_first(raw)
    put(offer, "dph_base", bad)
    return f"{at}.dph_base"


def _verda(raw: Any, bad: Any) -> str:
    i = next(i for i, t in enumerate(raw["instance_types"]) if t["gpu"]["number_of_gpus"])
    put(raw["instance_types"][i], "price_per_hour", bad)
    return f"instance_types[{i}].price_per_hour"


def _voltagepark(raw: Any, bad: Any) -> str:
    put(raw["results"][0], "gpu_price_ethernet", bad)
    return "results[0].gpu_price_ethernet"


def _vultr(raw: Any, bad: Any) -> str:
    i = next(i for i, p in enumerate(raw["plans"][0]["plans"]) if str(p.get("id", "")).startswith("vcg-"))
    put(raw["plans"][0]["plans"][i], "hourly_cost", bad)
    return f"plans[0].plans[{i}].hourly_cost"


#: provider -> (its fixture, the corruptor of one offer's price, whether a missing field is
#: quarantined: where the field is optional, missing means "not offered")
PRICES: dict[str, tuple[Callable[[], Any], Corrupt, bool]] = {
    "akash": (test_akash.TestAkash().load_raw, _akash, True),
    "aws": (test_aws.TestAwsPricingJson().load_raw, _aws, True),
    "aws_spot": (test_aws_spot.TestAwsSpot().load_raw, _aws_spot, True),
    "azure": (test_azure.TestAzure().load_raw, _azure, True),
    "cudo": (test_cudo.TestCudo().load_raw, _cudo, False),
    "digitalocean": (test_digitalocean.TestDigitalocean().load_raw, _digitalocean, True),
    "gcp": (lambda: copy.deepcopy(replayed_payload("gcp")), _gcp, False),  # the fixture prices one SKU
    "hyperbolic": (test_hyperbolic.TestHyperbolic().load_raw, _hyperbolic, True),
    "jarvislabs": (test_jarvislabs.api_payload, _jarvislabs, False),
    "linode": (test_linode.TestLinode().load_raw, _linode, True),
    "oci": (test_oci.TestOci().load_raw, _oci, False),
    "runpod": (test_runpod.TestRunpod().load_raw, _runpod, True),
    "scaleway": (test_scaleway.TestScaleway().load_raw, _scaleway, True),
    "tensordock": (test_tensordock.TestTensordock().load_raw, _tensordock, True),
    "vastai": (test_vastai.TestVastai().load_raw, _vastai, True),
    "verda": (test_verda.TestVerda().load_raw, _verda, True),
    "voltagepark": (test_voltagepark.TestVoltagepark().load_raw, _voltagepark, True),
    "vultr": (test_vultr.TestVultr().load_raw, _vultr, True),
}
BAD_PRICES: list[tuple[Any, str]] = [
    ("call us", "not"), ([1.5], "not"), (math.nan, "not"), (10**400, "not"), (-2.5, "negative"), (MISSING, "missing"),
]


def run_stages(name: str, raw: Any) -> tuple[list[Any], list[Any]]:
    offers = all_scrapers()[name](env={}, replay=True).parse_payload(raw)
    return validate([normalise(o) for o in offers], {}, {})


@pytest.mark.parametrize("name", sorted(PRICES))
@pytest.mark.parametrize(("bad", "says"), BAD_PRICES, ids=["text", "list", "nan", "huge", "negative", "missing"])
def test_one_bad_price_is_quarantined_naming_the_field_and_the_rest_is_kept(name: str, bad: Any, says: str) -> None:
    load, corrupt, missing_quarantines = PRICES[name]
    if bad is MISSING and not missing_quarantines:
        pytest.skip(f"{name}: a missing price field means the offer is not sold")
    raw = load()
    if name in TWINS:
        raw = TWINS[name](raw)
    accepted_before, rejected_before = run_stages(name, raw)
    spoiled = copy.deepcopy(raw)
    field = corrupt(spoiled, bad)
    accepted, rejected = run_stages(name, spoiled)
    new = [r for r in rejected if UNREADABLE_PRICE in r.offer.extra]
    assert new, f"nothing quarantined: {[r.reason for r in rejected]}"
    for r in new:
        assert field in r.reason and says in r.reason, r.reason
        assert r.reason.startswith("price field ") and "\n" not in r.reason
    assert len({r.offer.sku for r in new}) == 1, [r.reason for r in new]  # one offer (in its regions and kinds)
    assert accepted and len(accepted) >= len(accepted_before) - len(new)
    assert len(accepted) + len(rejected) == len(accepted_before) + len(rejected_before)  # nothing vanished
    if bad == -2.5:
        assert all("-2.5" in r.reason for r in new)  # the value seen, for whoever reads the quarantine


def _akash_twin(raw: Any) -> Any:
    """The excerpt lists one model: a second (the same record under another name) stays readable."""
    twin = copy.deepcopy(raw["models"][0])
    twin["model"] = "h100"
    raw["models"].append(twin)
    return raw


#: Fixtures of a single offer get a readable second one, so "the rest is kept" can be seen.
TWINS: dict[str, Callable[[Any], Any]] = {"akash": _akash_twin}


def _count_vastai(raw: Any, bad: Any) -> str:
    offer, at = _vastai_first(raw)
    put(offer, "num_gpus", bad)
    return f"{at}.num_gpus"


def _count_linode(raw: Any, bad: Any) -> str:
    i = next(i for i, p in enumerate(raw[0]["data"]) if p["gpus"])
    put(raw[0]["data"][i], "gpus", bad)
    return f"payload[0].data[{i}].gpus"


def _count_digitalocean(raw: Any, bad: Any) -> str:
    i = next(i for i, s in enumerate(raw[0]["sizes"]) if s.get("gpu_info"))
    put(raw[0]["sizes"][i]["gpu_info"], "count", bad)
    return f"payload[0].sizes[{i}].gpu_info.count"


def _count_verda(raw: Any, bad: Any) -> str:
    i = next(i for i, t in enumerate(raw["instance_types"]) if t["gpu"]["number_of_gpus"])
    put(raw["instance_types"][i]["gpu"], "number_of_gpus", bad)
    return f"instance_types[{i}].gpu.number_of_gpus"


def _count_hyperbolic(raw: Any, bad: Any) -> str:
    put(raw[0], "gpuCount", bad)
    return "payload[0].gpuCount"


def _count_scaleway(raw: Any, bad: Any) -> str:
    zone, servers = _scaleway_servers(raw)
    name = next(k for k, v in servers.items() if v.get("gpu"))
    put(servers[name], "gpu", bad)
    return f"{zone} servers.{name}.gpu"


COUNTS: dict[str, Corrupt] = {
    "vastai": _count_vastai, "linode": _count_linode, "digitalocean": _count_digitalocean, "verda": _count_verda,
    "hyperbolic": _count_hyperbolic, "scaleway": _count_scaleway,
}


@pytest.mark.parametrize("name", sorted(COUNTS))
@pytest.mark.parametrize(("bad", "says"), [("two", "not a number"), (math.nan, "not a number"), (-1, "not a positive count"),
                                           (MISSING, "missing")], ids=["text", "nan", "negative", "missing"])
def test_one_bad_gpu_count_is_quarantined_naming_the_field_and_the_rest_is_kept(name: str, bad: Any, says: str) -> None:
    raw = PRICES[name][0]()
    accepted_before, rejected_before = run_stages(name, raw)
    spoiled = copy.deepcopy(raw)
    field = COUNTS[name](spoiled, bad)
    accepted, rejected = run_stages(name, spoiled)
    new = [r for r in rejected if UNREADABLE_PRICE in r.offer.extra]
    assert new and all(r.reason.startswith(f"GPU count field {field} ") and says in r.reason for r in new), [r.reason for r in new]
    assert len({r.offer.sku for r in new}) == 1
    assert accepted and len(accepted) + len(rejected) == len(accepted_before) + len(rejected_before)


@pytest.mark.parametrize(("name", "rows", "key"), [
    ("azure", lambda raw: [item for page in raw for item in page["Items"]], "retailPrice"),
    ("linode", lambda raw: [plan for page in raw for plan in page["data"]], "price"),
    ("hyperbolic", lambda raw: raw, "costPerHourCents"),
], ids=["azure", "linode", "hyperbolic"])
def test_the_same_field_spoiled_in_every_offer_is_a_parse_error_naming_it(
    name: str, rows: Callable[[Any], list[dict[str, Any]]], key: str
) -> None:
    """A price field renamed or retyped for the whole list is a changed payload, not bad rows."""
    raw = PRICES[name][0]()
    for row in rows(raw):
        row[key] = {"hourly": "n/a"} if name == "linode" else "n/a"
    with pytest.raises(ParseError, match=rf"^{name}: no offer is readable \(\d+ listed\): price field \S*{key}\S* holds 'n/a', not a number$"):
        all_scrapers()[name](env={}).parse_payload(raw)


def test_read_price_and_read_count() -> None:
    assert read_price(2.5) == (2.5, {})
    assert read_price("1,234.5") == (1234.5, {})
    assert read_price(None) == (None, {}) and read_price(" ") == (None, {})
    assert read_price({"p": None}, "p", at="x[1]", required=True) == (None, {UNREADABLE_PRICE: "price field x[1].p is empty (None)"})
    assert read_price({}, "p", at="x[1]") == (None, {UNREADABLE_PRICE: "price field x[1].p is missing"})
    assert read_price({"p": -1}, "p") == (-1.0, {UNREADABLE_PRICE: "price field p holds -1, a negative price"})
    assert read_price({"p": "2.5"}, "p", strings=False) == (None, {UNREADABLE_PRICE: "price field p holds '2.5', not a number"})
    for junk, shown in (("n/a", "'n/a'"), (True, "True"), (float("nan"), "nan"), ({"v": 1}, "{'v': 1}")):
        assert read_price({"v": junk}, "v", at="a") == (None, {UNREADABLE_PRICE: f"price field a.v holds {shown}, not a number"})
    assert len(read_price("x" * 100)[1][UNREADABLE_PRICE]) < 80
    assert read_count({"n": "8"}, "n") == (8.0, {}) and read_count({"n": 0}, "n") == (0.0, {})
    assert read_count({"n": 0}, "n", zero=False)[1] == {UNREADABLE_PRICE: "GPU count field n holds 0, not a positive count"}
    assert read_count({}, "n", at="d[0]") == (0.0, {UNREADABLE_PRICE: "GPU count field d[0].n is missing"})


def _stored_scraper(name: str, raw: Any) -> type[Scraper]:
    """The real scraper of ``name`` whose fetch answers ``raw`` (the collector's every other stage is real)."""

    async def fetch(self: Scraper, http: Any) -> Any:
        return raw

    return type(f"Spoiled_{name}", (all_scrapers()[name],), {"fetch": fetch, "credentials": ()})


def _spoiled(name: str) -> tuple[Any, str]:
    """The provider's fixture with one offer's price replaced by "call us", and the reason expected."""
    if name in PAGES:
        test, cell, markup, field, _ = PAGES[name]
        return test.load_raw().replace(cell, markup.format("call us"), 1), f"price field {field} holds 'call us', not a price"
    load, corrupt, _ = PRICES[name]
    spoiled = load()
    field = corrupt(spoiled, "call us")
    return spoiled, f"price field {field} holds 'call us', not a number"


@pytest.mark.parametrize("name", ["vultr", "linode", "aws_spot", "nebius"])  # (datacrunch is retired: not collected)
def test_the_collector_stores_the_rest_and_quarantines_the_bad_offer(engine: Engine, name: str) -> None:
    spoiled, reason = _spoiled(name)
    expected = run_stages(name, spoiled)[0]
    [result] = collect(engine, Settings(http={"timeout_s": 2, "retries": 1, "backoff_s": 0}), classes=[_stored_scraper(name, spoiled)])
    assert result.ok, result
    with Session(engine) as s:
        reasons = [q.reason for q in s.exec(select(Quarantine).where(Quarantine.provider == name)).all()]
        priced = reads.latest_prices(in_transaction(s.connection()))
        run = s.exec(select(ScrapeRun).where(ScrapeRun.provider == name)).one()
    assert reasons and all(r == reason for r in reasons)
    assert run.status == "ok" and run.quarantined == len(reasons)
    assert {(r["sku"], r["region"]) for r in priced if r["provider"] == name} == {(o.sku, o.region) for o in expected if o.price_per_hour is not None}


# --- AWS offer files: the real us-east-1 excerpt, spoiled and written to disk ----------------------


def _offer_file_with_twin() -> dict[str, Any]:
    """The real excerpt prices one GPU product: a second (its product and term, copied under another
    SKU code and instance type) stays readable, so "the rest is kept" can be seen."""
    doc = test_aws_offer_file.excerpt()
    sku = test_aws_offer_file.ON_DEMAND_SKU
    twin = copy.deepcopy(doc["products"][sku])
    twin["sku"] = "TWINSKU"
    twin["attributes"]["instanceType"] = "p5.48xlarge"
    doc["products"]["TWINSKU"] = twin
    doc["terms"]["OnDemand"]["TWINSKU"] = json.loads(json.dumps(doc["terms"]["OnDemand"][sku]).replace(sku, "TWINSKU"))
    return doc


def _offer_file_price(doc: dict[str, Any], bad: Any) -> str:
    sku = test_aws_offer_file.ON_DEMAND_SKU
    term_code, term = next(iter(doc["terms"]["OnDemand"][sku].items()))
    rate_code, dim = next(iter(term["priceDimensions"].items()))
    put(dim["pricePerUnit"], "USD", bad)
    return f"terms.OnDemand[{sku!r}][{term_code!r}].priceDimensions[{rate_code!r}].pricePerUnit.USD"


def _offer_file_stages(path: Path) -> tuple[list[Any], list[Any]]:
    offers = AwsScraper(env={}, replay=True, source="offer-file").parse_payload(path)
    return validate([normalise(o) for o in offers], {}, {})


@pytest.mark.parametrize(("bad", "says"), [("call us", "not a number"), ([1.5], "not a number"), ("NaN", "not a number"),
                                           (10**400, "not a number"), (-2.5, "a negative price"), (MISSING, "missing"),
                                           ("", "empty")], ids=["text", "list", "nan", "huge", "negative", "missing", "empty"])
def test_one_bad_price_in_an_aws_offer_file_is_quarantined_and_the_rest_is_kept(tmp_path: Path, bad: Any, says: str) -> None:
    doc = _offer_file_with_twin()
    accepted_before, rejected_before = _offer_file_stages(test_aws_offer_file.write(tmp_path, "before.json", doc))
    field = _offer_file_price(doc, bad)
    accepted, rejected = _offer_file_stages(test_aws_offer_file.write(tmp_path, "index.json", doc))
    (quarantined,) = [r for r in rejected if UNREADABLE_PRICE in r.offer.extra]
    assert quarantined.offer.sku == "p4d.24xlarge"
    assert quarantined.reason.startswith(f"price field {field} ") and says in quarantined.reason, quarantined.reason
    assert [o.sku for o in accepted] == ["p5.48xlarge"] and len(accepted_before) == 2 and not rejected_before


def test_the_same_price_spoiled_in_every_product_of_an_aws_offer_file_is_a_parse_error(tmp_path: Path) -> None:
    doc = _offer_file_with_twin()
    for terms in doc["terms"]["OnDemand"].values():
        for term in terms.values():
            for dim in term["priceDimensions"].values():
                dim["pricePerUnit"]["USD"] = "n/a"
    with pytest.raises(ParseError, match=r"^aws: no offer is readable \(2 listed\): price field terms\.OnDemand\[.*\.pricePerUnit\.USD holds 'n/a'"):
        AwsScraper(env={}, source="offer-file").parse_payload(test_aws_offer_file.write(tmp_path, "index.json", doc))


# --- pricing pages: one row's (or card's) price cell no longer parses ------------------------------

#: provider -> (its provider test, a real price cell of the recorded page, the cell's markup with
#: ``{}`` for the new text, the field as the reason names it (column and row), whether a blank
#: cell quarantines: where the page prints "–" for "not offered", a blank cell is no offer at all)
PAGES: dict[str, tuple[ProviderContract, str, str, str, bool]] = {
    "coreweave": (test_coreweave.TestCoreweave(), "<div>$17.20</div>", "<div>{}</div>",
                  "'On-Demand Price (Per Hour)' of 'NVIDIA L40S'", False),
    "crusoe": (test_crusoe.TestCrusoe(), "<p>$4.17/GPU-hr</p>", "<p>{}</p>", "'On-demand' of 'NVIDIA H100 80GB HGX'", False),
    "datacrunch": (test_datacrunch.TestDatacrunch(), ">$0.80/h<", ">{}<", "'Spot price' of '1B200.30V'", False),
    "hyperstack": (test_hyperstack.TestHyperstack(), "$3.99", "{}",
                   "'Pricing Per Hour' of 'NVIDIA H200 SXM' in 'On-Demand GPU Pricing'", True),
    "lambda": (test_lambda_.TestLambda(), ">$5.34<", ">{}<", "'PRICE/GPU/HR*' of 'NVIDIA B200 SXM6'", True),
    "modal": (test_modal.TestModal(), "$0.001174 <span", "{} <span", "'GPU Tasks' of 'Nvidia H100'", True),
    "nebius": (test_nebius.TestNebius(), "<p>$4.12</p>", "<p>{}</p>", "'On-demand, GPU-hour' of 'NVIDIA HGX H100'", False),
    # the card prints its "$" apart from the amount: the bad text replaces the amount
    "paperspace": (test_paperspace.TestPaperspace(), '<h1 class="instance-price-2">0.45</h1>', '<h1 class="instance-price-2">{}</h1>',
                   "of card 'M4000'", True),
}
BAD_CELLS: list[tuple[str, str]] = [("call us", "not a price"), ("$1e999", "not a price"), ("-$2.50", "a negative price"),
                                    ("", "not a price")]


@pytest.mark.parametrize("name", sorted(PAGES))
@pytest.mark.parametrize(("bad", "says"), BAD_CELLS, ids=["text", "huge", "negative", "blank"])
def test_one_unreadable_price_cell_quarantines_its_row_naming_the_column(name: str, bad: str, says: str) -> None:
    test, cell, markup, field, blank_quarantines = PAGES[name]
    if not bad and not blank_quarantines:
        pytest.skip(f"{name}: a blank price cell means not offered")
    html = test.load_raw()
    accepted_before, rejected_before = run_stages(name, html)
    text = bad.replace("$", "") if name == "paperspace" else bad
    assert cell in html
    accepted, rejected = run_stages(name, html.replace(cell, markup.format(text), 1))
    new = [r for r in rejected if UNREADABLE_PRICE in r.offer.extra]
    assert new, f"nothing quarantined: {[r.reason for r in rejected]}"
    for r in new:
        assert r.reason.startswith(f"price field {field} holds ") and says in r.reason and "\n" not in r.reason, r.reason
    assert len({test.row_of(r.offer) for r in new}) == 1, [r.reason for r in new]  # one row
    assert accepted and len(accepted) >= len(accepted_before) - len(new)
    assert len(accepted) + len(rejected) == len(accepted_before) + len(rejected_before)  # nothing vanished


@pytest.mark.parametrize(("name", "spoil", "message"), [
    ("coreweave", lambda html: re.sub(r"<div>\$[\d.,]+</div>\n    <a", "<div>TBA</div>\n    <a", html),
     r"no on_demand offer is readable \(8 priced\): price field 'On-Demand Price \(Per Hour\)' of 'NVIDIA GB200 NVL72' holds 'TBA', not a price$"),
    ("lambda", lambda html: re.sub(r">\$[\d.]+</td>", ">soon</td>", html),
     r"no offer is readable \(5 listed\): price field 'PRICE/GPU/HR\*' of '.*' holds 'soon'"),
    ("datacrunch", lambda html: _column_spoiled(html, 7, "call us"),
     r"no on_demand offer is readable \(\d+ priced\): price field 'On demand price' of '1B200\.30V' holds 'call us'"),
    ("nebius", lambda html: re.sub(r"\$\d+\.\d+", "TBD", html),
     r"no on_demand offer is readable \(\d+ priced\): price field 'On-demand, GPU-hour' of '.*' holds 'TBD'"),
], ids=["coreweave", "lambda", "datacrunch-one-column", "nebius-contact-us-aside"])
def test_a_price_column_unreadable_in_every_row_is_a_parse_error_naming_it(name: str, spoil: Callable[[str], str], message: str) -> None:
    """A column reworded or retyped for the whole page is a changed layout, not bad rows: even when
    the page's other price columns still read."""
    html = PAGES[name][0].load_raw()
    with pytest.raises(ParseError, match=rf"^{name}: {message}"):
        all_scrapers()[name](env={}).parse_payload(spoil(html))


def _column_spoiled(html: str, column: int, text: str) -> str:
    """``html`` with the ``column``-th cell of every body row of its tables replaced by ``text``."""
    def row(match: re.Match[str]) -> str:
        cells = re.findall(r"<td[^>]*>.*?</td>", match.group(0), flags=re.S)
        target = cells[column]
        return match.group(0).replace(target, re.sub(r">.*?</td>$", f">{text}</td>", target, flags=re.S), 1)

    return re.sub(r"<tr>(?:(?!</tr>).)*<td.*?</tr>", row, html, flags=re.S)

"""A price field that is not a number is quarantined with a reason, not dropped and not fatal.

Each case corrupts one price in the provider's bundled recording (the payload the real ``fetch``
returns over replay), then runs the real parse, normalise and validate stages: that one offer is
quarantined with the value in its reason, every other offer is accepted as before.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from scrapers.base import UNREADABLE_PRICE, read_price
from scrapers.registry import all_scrapers
from tests.scrapers.contract import replayed_payload
from tracker.pipeline.normalise import normalise
from tracker.pipeline.validate import validate


def _jarvislabs(raw: Any, bad: Any) -> None:
    host = next(iter(raw["hosts"]))
    raw["hosts"][host]["server_meta"][0]["price_per_hour"] = bad


def _runpod(raw: Any, bad: Any) -> None:
    raw["data"]["gpuTypes"][0]["securePrice"] = bad


def _cudo(raw: Any, bad: Any) -> None:
    raw["machineTypes"][0]["gpuPriceHr"] = {"value": bad}


def _vastai(raw: Any, bad: Any) -> None:
    raw[0]["dph_base"] = bad


def _oci(raw: Any, bad: Any) -> None:
    """The price of a GPU part that is offered on its own (no shape uses it)."""
    alone = next(o.sku for o in all_scrapers()["oci"](env={}).parse(raw) if o.extra.get("per") == "GPU")
    for page in raw["products"]:
        for item in page["items"]:
            if item.get("partNumber") == alone:
                item["currencyCodeLocalizations"][0]["prices"][0]["value"] = bad


CORRUPT: dict[str, Callable[[Any, Any], None]] = {
    "jarvislabs": _jarvislabs, "runpod": _runpod, "cudo": _cudo, "vastai": _vastai, "oci": _oci,
}


def run_stages(name: str, raw: Any) -> tuple[list[Any], list[Any]]:
    offers = all_scrapers()[name](env={}, replay=True).parse_payload(raw)
    return validate([normalise(o) for o in offers], {}, {})


@pytest.mark.parametrize("name", sorted(CORRUPT))
@pytest.mark.parametrize(("bad", "shown"), [("call us", "'call us'"), ([1.5], "[1.5]"), (10**400, "1000000000")])
def test_one_unreadable_price_is_quarantined_and_the_rest_is_kept(name: str, bad: Any, shown: str) -> None:
    accepted_before, rejected_before = run_stages(name, replayed_payload(name))
    raw = copy.deepcopy(replayed_payload(name))
    CORRUPT[name](raw, bad)
    accepted, rejected = run_stages(name, raw)
    new = [r for r in rejected if UNREADABLE_PRICE in r.offer.extra]
    assert len(new) == 1, [r.reason for r in rejected]
    assert new[0].reason.startswith(f"price {shown}") and new[0].reason.endswith("in the payload is not a number")
    assert new[0].offer.price_per_hour is None
    assert len(accepted) == len(accepted_before) - 1
    assert len(rejected) == len(rejected_before) + 1


def _vultr(raw: Any, bad: Any) -> None:
    plan = next(p for page in raw["plans"] for p in page["plans"] if str(p.get("id", "")).startswith("vcg-"))
    plan["hourly_cost"] = bad


def _verda(raw: Any, bad: Any) -> None:
    raw["instance_types"][next(i for i, t in enumerate(raw["instance_types"]) if t["gpu"]["number_of_gpus"])]["price_per_hour"] = bad


@pytest.mark.parametrize("corrupt", [_vultr, _verda], ids=["vultr", "verda"])
def test_a_negative_price_is_quarantined_not_dropped(corrupt: Callable[[Any, Any], None]) -> None:
    name = corrupt.__name__.lstrip("_")
    accepted_before, rejected_before = run_stages(name, replayed_payload(name))
    raw = copy.deepcopy(replayed_payload(name))
    corrupt(raw, -2.5)
    accepted, rejected = run_stages(name, raw)
    new = [r for r in rejected if r.offer.price_per_hour == -2.5]
    assert [r.reason for r in new] == ["price -2.5 USD/h is not a positive number"]
    assert len(accepted) < len(accepted_before)
    assert len(accepted) + len(rejected) == len(accepted_before) + len(rejected_before)  # nothing vanished


def test_read_price() -> None:
    assert read_price(2.5) == (2.5, {})
    assert read_price("1,234.5") == (1234.5, {})
    assert read_price(None) == (None, {}) and read_price(" ") == (None, {})
    assert read_price(-1) == (-1.0, {})  # negative: a number, quarantined by the validate stage
    for junk, shown in (("n/a", "'n/a'"), (True, "True"), (float("nan"), "nan"), ({"v": 1}, "{'v': 1}")):
        assert read_price(junk) == (None, {UNREADABLE_PRICE: shown})
    assert len(read_price("x" * 100)[1][UNREADABLE_PRICE]) == 40

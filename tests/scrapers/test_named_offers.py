"""Every active provider's tests name one offer of its replay recording (``ProviderContract.named_offer``):
its GPU, count, kind, region and price, so no parser is proven on counts alone."""

from __future__ import annotations

import importlib
import pkgutil

import tests.scrapers
from scrapers.registry import all_scrapers
from tests.scrapers.contract import ProviderContract


def _contract_classes() -> list[type[ProviderContract]]:
    for info in pkgutil.iter_modules(tests.scrapers.__path__):
        if info.name.startswith("test_"):
            importlib.import_module(f"tests.scrapers.{info.name}")
    found, todo = [], list(ProviderContract.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_active_provider_names_an_offer_of_its_replay_recording() -> None:
    active = {name for name, cls in all_scrapers().items() if cls.retired is None}
    named = {c.scraper_cls.name for c in _contract_classes() if c.named_offer is not None}
    assert active - named == set(), "declare named_offer in the provider's ProviderContract test class"
    assert named <= active, "a retired provider is no longer collected: its tests name no live offer"


def test_a_fresh_install_without_keys_collects_from_every_active_provider_but_two() -> None:
    """Only providers whose prices no public keyless request serves need a key: GCP's Cloud Billing
    catalogue and Shadeform's instance-types API answer only with one (2026 peers send one too);
    every other active provider has a keyless path, its key (where it takes one) optional."""
    active = {name: cls for name, cls in all_scrapers().items() if cls.retired is None}
    need_a_key = {name for name, cls in active.items() if cls(env={}).missing_credentials()}
    assert need_a_key == {"gcp", "shadeform"}

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

"""Modules loaded on first use, so that importing every scraper stays cheap.

Listing providers, reading a provider's declared interval or building the README table imports
every scraper module for its class attributes alone; the HTTP client (httpx) and the HTML parser
(BeautifulSoup with lxml) cost more than all the scrapers together and are needed only when a
scraper fetches or parses. ``lazy_module`` hands back a stand-in at once; its first attribute
read imports the real module (``importlib.import_module``, which waits while another thread
is still executing it) and every read is answered by it.

Why not ``importlib.util.LazyLoader``: on Python 3.11 its module runs on the first attribute
read without a lock, so parsers started together in threads (the collector parses each provider
in a worker thread) could read the half-executed module ("module 'bs4' has no attribute
'BeautifulSoup'"). The stand-in is never put in ``sys.modules``: an ordinary ``import bs4``
elsewhere gets the real module.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any


class _LazyModule(ModuleType):
    """Stands for the module of the same name until its first attribute read imports it."""

    def __getattr__(self, attr: str) -> Any:
        module = self.__dict__.get("_module")
        if module is None:
            # import_module waits while another thread is still executing the module
            module = self.__dict__["_module"] = importlib.import_module(self.__name__)
        return getattr(module, attr)


def lazy_module(name: str) -> ModuleType:
    """The module ``name`` (already loaded), or a stand-in that imports it when an attribute of it
    is first read; an unknown name fails here, at once."""
    if name in sys.modules:
        return sys.modules[name]
    if importlib.util.find_spec(name) is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return _LazyModule(name)

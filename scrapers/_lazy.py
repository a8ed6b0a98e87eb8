"""Modules loaded on first use, so that importing every scraper stays cheap.

Listing providers, reading a provider's declared interval or building the README table imports
every scraper module for its class attributes alone; the HTTP client (httpx) and the HTML parser
(BeautifulSoup with lxml) cost more than all the scrapers together and are needed only when a
scraper fetches or parses. ``lazy_module`` hands back the module object at once and executes
it on its first attribute access (the standard library's ``importlib.util.LazyLoader``).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed when an attribute of it is first read (or already loaded)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module

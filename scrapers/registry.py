"""Find every scraper: the modules of this package plus the ``gpu_tracker.scrapers`` entry points.

A third-party package adds a provider by declaring, in its own pyproject::

    [project.entry-points."gpu_tracker.scrapers"]
    myprovider = "my_package.module:MyScraper"

Built-ins need no list to maintain: every public module in ``scrapers/`` that defines a
``Scraper`` subclass is one provider, and the module is named after it (``lambda_`` for
``lambda``, a Python keyword; a test keeps it so). Two scrapers with the same ``name`` are an
error, because the name keys the database rows and the config.

Importing every scraper is cheap (the HTTP client and the HTML parser load on first use: see
``scrapers._lazy``), so what a provider declares about itself (its name, credentials, kinds,
interval) is read from its class and nowhere else. ``find(name)`` answers
``all_scrapers().get(name)`` importing only the module that can hold it (and the plugins), for
readers that want one provider, such as the CLI's ``history``. Readers that want a fact of every
provider import none of the built-ins: the providers collected directly are named by the modules
(``directly_collected``), and a built-in's own interval is read from its class only when its
module's source names the attribute it is declared in (``declared_interval``); so ``trends``
learns every provider's interval and whose rows are a cloud's without importing 45 modules.
"""

from __future__ import annotations

import importlib
import inspect
import keyword
import pkgutil
from collections.abc import Collection
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

import scrapers
from tracker.errors import ConfigError

if TYPE_CHECKING:
    from scrapers.base import Scraper

ENTRY_POINT_GROUP = "gpu_tracker.scrapers"
#: Modules of the package that are infrastructure, not providers.
NON_PROVIDER_MODULES = frozenset({"base", "http", "registry", "html"})


def builtin_modules() -> list[str]:
    """Names of the provider modules shipped in ``scrapers/``."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules(scrapers.__path__)
        if not m.name.startswith("_") and m.name not in NON_PROVIDER_MODULES
    )


@cache
def _builtin_set() -> frozenset[str]:
    """``builtin_modules`` read once per process, for lookups by name."""
    return frozenset(builtin_modules())


def _scraper_classes(module_name: str) -> list[type[Scraper]]:
    from scrapers.base import Scraper

    module = importlib.import_module(f"scrapers.{module_name}")
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, Scraper) and not inspect.isabstract(obj) and obj.__module__ == module.__name__
    ]


def _add(found: dict[str, type[Scraper]], cls: type[Scraper], origin: str) -> None:
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"scraper {cls.__qualname__} from {origin} has no name")
    if name in found and found[name] is not cls:
        raise ConfigError(f"two scrapers are named {name!r}: {found[name].__module__} and {origin}")
    found[name] = cls


def discover() -> dict[str, type[Scraper]]:
    """All scrapers by name, built-ins first, then entry-point plugins (uncached)."""
    found: dict[str, type[Scraper]] = {}
    for module_name in builtin_modules():
        for cls in _scraper_classes(module_name):
            _add(found, cls, f"scrapers.{module_name}")
    for cls, origin in _plugins():
        _add(found, cls, origin)
    return dict(sorted(found.items()))


@cache
def _plugins() -> list[tuple[type[Scraper], str]]:
    """The entry-point scrapers with where each came from, read once per process (each read of
    the entry points scans every installed distribution; ``find`` asks for each unknown name)."""
    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        from scrapers.base import Scraper

        cls = ep.load()
        if not (inspect.isclass(cls) and issubclass(cls, Scraper)):
            raise ConfigError(f"entry point {ep.name} = {ep.value} is not a Scraper subclass")
        out.append((cls, f"entry point {ep.name} ({ep.value})"))
    return out


def module_name_of(name: str) -> str:
    """The built-in module a provider named ``name`` lives in (a keyword gets a trailing ``_``)."""
    return f"{name}_" if keyword.iskeyword(name) else name


def provider_name_of(module_name: str) -> str:
    """The provider a built-in module holds (``module_name_of`` read back)."""
    bare = module_name.removesuffix("_")
    return bare if bare != module_name and keyword.iskeyword(bare) else module_name


#: The class attribute a scraper declares its own collection interval in.
INTERVAL_ATTRIBUTE = "default_interval_s"


@cache
def _names_interval(module_name: str) -> bool:
    """Whether the built-in module's source names ``INTERVAL_ATTRIBUTE``. A scraper declares its
    own interval in its class body and each built-in module defines its one scraper directly on
    ``Scraper``, so a module that never names the attribute holds a scraper with the base
    interval: known from its text, without importing it (a test holds every built-in's answer
    to its class's). A module whose source cannot be read says yes, and is imported."""
    try:
        return INTERVAL_ATTRIBUTE in (Path(scrapers.__path__[0]) / f"{module_name}.py").read_text(encoding="utf-8")
    except OSError:
        return True


@cache
def find(name: str) -> type[Scraper] | None:
    """``all_scrapers().get(name)``, importing only the built-in module named after ``name`` and
    the entry-point plugins (see the module docstring)."""
    module_name = module_name_of(name)
    if module_name in _builtin_set():
        for cls in _scraper_classes(module_name):
            if cls.name == name:
                return cls
    for cls, _origin in _plugins():
        if getattr(cls, "name", None) == name:
            return cls
    return None


@cache
def all_scrapers() -> dict[str, type[Scraper]]:
    """Cached ``discover()``: the registry the application uses."""
    return discover()


def get_scraper(name: str) -> type[Scraper]:
    try:
        return all_scrapers()[name]
    except KeyError:
        known = ", ".join(all_scrapers()) or "none"
        raise ConfigError(f"unknown provider {name!r} (known: {known})") from None


def declared_interval(name: str, cls: type[Scraper] | None = None) -> int | None:
    """Seconds the scraper ``name`` declares as its own collection interval, or None when it
    declares none (keeps ``BASE_INTERVAL_S``) or no scraper has that name (an imported archive's
    provider): the scraper's part of the one interval rule (``Settings.interval_for``). ``cls``:
    the scraper class when the caller holds it (a test's or an embedding application's, which
    need not be registered); else it is found by name (``find``)."""
    if cls is None:
        module_name = module_name_of(name)
        if module_name in _builtin_set() and not _names_interval(module_name):
            return None  # the built-in module holding ``name`` declares no interval of its own
        cls = find(name)
        if cls is None:  # no scraper (an imported archive's provider): nothing declared, and no base class to import
            return None
    from scrapers.base import BASE_INTERVAL_S

    seconds = getattr(cls, INTERVAL_ATTRIBUTE, BASE_INTERVAL_S)
    return int(seconds) if seconds != BASE_INTERVAL_S else None


@cache
def directly_collected() -> frozenset[str]:
    """Providers we collect directly: every registered scraper (``all_scrapers``), the built-ins
    named after their modules without importing them, then the plugins."""
    return frozenset({provider_name_of(m) for m in builtin_modules()} | {getattr(cls, 'name', '') for cls, _origin in _plugins()} - {''})


def market_provider(provider: str, via: str | None, direct: Collection[str] | None = None) -> str:
    """Whose row this is in market figures (the aggregator rule, ``tracker.analysis.aggregators``):
    the cloud an aggregator names when we collect that cloud directly (``direct``, default: the
    registered scrapers), else the row's own provider."""
    if not via or via == provider:
        return provider
    return via if via in (directly_collected() if direct is None else direct) else provider

"""The registry: built-ins are discovered, every provider is tested on a recording, plugins load."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scrapers import registry
from scrapers.base import Scraper
from tracker.errors import ConfigError
from tracker.pipeline.replay import BUNDLED_RECORDINGS

TESTS = Path(__file__).parent
FIXTURES = TESTS.parent / "fixtures"


def test_every_builtin_module_defines_exactly_one_scraper() -> None:
    modules = registry.builtin_modules()
    assert modules, "no provider modules found"
    for name in modules:
        classes = registry._scraper_classes(name)
        assert len(classes) == 1, f"scrapers/{name}.py defines {len(classes)} scrapers"
        # a module may end in "_" where the name is a Python keyword (lambda_.py -> "lambda")
        assert classes[0].name == name.rstrip("_"), f"scrapers/{name}.py: name {classes[0].name!r} should match its module"


def test_find_agrees_with_the_whole_registry_and_imports_only_what_it_needs() -> None:
    everything = registry.all_scrapers()
    for name, cls in everything.items():
        assert registry.find(name) is cls
    assert registry.find("no-such-provider") is None
    assert registry.find("base") is None and registry.find("http") is None  # infrastructure, not providers
    code = ("import json, sys\nfrom scrapers.registry import find\nassert find('runpod').name == 'runpod'\n"
            "assert find('synthetic-p00') is None\n"
            "print(json.dumps([m for m in sys.modules if m.startswith('scrapers.')]))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = set(json.loads(out))
    assert "scrapers.runpod" in loaded
    assert loaded.isdisjoint({f"scrapers.{m}" for m in registry.builtin_modules() if m != "runpod"})


def test_intervals_and_direct_providers_are_known_without_importing_the_builtins() -> None:
    """By name alone, ``declared_interval`` answers as each class does and ``directly_collected``
    names the whole registry; in a fresh process neither imports a module that does not name
    ``default_interval_s`` (a built-in inheriting an interval unnamed would fail the first check)."""
    everything = registry.all_scrapers()
    assert {name: registry.declared_interval(name) for name in everything} == {
        name: registry.declared_interval(name, cls) for name, cls in everything.items()}
    assert registry.declared_interval("aws") == 86_400 and registry.declared_interval("runpod") is None
    assert registry.directly_collected() == frozenset(everything)
    assert {registry.provider_name_of(registry.module_name_of(n)) for n in everything} == set(everything)
    code = ("import json, sys\nfrom scrapers import registry\n"
            "names = sorted(registry.directly_collected())\n"
            "print(json.dumps([{n: registry.declared_interval(n) for n in names},"
            " [m for m in sys.modules if m.startswith('scrapers.')]]))")
    intervals, loaded = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                                  text=True).stdout)
    assert intervals == {name: registry.declared_interval(name, cls) for name, cls in everything.items()}
    naming = {m for m in registry.builtin_modules() if "default_interval_s" in (TESTS.parents[1] / "scrapers" / f"{m}.py").read_text()}
    assert {m for m in loaded if m.removeprefix("scrapers.") in registry.builtin_modules()} == {f"scrapers.{m}" for m in naming}


@pytest.mark.parametrize("module", registry.builtin_modules())
def test_every_provider_has_fixture_recording_and_contract_test(module: str) -> None:
    name = module.rstrip("_")
    assert (FIXTURES / name).is_dir() and any((FIXTURES / name).iterdir()), f"tests/fixtures/{name}/ is missing"
    assert (BUNDLED_RECORDINGS / name / "manifest.json").is_file(), f"tracker/recordings/{name}/manifest.json is missing"
    test_file = TESTS / f"test_{module}.py"
    assert test_file.is_file(), f"tests/scrapers/test_{name}.py is missing"
    tree = ast.parse(test_file.read_text())
    bases = {
        base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
        for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for base in node.bases
    }
    assert "ProviderContract" in bases, f"{test_file.name} has no ProviderContract subclass (the parse test)"


def test_duplicate_names_are_an_error() -> None:
    class A(Scraper):
        name = "dup"
        display_name = "A"

        async def fetch(self, http):  # type: ignore[no-untyped-def]
            return None

        def parse(self, raw):  # type: ignore[no-untyped-def]
            return []

    class B(A):
        pass

    found: dict[str, type[Scraper]] = {}
    registry._add(found, A, "a")
    with pytest.raises(ConfigError, match="two scrapers are named 'dup'"):
        registry._add(found, B, "b")


PLUGIN_PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "gpu-tracker-plugin-example"
version = "0.0.1"

[project.entry-points."gpu_tracker.scrapers"]
examplecloud = "examplecloud_scraper:ExampleCloud"
"""

PLUGIN_MODULE = '''
from scrapers.base import Scraper

class ExampleCloud(Scraper):
    name = "examplecloud"
    display_name = "Example Cloud"
    endpoint = "GET https://example.invalid/prices"

    async def fetch(self, http):
        return await http.get_json("https://example.invalid/prices")

    def parse(self, raw):
        return [self.offer(sku=r["sku"], gpu_raw=r["gpu"], gpu_count=1, price_per_hour=r["usd"]) for r in raw]
'''


@pytest.mark.slow
def test_an_installed_plugin_package_is_registered(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (src / "examplecloud_scraper.py").write_text(textwrap.dedent(PLUGIN_MODULE))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(src)],
        check=True, capture_output=True,
    )
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(target)!r})
        from scrapers.registry import all_scrapers, discover, find
        found = discover()
        cls = found["examplecloud"]
        listed = all_scrapers()
        print(cls.display_name, len(found), find("examplecloud") is cls, listed["examplecloud"] is cls,
              list(listed) == list(found))
    """)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert out[0:2] == ["Example", "Cloud"]
    assert int(out[2]) == len(registry.discover()) + 1
    assert out[3] == "True", "find() sees plugins too"
    assert out[4:6] == ["True", "True"], "all_scrapers() lists the plugins, in discover()'s order"


def test_importing_every_scraper_loads_no_http_or_html_library() -> None:
    """A provider's declarations are its class, read by importing its module: every module must
    stay cheap to import (httpx, BeautifulSoup and lxml load when a scraper fetches or parses)."""
    code = ("import sys, json\nfrom scrapers.registry import discover\nfound = discover()\n"
            "print(json.dumps([len(found), sorted(k for k, m in sys.modules.items() if type(m).__name__ != '_LazyModule')]))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    count, modules = json.loads(out)
    assert count == len(registry.discover()) > 20
    assert {m.split(".")[0] for m in modules} & {"httpx", "bs4", "lxml", "pandas", "sqlalchemy"} == set()


def test_a_lazily_imported_library_loads_when_a_scraper_parses() -> None:
    """The lazy import is no stub: parsing a page loads BeautifulSoup and answers."""
    from scrapers.html import soup, text_of

    assert text_of(soup("<p>H100 <b>80GB</b></p>").find("p")) == "H100 80GB"

"""The lazily imported libraries (httpx, BeautifulSoup) load safely when threads first use them together."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scrapers._lazy import lazy_module

THREADED_FIRST_USE = """
import sys, threading
from scrapers.html import soup, text_of
assert "bs4" not in sys.modules
results, start = [], threading.Barrier(8)
def parse():
    start.wait()
    try:
        results.append(text_of(soup("<p>H100 <b>80GB</b></p>").find("p")))
    except Exception as exc:
        results.append(repr(exc))
threads = [threading.Thread(target=parse) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print("|".join(results))
"""


def test_parsers_started_together_in_threads_all_see_the_whole_library() -> None:
    # the collector parses each provider in a worker thread: the first use of BeautifulSoup may
    # come from several threads at once, and none may see a half-imported module
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", THREADED_FIRST_USE], check=True, capture_output=True, text=True).stdout
        assert out.strip().split("|") == ["H100 80GB"] * 8


def test_the_stand_in_answers_from_the_real_module() -> None:
    json_module = lazy_module("json")  # already loaded: the module itself
    assert json_module is sys.modules["json"]
    code = ("import sys\nfrom scrapers._lazy import lazy_module\nm = lazy_module('bs4')\n"
            "print('bs4' in sys.modules, m.BeautifulSoup.__name__, 'bs4' in sys.modules, sys.modules['bs4'] is not m)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "BeautifulSoup", "True", "True"]


def test_an_unknown_module_fails_at_once() -> None:
    with pytest.raises(ModuleNotFoundError, match="no_such_module_here"):
        lazy_module("no_such_module_here")

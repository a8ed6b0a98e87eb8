"""Every parser, fed a mutated copy of its bundled recording, returns offers or raises ``ParseError``.

The raw payload is what the real ``fetch`` returns over the replay transport. Hypothesis then
changes one to three places in it: deletes a key or list item, swaps a value for another type
(None, a string, a string holding a number, a list, an object, a boolean), a huge or negative
number, NaN, an empty or cut string, or cuts a list short. HTML and other text payloads are cut,
lose a slice, or have numbers replaced. Whatever comes out must be a list of ``ScrapedOffer`` or
the project's ``ParseError`` naming the provider: never a ``TypeError``, ``OverflowError`` and the
like. Examples per provider are bounded so the whole module runs in seconds.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapers.base import ParseError, ScrapedOffer, Scraper
from scrapers.registry import all_scrapers
from tests.scrapers.contract import replayed_payload

EXAMPLES = int(os.environ.get("TRACKER_FUZZ_EXAMPLES", "30"))
SCRAPERS = sorted(all_scrapers().items())

Path_ = tuple[Any, ...]
REPLACEMENTS: tuple[Any, ...] = (
    None, "", "abc", "1.5", "$2.50", "-3", 10**400, -1, 0, 1e308, -1e308, math.nan, math.inf,
    True, [], {}, [1], {"x": 1}, "x" * 300,
)


recorded = replayed_payload


@functools.cache
def paths(name: str) -> tuple[Path_, ...]:
    """Every place in the payload tree (the root excluded), depth first."""
    found: list[Path_] = []

    def walk(node: Any, prefix: Path_) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            found.append((*prefix, key))
            walk(child, (*prefix, key))

    walk(recorded(name), ())
    return tuple(found)


def get_in(tree: Any, path: Path_) -> Any:
    for step in path:
        tree = tree[step]
    return tree


def replace_in(tree: Any, path: Path_, value: Any, *, delete: bool = False) -> Any:
    """A copy of ``tree`` with ``path`` set to ``value`` (or removed); only the spine is copied."""
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        copy: Any = dict(tree)
    else:
        copy = list(tree)
    if rest:
        copy[head] = replace_in(tree[head], rest, value, delete=delete)
    elif delete:
        del copy[head]
    else:
        copy[head] = value
    return copy


@st.composite
def mutated_tree(draw: st.DrawFn, name: str) -> Any:
    tree = recorded(name)
    places = paths(name)
    for _ in range(draw(st.integers(1, 3))):
        path = places[draw(st.integers(0, len(places) - 1))]
        try:
            current = get_in(tree, path)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed this place
        op = draw(st.sampled_from(("delete", "replace", "stringify", "cut")))
        if op == "delete":
            tree = replace_in(tree, path, None, delete=True)
        elif op == "replace":
            tree = replace_in(tree, path, draw(st.sampled_from(REPLACEMENTS)))
        elif op == "stringify":
            tree = replace_in(tree, path, str(current))
        elif isinstance(current, (list, str)):
            tree = replace_in(tree, path, current[: draw(st.integers(0, max(0, len(current) - 1)))])
        else:
            tree = replace_in(tree, path, -current if isinstance(current, (int, float)) and not isinstance(current, bool) else None)
    return tree


@st.composite
def mutated_text(draw: st.DrawFn, name: str) -> str:
    text: str = recorded(name)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(("cut", "drop", "numbers", "tags")))
        at = draw(st.integers(0, max(0, len(text) - 1)))
        if op == "cut":
            text = text[:at]
        elif op == "drop":
            text = text[:at] + text[at + draw(st.integers(1, 5000)):]
        elif op == "numbers":
            junk = draw(st.sampled_from(("abc", "9" * 400, "-1", "0", "1e999", "")))
            text = text[:at] + re.sub(r"\d+(\.\d+)?", junk, text[at:], count=draw(st.integers(1, 20)))
        else:
            text = re.sub(r"<(/?)(table|tr|td|th|div|span|tbody)\b", r"<\1section", text, count=draw(st.integers(1, 50)))
    return text


def check(scraper: Scraper, raw: Any) -> None:
    try:
        offers = scraper.parse_payload(raw)
    except ParseError as exc:
        assert str(exc).startswith(f"{scraper.name}: "), str(exc)
        assert "Error" not in str(exc).split(":", 1)[1], f"a Python exception name reached the message: {exc}"
        return
    assert isinstance(offers, list) and all(isinstance(o, ScrapedOffer) for o in offers)


def scraper_names(kind: type) -> Sequence[str]:
    return [name for name, _ in SCRAPERS if isinstance(recorded(name), kind)]


@pytest.mark.parametrize("name", [n for n, _ in SCRAPERS])
def test_every_provider_has_a_recording_to_mutate(name: str) -> None:
    assert isinstance(recorded(name), (dict, list, str)) and (paths(name) or recorded(name))


@pytest.mark.parametrize("name", scraper_names((dict, list)))
def test_mutated_json_gives_offers_or_a_parse_error(name: str) -> None:
    scraper = all_scrapers()[name](env={}, replay=True)

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutated_tree(name))
    def run(raw: Any) -> None:
        check(scraper, raw)

    run()


@pytest.mark.parametrize("name", scraper_names(str))
def test_mutated_text_gives_offers_or_a_parse_error(name: str) -> None:
    scraper = all_scrapers()[name](env={}, replay=True)

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutated_text(name))
    def run(raw: str) -> None:
        check(scraper, raw)

    run()


@pytest.mark.parametrize("name", scraper_names((dict, list)))
@pytest.mark.parametrize("shape", [None, 0, "", "x", [], {}, [None], [{}], {"": None}])
def test_a_payload_of_the_wrong_shape_gives_a_parse_error(name: str, shape: Any) -> None:
    scraper = all_scrapers()[name](env={}, replay=True)
    with pytest.raises(ParseError, match=f"^{name}: "):
        scraper.parse_payload(shape)

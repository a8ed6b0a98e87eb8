"""Every parser, fed a mutated copy of its bundled recording, returns offers or raises ``ParseError``.

The raw payload is what the real ``fetch`` returns over the replay transport. Hypothesis then
changes one to three places in it: deletes a key or list item, swaps a value for another type
(None, a string, a string holding a number, a list, an object, a boolean), a huge or negative
number, NaN, an empty or cut string, or cuts a list short. HTML and other text payloads are cut,
lose a slice, or have numbers replaced. A second, exhaustive pass sets every field of each JSON
recording (the first place of each key path, list positions aside; at most
``TRACKER_FUZZ_PLACES`` of them, 250 by default) to each value of ``BAD`` or deletes it. Whatever comes out must be a list of ``ScrapedOffer`` or the project's
``ParseError`` naming the provider and a field: never a ``TypeError``, ``OverflowError`` and the
like, nor a message that leaves the user guessing which field changed. An offer whose own price or
GPU count was spoiled comes back marked for quarantine (``extra[UNREADABLE_PRICE]``) with a
one-line reason that names the field the same way.

What "names a field" means here (``names_a_field``), after the ``<provider>: `` prefix:

* JSON payloads: the message holds, as a whole word, a key that occurs in the provider's
  recording or that its parser module reads (``["key"]``, ``.get("key")``, the path of a
  ``require``: ``gpuPriceHr``, ``data.gpuTypes``, ``models[0]``...), ``payload`` (the root, as in
  ``payload[3]``) or a ``ScrapedOffer`` field (the record's own checks, e.g. ``gpu_memory_gb``). A message from ``parse_payload``'s generic
  wrapper counts only through its ``at field <name>`` part, never through its fixed wording.
* Text payloads (HTML pages, the AWS spot document): the message quotes what it looked for or
  found (a column header, a row's name or cells, a cell's text, even when that text is empty),
  names a dotted key path or a ``ScrapedOffer`` field, or says the whole page is empty.

Examples per provider are bounded (``TRACKER_FUZZ_EXAMPLES``, 30 by default) so the whole module
runs in seconds.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapers.base import (
    UNREADABLE_PRICE,
    ParseError,
    ScrapedOffer,
    Scraper,
    field_path,
    names_in,
    optional_number,
    positive,
    require_number,
)
from scrapers.registry import all_scrapers
from tests.scrapers.contract import replayed_payload

EXAMPLES = int(os.environ.get("TRACKER_FUZZ_EXAMPLES", "30"))
#: Key paths the exhaustive pass tries per provider, spread evenly over the recording (AWS keys its
#: rows by instance name, so its recording alone has ~800 paths); 0 tries them all.
PLACES = int(os.environ.get("TRACKER_FUZZ_PLACES", "250"))
SCRAPERS = sorted(all_scrapers().items())

Path_ = tuple[Any, ...]
REPLACEMENTS: tuple[Any, ...] = (
    None, "", "abc", "1.5", "$2.50", "-3", 10**400, -1, 0, 1e308, -1e308, math.nan, math.inf,
    True, [], {}, [1], {"x": 1}, "x" * 300,
)


recorded = replayed_payload

#: Values the exhaustive pass puts in every field: too big for a float, not finite, of the wrong
#: type, negative, zero, text where a number was.
BAD: tuple[Any, ...] = (10**400, math.nan, math.inf, -1e308, "abc", "1e999", None, [], {}, True, -1, 0)
OFFER_FIELDS = frozenset(f.name for f in dataclasses.fields(ScrapedOffer))
_WRAPPED = re.compile(r"^unexpected payload(?: at field (?P<field>[^:]+))?: ")
_QUOTED = re.compile(r"""'[^']*'|"[^"]*"|\[[^\]]*\]""")


@functools.cache
def payload_keys(name: str) -> frozenset[str]:
    """Every dict key of the provider's recording and every key its parser module reads (two
    characters or more)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            found.update(k for k in node if isinstance(k, str) and len(k) >= 2)
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(recorded(name))
    source = inspect.getsource(inspect.getmodule(all_scrapers()[name]))  # type: ignore[arg-type]
    for subscript, got in re.findall(r"""\[\s*["'](\w[\w-]+)["']\s*\]|\.get\(\s*["'](\w[\w-]+)["']""", source):
        found.add(subscript or got)
    for call in re.findall(r"require(?:_number)?\(([^()]*?)provider=", source):
        found.update(re.findall(r"""["'](\w[\w-]+)["']""", call))
    return frozenset(found)


def names_a_field(name: str, message: str) -> bool:
    """Whether a ParseError message of provider ``name`` names a field (see the module docstring)."""
    body = message.removeprefix(f"{name}: ")
    if wrapped := _WRAPPED.match(body):
        body = wrapped["field"] or ""
    words = OFFER_FIELDS if isinstance(recorded(name), str) else OFFER_FIELDS | payload_keys(name) | {"payload"}
    if any(re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", body) for word in words):
        return True
    if isinstance(recorded(name), str):
        return bool(_QUOTED.search(body) or re.search(r"\w\.\w", body) or body.endswith("the page is empty"))
    return False


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
        assert names_a_field(scraper.name, str(exc)), f"the message names no field: {exc}"
        return
    assert isinstance(offers, list) and all(isinstance(o, ScrapedOffer) for o in offers)
    for o in offers:  # an offer left for quarantine says why in one line naming the field
        if reason := o.extra.get(UNREADABLE_PRICE):
            assert "\n" not in reason and names_a_field(scraper.name, f"{scraper.name}: {reason}"), reason


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


def first_places(name: str) -> Iterator[Path_]:
    """The first place of each key path of the recording, list positions aside (``data[*].price``
    is tried once, at ``data[0].price``)."""
    seen: set[Path_] = set()
    for path in paths(name):
        shape = tuple("*" if isinstance(step, int) else step for step in path)
        if shape not in seen:
            seen.add(shape)
            yield path


@pytest.mark.parametrize("name", scraper_names((dict, list)))
def test_every_field_set_to_a_bad_value_gives_offers_or_a_parse_error_naming_it(name: str) -> None:
    scraper = all_scrapers()[name](env={}, replay=True)
    raw = recorded(name)
    places = list(first_places(name))
    chosen = places[:: -(-len(places) // PLACES)] if PLACES else places
    for path in chosen:
        check(scraper, replace_in(raw, path, None, delete=True))
        for bad in BAD:
            check(scraper, replace_in(raw, path, bad))
    assert chosen and len(chosen) >= min(len(places), PLACES or len(places)) // 2


def test_names_a_field_tells_a_field_from_the_wrappers_wording() -> None:
    assert names_a_field("cudo", "cudo: machineTypes[0] (x in y) has no 'gpuPriceHr'")
    assert names_a_field("cudo", "cudo: unexpected payload at field gpuPriceHr: a value has the wrong type")
    assert not names_a_field("cudo", "cudo: unexpected payload: a value has the wrong type")
    assert not names_a_field("cudo", "cudo: unexpected payload: a number is out of range")
    assert not names_a_field("cudo", "cudo: something went wrong")
    assert names_a_field("coreweave", "coreweave: layout changed: no 'GPU Component Cost Per Hour' price column")
    assert not names_a_field("coreweave", "coreweave: layout changed: the table has no rows")


@pytest.mark.parametrize("name", scraper_names((dict, list)))
@pytest.mark.parametrize("shape", [None, 0, "", "x", [], {}, [None], [{}], {"": None}])
def test_a_payload_of_the_wrong_shape_gives_a_parse_error(name: str, shape: Any) -> None:
    scraper = all_scrapers()[name](env={}, replay=True)
    with pytest.raises(ParseError, match=f"^{name}: ") as caught:
        scraper.parse_payload(shape)
    assert names_a_field(name, str(caught.value)), str(caught.value)


def test_require_number_names_the_provider_and_the_whole_path() -> None:
    payload = {"data": [{"price": {"hourly": 1.5}}, {"price": {"hourly": 10**400}}]}
    assert require_number(payload, "data", 0, "price", "hourly", provider="p") == 1.5
    assert require_number({"n": "2.5"}, "n", provider="p", strings=True) == 2.5
    for bad, shown_as in ((10**400, "1000000000"), (math.nan, "nan"), (True, "True"), ("2.5", "'2.5'"), ([1], "[1]")):
        with pytest.raises(ParseError, match=r"^p: data\[1\]\.price\.hourly should be a finite number, got ") as caught:
            require_number({"data": [{}, {"price": {"hourly": bad}}]}, "data", 1, "price", "hourly", provider="p")
        assert shown_as in str(caught.value)
    with pytest.raises(ParseError, match=r"^p: payload has no 'plans\[2\]\.gpus'$"):
        require_number({}, "gpus", provider="p", at="plans[2]")
    assert optional_number(None, "plans[2].hourly", provider="p") is None
    assert optional_number("0.5", "plans[2].hourly", provider="p", strings=True) == 0.5
    with pytest.raises(ParseError, match=r"^p: plans\[2\]\.hourly should be a finite number, got 'call us'$"):
        optional_number("call us", "plans[2].hourly", provider="p")


def test_positive_reads_an_optional_size_without_crashing() -> None:
    assert positive(8) == 8.0 and positive("24", strings=True) == 24.0
    for absent in (0, -1, None, True, math.inf, math.nan, 10**400, "8", [], {}):
        assert positive(absent) is None
    assert field_path("data", 3, "price", "hourly") == "data[3].price.hourly"


def test_names_in_refuses_what_is_not_a_name_instead_of_storing_its_text() -> None:
    assert names_in(["ewr", "lax", "ewr"], "plans[0].locations", provider="p") == ["ewr", "lax"]
    for bad in (None, "", 3, ["ewr"], {"id": "ewr"}):
        with pytest.raises(ParseError, match=r"^p: plans\[0\]\.locations\[1\] should be a non-empty string, got "):
            names_in(["ewr", bad], "plans[0].locations", provider="p")
    assert field_path("", "x", 0) == "x[0]"

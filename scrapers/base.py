"""The scraper contract: the ``ScrapedOffer`` record and the ``Scraper`` base class.

Why fetch and parse are apart: ``fetch`` does every byte of I/O (URL, method, query, headers,
pagination, credentials) and returns the raw payload; ``parse`` is a pure function of that
payload. Tests feed recorded payloads straight to ``parse``, and replay runs the real ``fetch``
against an httpx transport that answers from recordings.
"""

from __future__ import annotations

import linecache
import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, ClassVar, Final, NamedTuple

from scrapers.http import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_DOWNLOAD_BYTES, Http
from tracker.errors import (
    FetchError,
    MissingCredentials,
    ParseError,
    RobotsDisallowed,
    ScraperError,
)
from tracker.kinds import KINDS

__all__ = [
    "FIXTURE_KINDS",
    "KINDS",
    "SOURCE_KINDS",
    "STOCK_LEVEL",
    "FetchError",
    "Http",
    "PageScraper",
    "PartialOffers",
    "REFERENCE_CAPTURE",
    "Retired",
    "MissingCredentials",
    "ParseError",
    "RobotsDisallowed",
    "ScrapedOffer",
    "Scraper",
    "ScraperError",
    "UNREADABLE_PRICE",
    "as_list",
    "dig",
    "field_path",
    "free_count",
    "is_one_of",
    "names_in",
    "number",
    "numbered_by_price",
    "optional_number",
    "positive",
    "read_count",
    "read_price",
    "require",
    "require_number",
    "require_text",
    "paged_result",
    "shape_error",
    "shown",
    "unreadable",
]


#: Where a scraper's prices come from: a JSON/GraphQL ``api``, a rendered pricing ``page``, or a
#: ``marketplace summary`` (statistics over many sellers' bids, not one seller's price list).
SOURCE_KINDS: Final = ("api", "page", "marketplace summary")
#: What its bundled fixture and replay recording are: a real ``recording`` (possibly trimmed), a
#: ``reference`` (the real shape of what the provider serves, learnt from a public source that may
#: not be copied, filled with our own values), a ``handmade`` sample, or the provider's
#: ``api-reference`` example. Shown in the README table so only a real recording reads as one.
FIXTURE_KINDS: Final = ("recording", "reference", "handmade", "api-reference")

REPLAY_CREDENTIAL: Final = "replay-no-secret"
#: ``Scraper.default_interval_s``: the interval of a scraper that declares none of its own.
BASE_INTERVAL_S: Final = 3600


@dataclass(frozen=True, slots=True)
class ScrapedOffer:
    """One priced thing as a provider lists it, before normalisation.

    ``price_per_hour`` is for the whole instance (all its GPUs) in ``currency``; ``None``
    means "listed without a price" (e.g. "Contact sales"), never zero. ``gpu_count`` may be
    fractional for shared-GPU instances (an eighth of an A10, say). ``gpu`` is an optional
    canonical id hint for providers that only name an instance type; the pipeline still runs
    ``gpu_raw`` through the catalog when it is ``None``. Structural mistakes raise
    ``ParseError`` here; value plausibility (price <= 0, absurd prices) is the validate stage's
    job so that such rows are quarantined with a reason instead of failing the whole run.
    """

    provider: str
    sku: str
    gpu_raw: str
    gpu_count: float
    price_per_hour: float | None
    kind: str = "on_demand"
    region: str = ""
    country: str | None = None
    gpu_memory_gb: float | None = None
    vcpus: float | None = None
    ram_gb: float | None = None
    term_months: int = 0
    currency: str = "USD"
    available: bool | None = None
    gpu: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: GPUs (not instances) the provider says are free to rent now; ``None`` when it states no
    #: count. With a count, ``available`` is whether it is above zero.
    available_count: int | None = None

    def __post_init__(self) -> None:
        if not self.provider or not self.sku:
            raise ParseError(f"{self._where}: provider and sku must be non-empty")
        if not isinstance(self.gpu_raw, str) or not self.gpu_raw.strip():
            raise ParseError(f"{self._where}: gpu_raw must be a non-empty string")
        if self.kind not in KINDS:
            raise ParseError(f"{self._where}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.term_months and self.kind != "reserved":
            raise ParseError(f"{self._where}: only reserved offers may have term_months")
        if self.kind == "reserved" and self.term_months <= 0 and not self.extra.get("term_unstated"):
            raise ParseError(f"{self._where}: reserved offers need term_months > 0 (or extra['term_unstated'] when the provider prints no term)")
        if self.price_per_hour is not None and not isinstance(self.price_per_hour, (int, float)):
            raise ParseError(f"{self._where}: price_per_hour must be a number, got {self.price_per_hour!r}")
        if not isinstance(self.gpu_count, (int, float)):
            raise ParseError(f"{self._where}: gpu_count must be a number, got {self.gpu_count!r}")
        for name in ("gpu_memory_gb", "vcpus", "ram_gb"):
            value = getattr(self, name)
            if value is not None and number(value) is None:
                raise ParseError(f"{self._where}: {name} must be a finite number or absent, got {type(value).__name__}")
        if len(self.currency) != 3 or not self.currency.isalpha() or not self.currency.isupper():
            raise ParseError(f"{self._where}: currency must be an ISO 4217 code, got {self.currency!r}")
        if self.available_count is not None:
            if isinstance(self.available_count, bool) or not isinstance(self.available_count, int) or self.available_count < 0:
                raise ParseError(f"{self._where}: available_count must be a whole number >= 0 or absent, got {shown(self.available_count)}")
            if self.available is not (self.available_count > 0):
                raise ParseError(f"{self._where}: available must be whether available_count ({self.available_count}) is above zero")

    @property
    def _where(self) -> str:
        """How an error names the offer (built only for an error: ``__post_init__`` runs once per offer)."""
        return f"{self.provider or '?'}: offer {self.sku!r}"

    @property
    def price_per_gpu_hour(self) -> float | None:
        """Whole-instance price divided by the GPU count (``None`` when unpriced or no GPUs)."""
        if self.price_per_hour is None or not self.gpu_count:
            return None
        return self.price_per_hour / self.gpu_count


def field_path(*steps: str | int) -> str:
    """``("data", 3, "price", "hourly")`` -> ``"data[3].price.hourly"``: how messages name a field."""
    out = ""
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        elif step:
            out += f".{step}" if out else step
    return out


def shown(value: Any, limit: int = 40) -> str:
    """A payload value for a one-line message: its ``repr``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def require(
    payload: Any, *path: str | int, provider: str, kind: type | tuple[type, ...] | None = None, at: str = ""
) -> Any:
    """Walk ``payload`` along ``path`` or raise ``ParseError`` naming the provider and the missing piece.

    Parsers use it for every key they depend on, so a changed shape reports *what* is gone
    instead of a bare ``KeyError``. ``at`` is where ``payload`` sits in the whole answer
    (``"data[3]"``), so the message gives the full path (``data[3].price``).
    """
    node = payload
    walked: list[str | int] = [at] if at else []
    for step in path:
        walked.append(step)
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            raise ParseError(f"{provider}: payload has no {field_path(*walked)!r}") from None
    if kind is not None and not isinstance(node, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ParseError(f"{provider}: {field_path(*walked) or 'payload'} should be {names}, got {type(node).__name__}")
    return node


def require_number(payload: Any, *path: str | int, provider: str, at: str = "", strings: bool = False) -> float:
    """``require`` for a number the parser cannot do without: the finite float at ``path``, or a
    ``ParseError`` naming the provider and the field (booleans, NaN, infinities, ints too big
    for a float and, unless ``strings``, numeric strings are refused)."""
    value = require(payload, *path, provider=provider, at=at)
    result = number(value, strings=strings)
    if result is None:
        raise ParseError(f"{provider}: {field_path(at, *path)} should be a finite number, got {shown(value)}")
    return result


def require_text(row: Mapping[str, Any], key: str, *, provider: str, at: str = "") -> str:
    """The non-empty string at ``row[key]``, stripped, or a ``ParseError`` naming the provider and
    the field (``at`` is where ``row`` sits in the payload): for the names an offer cannot do without."""
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ParseError(f"{provider}: {field_path(at, key)} should be a non-empty string, got {shown(value)}")
    return value.strip()


def optional_number(value: Any, where: str, *, provider: str, strings: bool = False) -> float | None:
    """An optional number field already read (``where`` is its path): ``None`` when null, else what
    ``require_number`` accepts, or a ``ParseError`` naming the provider and ``where``."""
    return None if value is None else require_number(value, provider=provider, at=where, strings=strings)


def names_in(values: list[Any], where: str, *, provider: str) -> list[str]:
    """A list of names (regions, locations) as its distinct non-empty strings in order, or a
    ``ParseError`` naming ``where[i]`` for an entry that is not one (never ``str()`` of it)."""
    for i, value in enumerate(values):
        if not isinstance(value, str) or not value.strip():
            raise ParseError(f"{provider}: {field_path(where, i)} should be a non-empty string, got {shown(value)}")
    return list(dict.fromkeys(values))


def positive(value: Any, *, strings: bool = False) -> float | None:
    """A finite number above zero, or ``None``: for optional sizes (vCPUs, RAM, GPU memory, a
    GPU count) where 0, a negative number or anything that is not a number means "not stated"."""
    result = number(value, strings=strings)
    return result if result is not None and result > 0 else None


def number(value: Any, *, strings: bool = False) -> float | None:
    """A finite number, or ``None``: for optional numeric fields.

    Booleans, NaN, infinities, ints too big for a float and (unless ``strings``) numeric
    strings are not numbers here, so a changed field reads as absent instead of crashing.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and strings:
        try:
            value = float(value.replace(",", "").strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    try:
        result = float(value)
    except OverflowError:
        return None
    return result if math.isfinite(result) else None


#: ``extra`` key of an offer the parser could not take as it stands because one of its own values
#: (its price, its GPU count) is missing, not a number, not finite or negative: a one-line reason
#: naming the field. The validate stage quarantines the offer with that reason, so one bad row
#: neither vanishes nor fails the provider's whole run; a broken *structure* (a container gone or
#: of the wrong type) is still a ``ParseError``.
UNREADABLE_PRICE: Final = "unreadable_price"
_ABSENT: Final = object()


def _walk(node: Any, path: tuple[str | int, ...]) -> Any:
    """``node`` along ``path`` (the ``require`` walk), or ``_ABSENT`` when a step is missing."""
    for step in path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return _ABSENT
    return node


def unreadable(what: str, where: str, value: Any = _ABSENT, why: str = "not a number") -> dict[str, str]:
    """``{UNREADABLE_PRICE: reason}``: what leaves one offer for quarantine, the reason naming its
    ``what`` field ("price", "GPU count") at ``where`` (a payload path, or a page's column and row)
    and the value seen in it (none: the field is missing). Every parser words it so, whether it
    reads JSON or a printed page, so a quarantine row always says which field of which offer."""
    if value is _ABSENT:
        return {UNREADABLE_PRICE: f"{what} field {where} is missing"}
    return {UNREADABLE_PRICE: f"{what} field {where} holds {shown(value)}, {why}"}


def read_price(
    node: Any, *path: str | int, at: str = "", required: bool = False, strings: bool = True
) -> tuple[float | None, dict[str, str]]:
    """One offer's price field as ``(price, extra)``: ``node`` itself, or ``node`` along ``path``
    (``at`` is where ``node`` sits in the payload, for the field's name).

    A finite number or (unless ``strings`` is false: APIs that send JSON numbers) a numeric
    string gives ``(it, {})`` (zero too: the parser decides what 0
    means); absent (``None`` or ``""``) gives ``(None, {})`` (listed without a price, or not
    offered), or a reason when the price is ``required``. Anything else leaves the offer to be
    quarantined, ``extra[UNREADABLE_PRICE]`` saying why and naming the field: a missing field along
    ``path`` or a value that is no number gives ``(None, ...)``; a negative number is returned as it
    is, with the reason, so the quarantine row keeps it."""
    where = field_path(at, *path) or "price"
    value = _walk(node, path)
    if value is _ABSENT:
        return None, unreadable("price", where)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, ({UNREADABLE_PRICE: f"price field {where} is empty ({shown(value)})"} if required else {})
    price = number(value, strings=strings)
    if price is None:
        return None, unreadable("price", where, value)
    if price < 0:
        return price, unreadable("price", where, value, "a negative price")
    return price, {}


def read_count(
    node: Any, *path: str | int, at: str = "", zero: bool = True, strings: bool = True
) -> tuple[float, dict[str, str]]:
    """One offer's GPU count as ``(count, extra)``, like ``read_price``: a finite number >= 0 (or a
    numeric string) gives ``(it, {})`` (the parser decides what 0 means, unless ``zero`` is false:
    then 0 is a reason too); missing, null or no number gives ``(0.0, {UNREADABLE_PRICE: reason})``,
    a negative number ``(it, {...})``."""
    where = field_path(at, *path) or "GPU count"
    value = _walk(node, path)
    if value is _ABSENT:
        return 0.0, unreadable("GPU count", where)
    count = number(value, strings=strings)
    if count is None:
        return 0.0, unreadable("GPU count", where, value)
    if count < 0 or (count == 0 and not zero):
        return count, unreadable("GPU count", where, value, "not a positive count")
    return count, {}


#: ``extra`` key of the provider's own word for an offer's stock level, where it states one
#: ("High", "scarce", "limited", "out_of_stock"...): kept as said, beside ``available``.
STOCK_LEVEL: Final = "stock"


def free_count(value: Any, per_unit: float = 1) -> int | None:
    """A provider's count of free units as GPUs free now (``ScrapedOffer.available_count``):
    ``value`` (a whole number >= 0, or a numeric string of one) times ``per_unit`` (the GPUs of one
    unit, when it counts instances), or ``None`` when it is absent, no count or not a whole number of
    GPUs (shared-GPU units): unknown, never 0."""
    count = number(value, strings=True)
    if count is None or count < 0 or not count.is_integer() or per_unit <= 0:
        return None
    gpus = count * per_unit
    return int(gpus) if gpus.is_integer() else None


def dig(node: Any, *path: str | int) -> Any:
    """``node[p0][p1]...``, or ``None`` when a step is missing or its parent is not a container:
    the safe form of ``(x.get("a") or {}).get("b")`` for optional fields."""
    for step in path:
        if isinstance(node, Mapping) and not isinstance(step, int):
            node = node.get(step)
        elif isinstance(node, list) and isinstance(step, int) and -len(node) <= step < len(node):
            node = node[step]
        else:
            return None
    return node


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a list, else ``[]``: for optional lists a payload may drop or retype."""
    return value if isinstance(value, list) else []


def is_one_of(value: Any, allowed: Collection[Any]) -> bool:
    """``value in allowed`` that is ``False`` (not a ``TypeError``) for an unhashable value."""
    try:
        return value in allowed
    except TypeError:
        return False


#: What Python raises when a parser meets a shape it does not expect (a key gone, a string where
#: a number was, a number too big for an int, a list cut short, nesting too deep).
SHAPE_ERRORS: Final = (LookupError, TypeError, AttributeError, ValueError, ArithmeticError, RecursionError)
_QUOTED_NAME = re.compile(r"""\[\s*["']([^"'\]]{1,60})["']\s*\]|\.get\(\s*["']([^"']{1,60})["']""")
_PLAIN_WORDS: Final = {
    KeyError: "a field is missing",
    IndexError: "a list is shorter than expected",
    TypeError: "a value has the wrong type",
    AttributeError: "a value has the wrong type",
    OverflowError: "a number is out of range",
    ZeroDivisionError: "a number is zero",
    RecursionError: "the payload is nested too deeply",
}


def shape_error(provider: str, exc: BaseException) -> ParseError:
    """A ``ParseError`` for a parser's Python exception, naming the provider and the field.

    The field comes from the exception (a missing key) or from the parser's own source line
    where it failed (the quoted keys it reads there), so the message says *what* changed in the
    payload without a Python exception name or a value from it.
    """
    what = next((words for kind, words in _PLAIN_WORDS.items() if isinstance(exc, kind)), "a value is malformed")
    fields: list[str] = []
    if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], (str, int)):
        fields.append(str(exc.args[0]))
    lines: list[str] = []
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if f"{os.sep}scrapers{os.sep}" in filename:
            lines.append(linecache.getline(filename, tb.tb_lineno))
        tb = tb.tb_next
    # the innermost parser line that reads a quoted key names the field
    line = next((text for text in reversed(lines) if _QUOTED_NAME.search(text)), "")
    for match in _QUOTED_NAME.finditer(line):
        name = match.group(1) or match.group(2)
        if name not in fields:
            fields.append(name)
    where = f" at field {'/'.join(repr(f)[1:-1] for f in fields[:3])}" if fields else ""
    return ParseError(f"{provider}: unexpected payload{where}: {what}")


def numbered_by_price(offers: list[ScrapedOffer]) -> list[ScrapedOffer]:
    """Offers sharing an identity (sku, kind, term) numbered ``#1``, ``#2``... by price: an
    aggregator's listing of one cloud's alike rows that differ only in price, each its own offer."""
    from dataclasses import replace

    groups: dict[tuple[str, str, str, int], list[ScrapedOffer]] = {}
    for o in offers:
        groups.setdefault((o.sku, o.region, o.kind, o.term_months), []).append(o)
    out: list[ScrapedOffer] = []
    for group in groups.values():
        if len(group) == 1:
            out += group
            continue
        group.sort(key=lambda o: (o.price_per_hour is None, o.price_per_hour or 0.0))
        out += [replace(o, sku=f"{o.sku}#{i}") for i, o in enumerate(group, start=1)]
    return out


SEGMENTS = ("hyperscaler", "neocloud", "marketplace")


class Retired(NamedTuple):
    """Why and since when a provider is no longer collected (its source shut down or moved
    beyond what this scraper reads). Its stored history stays readable; it is listed apart."""

    on: date
    reason: str


class PartialOffers(list):  # type: ignore[type-arg]
    """What ``parse`` returns when it knows the provider answered only part of its market (a
    capped search, a region that did not answer): the offers seen are observed, the offers not
    seen stay unknown, never read as delisted. ``reason`` says why, for the scrape run."""

    def __init__(self, offers: Collection[ScrapedOffer] = (), *, reason: str) -> None:
        super().__init__(offers)
        self.reason = reason


def paged_result(provider: str, offers: list[ScrapedOffer], incomplete: str | None, empty: str) -> list[ScrapedOffer]:
    """What ``parse`` returns from a paged answer: ``PartialOffers`` when paging stopped early
    (``incomplete`` says why: the offers not read are unknown, never delisted), else the offers;
    a complete answer without any is a ``ParseError`` (``empty`` says what held none)."""
    if incomplete:
        return PartialOffers(offers, reason=f"{provider}: {incomplete}")
    if not offers:
        raise ParseError(f"{provider}: {empty}")
    return offers


class Scraper(ABC):
    """Base class of every provider plugin.

    Subclasses set ``name`` (stable, lower-case, used in the database and config),
    ``display_name``, ``homepage``, ``endpoint`` (documentation of what is called) and
    ``credentials`` (the env var names it cannot run without). ``optional_credentials`` are
    used when present. Secrets are read through ``credential()`` only, so replay can stand
    in a placeholder and nothing else ever sees the value.
    """

    name: ClassVar[str]
    display_name: ClassVar[str]
    homepage: ClassVar[str] = ""
    endpoint: ClassVar[str] = ""
    credentials: ClassVar[tuple[str, ...]] = ()
    optional_credentials: ClassVar[tuple[str, ...]] = ()
    #: Pricing kinds this scraper can emit, and caveats a user must know (for the README table).
    kinds: ClassVar[tuple[str, ...]] = ("on_demand",)
    caveats: ClassVar[str] = ""
    #: One of ``SOURCE_KINDS`` and one of ``FIXTURE_KINDS``; every built-in declares both (the
    #: contract tests check it), "" means undeclared (shown as "?" in the README table).
    source_kind: ClassVar[str] = ""
    fixture_kind: ClassVar[str] = ""
    #: How its request was checked against what the provider really serves: "recording: <whose
    #: capture>", "reference: <the public capture whose shape its fixture follows>", "API
    #: reference: <the provider's documentation>" or "public client: <a named project that makes
    #: the same request>" (the README table shows it).
    checked_by: ClassVar[str] = ""
    #: Default schedule interval in seconds. Keeping the base value declares none, and the
    #: settings' ``default_interval`` applies; another value is the provider's own (the rule:
    #: ``Settings.interval_for``).
    default_interval_s: ClassVar[int] = BASE_INTERVAL_S
    #: The exact hosts every request, redirect and followed link must go to (https only), beside
    #: those named in ``homepage`` and ``endpoint`` (see ``allowed_hosts``).
    hosts: ClassVar[tuple[str, ...]] = ()
    #: Decoded bytes one response body may have, and one download to disk (config:
    #: ``providers.<name>.max_body_mb`` / ``max_download_mb``).
    max_body_bytes: ClassVar[int] = DEFAULT_MAX_BODY_BYTES
    max_download_bytes: ClassVar[int] = DEFAULT_MAX_DOWNLOAD_BYTES
    #: Providers that price one GPU and rent n of them at n times the price (offers with
    #: ``gpu_count`` 1) name the ``extra`` field of each offer that holds the largest n it can
    #: be rented as (the provider's own limit, from the payload); "" for whole-instance prices.
    per_gpu_limit_field: ClassVar[str] = ""
    #: Set when the provider is no longer collected (see ``Retired``); None while active.
    retired: ClassVar[Retired | None] = None
    #: Market segment, one of ``SEGMENTS``: ``hyperscaler``, ``neocloud`` (a GPU cloud selling its own
    #: capacity at list prices) or ``marketplace`` (hosts' or other clouds' capacity in one book). The
    #: rental index's segment series group sellers by it (``tracker.analysis.index``); every
    #: built-in declares one (a contract test checks it).
    segment: ClassVar[str] = ""

    def __init__(self, env: Mapping[str, str] | None = None, *, replay: bool = False) -> None:
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.replay = replay
        self._runtime_secrets: list[str] = []

    @classmethod
    def allowed_hosts(cls) -> tuple[str, ...]:
        """The exact hosts this scraper may reach: ``hosts`` plus every host named in ``homepage``
        and ``endpoint`` (a templated one, ``{region}.example.com``, must be listed in ``hosts``)."""
        named = re.findall(r"https://([A-Za-z0-9{}<>,.-]+)", f"{cls.homepage} {cls.endpoint}")
        found = {h.lower().strip(".") for h in (*named, *cls.hosts)}
        return tuple(sorted(h for h in found if "." in h and not set(h) & set("{}<>")))

    def remember_secret(self, value: str) -> None:
        """Register a secret obtained while fetching (an OAuth access token, say) so that the
        pipeline scrubs it from any error message, like the configured credentials."""
        if value:
            self._runtime_secrets.append(value)

    def secrets(self) -> list[str]:
        """Every secret value this scraper holds: configured credentials and runtime tokens."""
        names = (*self.credentials, *self.optional_credentials)
        return [v for n in names if (v := self.env.get(n))] + list(self._runtime_secrets)

    def missing_credentials(self) -> list[str]:
        """Names of required env vars that are unset (always empty in replay mode)."""
        if self.replay:
            return []
        return [n for n in self.credentials if not self.env.get(n)]

    def check_credentials(self) -> None:
        """Raise ``MissingCredentials`` when a required env var is unset."""
        missing = self.missing_credentials()
        if missing:
            raise MissingCredentials(self.name, missing)

    def credential(self, env_name: str) -> str | None:
        """The secret behind ``env_name``; a placeholder in replay mode so no key is needed."""
        if self.replay:
            return REPLAY_CREDENTIAL
        return self.env.get(env_name) or None

    @abstractmethod
    async def fetch(self, http: Http) -> Any:
        """Do all the HTTP for one collection and return the raw payload ``parse`` takes."""

    @abstractmethod
    def parse(self, raw: Any) -> list[ScrapedOffer]:
        """Turn a raw payload into offers. Pure: no I/O, no clock, no globals."""

    def parse_payload(self, raw: Any) -> list[ScrapedOffer]:
        """``parse``, with any Python exception a malformed payload provokes turned into a
        ``ParseError`` naming the provider and the field: what the collector calls."""
        try:
            return self.readable(self.parse(raw))
        except ScraperError:
            raise
        except SHAPE_ERRORS as exc:
            raise shape_error(self.name, exc) from exc

    def readable(self, offers: list[ScrapedOffer]) -> list[ScrapedOffer]:
        """``offers``, unless every one of them is unreadable (``extra[UNREADABLE_PRICE]``), or
        every priced offer of one ``price_group`` (one kind, or a page's price column) when there
        are several: then the field itself changed (renamed, retyped, a column reworded) rather
        than one offer's value, which is a ``ParseError`` naming the field, not a run that
        quarantines a whole price list while the other kinds are stored. Offers listed without a
        price ("Contact sales") say nothing either way and are not counted in a group."""
        if offers and all(o.extra.get(UNREADABLE_PRICE) for o in offers):
            raise ParseError(f"{self.name}: no offer is readable ({len(offers)} listed): {offers[0].extra[UNREADABLE_PRICE]}")
        groups: dict[str, list[ScrapedOffer]] = {}
        for o in offers:
            if o.price_per_hour is not None or o.extra.get(UNREADABLE_PRICE):
                groups.setdefault(self.price_group(o), []).append(o)
        for label, priced in groups.items():
            if len(priced) > 1 and all(o.extra.get(UNREADABLE_PRICE) for o in priced):
                raise ParseError(f"{self.name}: no {label} offer is readable ({len(priced)} priced): {priced[0].extra[UNREADABLE_PRICE]}")
        return offers

    def price_group(self, offer: ScrapedOffer) -> str:
        """The offers ``readable`` judges together, priced from one field of the payload (one
        column of a page): one group per kind and term, unless a scraper reads two prices of one
        kind (fixed and dynamic on-demand prices, say) and says so here."""
        return f"{offer.kind} ({offer.term_months} months)" if offer.term_months else offer.kind

    def offer(self, **fields: Any) -> ScrapedOffer:
        """Shorthand for ``ScrapedOffer(provider=self.name, ...)``."""
        return ScrapedOffer(provider=self.name, **fields)


#: ``Scraper.checked_by`` of a page whose reference fixture follows getcomputable/gpu-index's 2026
#: observatory capture of it (that project reserves its raw observations: its structure only).
REFERENCE_CAPTURE: Final = ("reference: the 2026 shape of getcomputable/gpu-index's observatory capture "
                            "(structure only, own values)")


class PageScraper(Scraper):
    """A provider read from one public HTML pricing page (no credentials): ``fetch`` gets
    ``pricing_url`` (after robots.txt); ``parse`` reads the page."""

    pricing_url: ClassVar[str]
    source_kind: ClassVar[str] = "page"

    async def fetch(self, http: Http) -> str:
        return await http.get_page(self.pricing_url)

"""What each built-in scraper declares about its collection interval (``default_interval_s``),
as a table: reading it imports no scraper module (each brings the HTTP client and the HTML
parser), so a reading command that needs every stored provider's interval
(``tracker.analysis.grid.scrape_intervals``) starts without them. A test holds the table equal
to the classes; plugins are not in it and are looked up through the registry.

``declared_interval`` is the scraper's part of the one interval rule
(``Settings.interval_for``): a scraper that keeps the base class's ``default_interval_s``
declares nothing, so ``default_interval`` from the settings applies to it; only an interval of
its own (aws: a daily bulk file) stands unless the config names one.
"""

from __future__ import annotations

from typing import Any

#: ``Scraper.default_interval_s``: the interval of a scraper that declares none of its own.
BASE_INTERVAL_S = 3600

#: ``default_interval_s`` of every built-in scraper, by provider name.
DECLARED_INTERVALS: dict[str, int] = {
    "akash": 3600, "aws": 86400, "aws_spot": 3600, "azure": 3600, "coreweave": 3600, "crusoe": 3600, "cudo": 3600,
    "datacrunch": 3600, "digitalocean": 3600, "gcp": 3600, "hyperbolic": 3600, "hyperstack": 3600, "jarvislabs": 3600,
    "lambda": 3600, "linode": 3600, "modal": 3600, "nebius": 3600, "oci": 3600, "paperspace": 3600, "runpod": 3600,
    "scaleway": 3600, "tensordock": 3600, "vastai": 3600, "verda": 3600, "voltagepark": 3600, "vultr": 3600,
}


def declared_interval(name: str, cls: Any = None) -> int | None:
    """Seconds the scraper ``name`` declares as its own collection interval, or None when it
    declares none (keeps ``BASE_INTERVAL_S``) or no scraper has that name (an imported archive's
    provider). ``cls``: the scraper class when the caller holds it (a test's or an embedding
    application's, which need not be registered); else a built-in is read from the table and a
    plugin is found through the registry (which imports only the plugins)."""
    if cls is None and name in DECLARED_INTERVALS:
        seconds = DECLARED_INTERVALS[name]
    else:
        if cls is None:
            from scrapers.registry import find

            cls = find(name)
        seconds = getattr(cls, "default_interval_s", BASE_INTERVAL_S)
    return int(seconds) if seconds != BASE_INTERVAL_S else None

"""What each built-in scraper declares about itself (``display_name``, ``credentials``,
``optional_credentials``, ``kinds``, ``default_interval_s``), as a table: reading it imports no
scraper module (each brings the HTTP client and the HTML parser), so a reading command that
needs every provider's declarations starts without them: ``gpu-tracker providers`` (through
``scrapers.registry.declared_scrapers``, which adds the plugins), the analysis' collection
intervals (``tracker.analysis.grid.scrape_intervals``). A test holds the table equal to the
classes; plugins are not in it and are looked up through the registry.

``declared_interval`` is the scraper's part of the one interval rule
(``Settings.interval_for``): a scraper that keeps the base class's ``default_interval_s``
declares nothing, so ``default_interval`` from the settings applies to it; only an interval of
its own (aws: a daily bulk file) stands unless the config names one.
"""

from __future__ import annotations

from typing import Any, NamedTuple

#: ``Scraper.default_interval_s``: the interval of a scraper that declares none of its own.
BASE_INTERVAL_S = 3600


class Declared(NamedTuple):
    """A scraper's class attributes that say what it is, without its code (the same names as
    on ``scrapers.base.Scraper``, so a reader takes either)."""

    name: str
    display_name: str
    credentials: tuple[str, ...]
    optional_credentials: tuple[str, ...]
    kinds: tuple[str, ...]
    default_interval_s: int


_D = Declared
#: Every built-in scraper's declarations, by provider name.
DECLARED: dict[str, Declared] = {d.name: d for d in (
    _D("akash", "Akash Network", (), (), ("community",), 3600),
    _D("aws", "Amazon Web Services (EC2)", (), (), ("on_demand",), 86400),
    _D("aws_spot", "Amazon Web Services (EC2 Spot)", (), (), ("spot",), 3600),
    _D("azure", "Microsoft Azure", (), (), ("on_demand", "spot"), 3600),
    _D("coreweave", "CoreWeave", (), (), ("on_demand",), 3600),
    _D("crusoe", "Crusoe Cloud", (), (), ("on_demand", "spot", "reserved"), 3600),
    _D("cudo", "Cudo Compute", (), ("CUDO_API_KEY",), ("on_demand",), 3600),
    _D("datacrunch", "DataCrunch (pricing page)", (), (), ("on_demand", "spot"), 3600),
    _D("digitalocean", "DigitalOcean", ("DIGITALOCEAN_TOKEN",), (), ("on_demand",), 3600),
    _D("gcp", "Google Cloud", ("GCP_API_KEY",), (), ("on_demand", "spot", "reserved"), 3600),
    _D("hyperbolic", "Hyperbolic", (), (), ("on_demand",), 3600),
    _D("hyperstack", "Hyperstack", (), (), ("on_demand", "spot", "reserved"), 3600),
    _D("jarvislabs", "JarvisLabs", ("JARVISLABS_TOKEN",), (), ("on_demand", "spot"), 3600),
    _D("lambda", "Lambda", (), (), ("on_demand",), 3600),
    _D("linode", "Akamai Cloud (Linode)", (), (), ("on_demand",), 3600),
    _D("modal", "Modal", (), (), ("on_demand",), 3600),
    _D("nebius", "Nebius", (), (), ("on_demand", "spot"), 3600),
    _D("oci", "Oracle Cloud (OCI)", (), (), ("on_demand",), 3600),
    _D("paperspace", "Paperspace", (), (), ("on_demand", "reserved"), 3600),
    _D("runpod", "RunPod", (), ("RUNPOD_API_KEY",), ("on_demand", "community", "spot", "reserved"), 3600),
    _D("scaleway", "Scaleway", (), (), ("on_demand",), 3600),
    _D("tensordock", "TensorDock", (), (), ("on_demand",), 3600),
    _D("vastai", "Vast.ai", (), ("VAST_API_KEY",), ("on_demand", "spot"), 3600),
    _D("verda", "Verda (DataCrunch)", ("VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET"), (), ("on_demand", "spot"), 3600),
    _D("voltagepark", "Voltage Park", (), (), ("on_demand",), 3600),
    _D("vultr", "Vultr", (), (), ("on_demand", "spot"), 3600),
)}
#: ``default_interval_s`` of every built-in scraper, by provider name.
DECLARED_INTERVALS: dict[str, int] = {name: d.default_interval_s for name, d in DECLARED.items()}


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

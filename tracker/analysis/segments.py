"""Market segments: who a provider is, which moves its price more than anything else.

``hyperscaler`` (AWS, Azure, Google Cloud, Oracle), ``neocloud`` (GPU clouds selling their own
capacity at list prices) and ``marketplace`` (hosts or other clouds' capacity sold through one
book: Vast.ai, community clouds, aggregators). Each provider plugin declares its segment
(``Scraper.segment``); a provider known only from an imported archive takes it from
``IMPORTED`` below; a provider in neither has none (it counts in an index across segments but
in no segment series). A seller's community capacity (RunPod's Community Cloud) is a
marketplace whatever its provider's segment.
"""

from __future__ import annotations

from functools import cache

SEGMENTS = ("hyperscaler", "neocloud", "marketplace")

#: Segments of providers that no scraper collects, by the name an archive import stores them under
#: (``tracker.analysis.imports.aliases``).
IMPORTED: dict[str, str] = {
    "primecompute": "marketplace",
    "prime intellect": "marketplace",
    "primeintellect": "marketplace",
    "fluidstack": "neocloud",
    "ori": "neocloud",
    "denvr": "neocloud",
}


@cache
def _declared() -> dict[str, str]:
    from scrapers.registry import all_scrapers

    return {name: cls.segment for name, cls in all_scrapers().items() if cls.segment}


def segment_of(provider: str, kind: str | None = None) -> str | None:
    """The segment of ``provider``'s offers of ``kind`` (community capacity: a marketplace)."""
    if kind == "community":
        return "marketplace"
    return _declared().get(provider) or IMPORTED.get(provider)

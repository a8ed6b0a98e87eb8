"""Price kinds as users type them (``--kind on-demand``, ``?kind=preemptible``), for the CLI and the web.

``KINDS`` is the one list of kinds (scrapers emit them, the store keeps them); ``KIND_ALIASES`` maps the other
spellings people use to it. ``canonical_kind`` reads one spelling, ``check_kinds`` rejects
anything that is not a kind with a ``ConfigError`` naming the option, and ``normalise_kinds``
is the one reading of a kind choice everywhere (the default set, ``all``, commas).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from tracker.errors import ConfigError

__all__ = ["DEFAULT_KINDS", "DEFAULT_KINDS_TEXT", "HOURS_PER_MONTH", "KINDS", "KIND_ALIASES", "canonical_kind", "check_kinds",
           "normalise_kinds"]

#: Hours in a billing month, the cloud convention (365 * 24 / 12): monthly prices, break-even months.
HOURS_PER_MONTH: Final = 730.0

#: Pricing kinds. ``spot`` covers interruptible/preemptible/bid floors; ``community`` is
#: marketplace community hosts sold on demand; ``reserved`` has ``term_months``, or 0 with
#: ``extra["term_unstated"]`` when the provider prints no term.
KINDS: Final = ("on_demand", "spot", "community", "reserved")

#: The kinds every question considers unless told otherwise (CLI, API, dashboard, alerts, MCP):
#: prices anyone can rent now without interruption. Spot and reserved need ``--kind``/``kind=``.
DEFAULT_KINDS: Final[tuple[str, ...]] = ("on_demand", "community")
#: How outputs state that default.
DEFAULT_KINDS_TEXT: Final = "on-demand and community prices (spot and reserved with --kind spot, --kind reserved or --kind all)"

KIND_ALIASES: Final = {"on-demand": "on_demand", "ondemand": "on_demand", "od": "on_demand", "preemptible": "spot",
                       "interruptible": "spot"}


def canonical_kind(text: str) -> str:
    """``On-Demand`` -> ``on_demand``, ``preemptible`` -> ``spot``; anything else lower-cased with '-' as '_'."""
    k = text.lower()
    return KIND_ALIASES.get(k, k.replace("-", "_"))


def check_kinds(kinds: Sequence[str], option: str = "--kind", hint: str = "") -> None:
    """``ConfigError("<option>: <bad> is not one of on-demand, spot, community, reserved<hint>")``
    unless every one of ``kinds`` (already canonical) is a kind."""
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ConfigError(f"{option}: {', '.join(bad)} is not one of on-demand, spot, community, reserved{hint}")


def normalise_kinds(kinds: Sequence[str] | None, option: str = "--kind") -> tuple[str, ...] | None:
    """The one reading of a kind choice, for every surface (CLI, API, dashboard, MCP, exports):
    repeated or comma-separated spellings -> canonical kinds; nothing -> ``DEFAULT_KINDS``, so no
    surface answers with a spot price where another answers on demand; ``all`` -> ``None`` (every
    kind). Anything else is a ``ConfigError`` naming ``option``."""
    out: list[str] = []
    for k in kinds or ():
        for part in k.split(","):
            part = part.strip()
            if part.lower() == "all":
                return None
            if part:
                out.append(canonical_kind(part))
    if not out:
        return DEFAULT_KINDS
    check_kinds(out, option, hint=" (or all)")
    return tuple(dict.fromkeys(out))

"""Series keys of an aggregator's offers: how the roll-ups keep apart the clouds it names.

An aggregator (GetDeploying, Shadeform, Compute Pulse) stores other clouds' offers under its own
name, with the cloud in ``offer.extra["via"]``. Market figures count such a row as that cloud's
when we collect the cloud directly (the rule: ``tracker.analysis.aggregators``), so the roll-ups
must not blend an aggregator's clouds into one figure. Each (aggregator, cloud) pair is its own
roll-up series, under a provider label named ``<aggregator>/<cloud>`` (``key_name``); the
aggregator's offers without a cloud, and every other provider's, stay under the provider's own
label. Raw intervals keep the provider's own id; ``db.reads.offer_keys`` says which key each of
an aggregator's offers rolls up under, for the roll-up writer and the
raw-interval reads alike.

A composite label exists once an aggregator stored an offer through that cloud (the store
creates it with the offer's other labels), so a provider without such labels costs nothing here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

#: Between the aggregator's and the cloud's name in a series key (provider names are plain words).
SEP = "/"
#: ``offer.extra`` key naming the cloud an aggregator's offer is rented from.
VIA_KEY = "via"


def key_name(provider: str, via: str | None) -> str:
    """The series key of an offer of ``provider`` rented through ``via`` (its own name without one)."""
    return f"{provider}{SEP}{via}" if via and via != provider else provider


def split(key: str) -> tuple[str, str | None]:
    """``(provider, via)`` of a series key (``via`` is ``None`` for a provider's own key)."""
    provider, sep, via = key.partition(SEP)
    return (provider, via) if sep and via else (key, None)


def via_of(extra: Any) -> str | None:
    """The cloud an offer's ``extra`` (a dict or its JSON text) names, if any."""
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except ValueError:
            return None
    via = extra.get(VIA_KEY) if isinstance(extra, dict) else None
    return via if isinstance(via, str) and via else None


def key_labels(provider: str, extras: Iterable[Any]) -> set[tuple[str, str]]:
    """The ``label`` rows (space, name) of the composite keys that offers of ``provider`` with
    these ``extra`` go to: what a writer ensures beside the offers' other labels."""
    return {("provider", key_name(provider, v)) for e in extras if (v := via_of(e)) and v != provider}


def keys_of(provider_names: Mapping[int, str]) -> dict[str, dict[str, int]]:
    """Per aggregator with composite keys, ``{via: key label id}``, from the provider labels."""
    out: dict[str, dict[str, int]] = {}
    for i, name in provider_names.items():
        provider, via = split(name)
        if via is not None:
            out.setdefault(provider, {})[via] = i
    return out


def owners(provider_names: Mapping[int, str]) -> dict[int, int]:
    """Each composite key's id -> its aggregator's label id (keys whose aggregator has no label are left out)."""
    ids = {name: i for i, name in provider_names.items()}
    out = {}
    for i, name in provider_names.items():
        provider, via = split(name)
        if via is not None and provider in ids:
            out[i] = ids[provider]
    return out


def expand(provider_names: Mapping[int, str], provider_ids: Iterable[int] | None) -> list[int] | None:
    """A provider filter's label ids with each provider's composite keys added (roll-up reads
    filter on keys); ``None`` (no filter) stays ``None``."""
    if provider_ids is None:
        return None
    wanted = list(provider_ids)
    chosen = {provider_names[i] for i in wanted if i in provider_names}
    extra = [i for i, name in provider_names.items() if split(name)[1] is not None and split(name)[0] in chosen]
    return wanted + sorted(set(extra) - set(wanted))


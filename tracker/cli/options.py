"""Options several commands declare alike, and the checks that turn a bad value into one line.

Light on purpose (see ``tracker.cli.common``): the catalog and the database are imported only
when a value is checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tracker.cli.common import Format
from tracker.cli.render import did_you_mean
from tracker.errors import ConfigError
from tracker.kinds import DEFAULT_KINDS, DEFAULT_KINDS_TEXT, normalise_kinds

if TYPE_CHECKING:

    from db.reader import Reader
    from tracker.cli.common import State
KIND_HELP = "on-demand, spot, community, reserved or all (repeatable; default: on-demand and community)."
GPU_HELP = "A family (H100 = every H100 variant) or a canonical id (H100-SXM)."

ProvidersOption = Annotated[list[str] | None, typer.Option("--provider", "-p", help="Only these providers (repeatable).")]
KindsOption = Annotated[list[str] | None, typer.Option("--kind", "-k", help=KIND_HELP)]
RegionsOption = Annotated[list[str] | None, typer.Option("--region", "-r", help="Provider region code (repeatable).")]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format (tsv: the table's columns, raw values).")]
WideOption = Annotated[bool, typer.Option("--wide", help="Show every column (a terminal table otherwise shows what fits).")]
ColumnsOption = Annotated[str | None, typer.Option(
    "--columns", help="Show these columns in this order (comma-separated keys, e.g. gpu,provider,price_per_gpu_hour).")]


GpusOption = Annotated[str | None, typer.Option(
    "--gpus", help="GPUs per offer: 8, a range 2..8, or at least 4.. (also --gpu H100:8).")]
MinGpuMemoryOption = Annotated[float | None, typer.Option(
    "--min-gpu-memory", metavar="GB", help="At least this much memory per GPU (the provider's figure, else the catalog's).")]
MaxPriceOption = Annotated[float | None, typer.Option("--max-price", metavar="USD", help="At most this price per GPU-hour.")]
MaxAgeOption = Annotated[str | None, typer.Option(
    "--max-age", metavar="SPAN", help="Only prices observed within this span: 30m, 6h, 2d.")]


#: ``--kind`` values -> the kinds a command covers (``tracker.kinds.normalise_kinds``).
chosen_kinds = normalise_kinds


def kind_names(kinds: Sequence[str] | None) -> str:
    """The kinds a table covers, short enough for its title: ``on-demand, community`` or ``every kind``."""
    return "every kind" if kinds is None else ", ".join(k.replace("_", "-") for k in kinds)


def kinds_text(kinds: Sequence[str] | None) -> str:
    """What a result covers, for its title: the default stated with how to widen it."""
    if kinds is None:
        return "every kind"
    if tuple(kinds) == DEFAULT_KINDS:
        return DEFAULT_KINDS_TEXT
    return ", ".join(k.replace("_", "-") for k in kinds) + " prices"


def resolve_gpu_query(gpu: str | None) -> list[str] | None:
    """``--gpu H100`` -> every H100 variant; a canonical id -> itself; unknown -> error with a did-you-mean."""
    if not gpu:
        return None
    from tracker.catalog.specs import gpu_ids_matching, load_catalog

    ids = gpu_ids_matching(gpu)
    if not ids:
        hint = did_you_mean(gpu, load_catalog())
        raise ConfigError(f"--gpu: {gpu!r} matches no GPU in the catalog{hint} (list them with `gpu-tracker catalog`)")
    return ids


def check_providers(reader: Reader, names: Sequence[str] | None, option: str = "--provider") -> list[str] | None:
    """The names as the store spells them (``RunPod`` -> ``runpod``: provider names are not
    case-sensitive) when each is a provider the store has seen or a registered scraper;
    otherwise a ``ConfigError`` (exit 2) naming the closest one, so a typo is not "no rows".
    ``reader``: ``State.reader``."""
    if not names:
        return None
    from db.reads import provider_states

    known = {p.name for p in provider_states(reader)}
    spelled = {k.lower(): k for k in known}
    unknown = [n for n in names if n.lower() not in spelled]
    if unknown:
        from scrapers.registry import (
            all_scrapers,  # imports every scraper: only when a name is not in the store
        )

        known |= set(all_scrapers())
        spelled = {k.lower(): k for k in known}
        for name in unknown:
            if name.lower() not in spelled:
                raise ConfigError(f"{option}: no provider {name!r}{did_you_mean(name, known)} "
                                  "(list them with `gpu-tracker providers`)")
    return [spelled[n.lower()] for n in names]


def narrow_offers(st: State, rows: list[dict[str, Any]], count: Any, min_gpu_memory: float | None,
                  max_price: float | None, available: bool, max_age: str | None) -> list[dict[str, Any]]:
    """Current price rows after the narrowing options of ``prices`` and ``value`` (``tracker.reads.offers.OfferFilter``)."""
    if count is None and min_gpu_memory is None and max_price is None and not available and max_age is None:
        return rows
    from tracker.catalog.specs import load_catalog
    from tracker.config.settings import parse_duration
    from tracker.reads.offers import OfferFilter, memory_per_gpu

    try:
        age = None if max_age is None else parse_duration(max_age)
    except ValueError as exc:
        raise ConfigError(f"--max-age: {exc}") from None
    vram = {g: spec.vram_gb for g, spec in load_catalog(st.settings.catalog_file).items()}
    chosen = OfferFilter(gpus=count, min_gpu_memory_gb=min_gpu_memory, max_price=max_price, available_only=available,
                         max_age_s=age)
    return chosen.apply(rows, memory_per_gpu(vram))

"""ScrapedOffer's term rule: reserved offers say their term, or say that the provider prints none."""

from __future__ import annotations

import pytest

from scrapers.base import ParseError, ScrapedOffer


def offer(**fields: object) -> ScrapedOffer:
    return ScrapedOffer(provider="demo", sku="x", gpu_raw="H100", gpu_count=1, price_per_hour=2.0, **fields)  # type: ignore[arg-type]


def test_reserved_with_a_term() -> None:
    assert offer(kind="reserved", term_months=12).term_months == 12


def test_reserved_without_a_term_must_say_the_provider_prints_none() -> None:
    with pytest.raises(ParseError, match=r"demo: offer 'x': reserved offers need term_months > 0"):
        offer(kind="reserved")
    assert offer(kind="reserved", extra={"term_unstated": True}).term_months == 0


@pytest.mark.parametrize("kind", ["on_demand", "spot", "community"])
def test_only_reserved_offers_have_a_term(kind: str) -> None:
    with pytest.raises(ParseError, match="only reserved offers may have term_months"):
        offer(kind=kind, term_months=12)

"""Edited copies of a recorded HTML page, for the page scrapers' layout-change tests."""

from __future__ import annotations

from bs4 import BeautifulSoup


def without(html: str, *selectors: str) -> str:
    """``html`` with every element matching each CSS selector removed (each must match something)."""
    doc = BeautifulSoup(html, "lxml")
    for sel in selectors:
        found = doc.select(sel)
        assert found, sel
        for el in found:
            el.decompose()
    return str(doc)


def replaced(html: str, old: str, new: str) -> str:
    """``html`` with the first ``old`` (which must be there) replaced by ``new``."""
    assert old in html
    return html.replace(old, new, 1)

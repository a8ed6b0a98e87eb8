"""The README's generated provider table matches the registered scrapers."""

from __future__ import annotations

from tracker.docs import README, render_readme


def test_readme_provider_table_is_current() -> None:
    text = README.read_text()
    assert render_readme(text) == text, "README provider table is stale: run `python -m tracker.docs`"

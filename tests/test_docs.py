"""The README's generated provider table matches the registered scrapers."""

from __future__ import annotations

import re
from pathlib import Path

from tracker.docs import README, render_readme


def test_readme_provider_table_is_current() -> None:
    text = README.read_text()
    assert render_readme(text) == text, "README provider table is stale: run `python -m tracker.docs`"


#: Words of a development note, not of a public citation: work items, the helpers' folders, sessions.
DEVELOPMENT_NOTE = re.compile(r"(?<!-)\bissues?\b|/work/|\bshared/|work item|\bsession\b|provider-samples", re.IGNORECASE)


def test_shipped_data_and_docs_cite_public_sources_not_development_notes() -> None:
    root = Path(__file__).resolve().parent.parent
    files = [root / "README.md", *sorted((root / "tracker" / "recordings").glob("*/manifest.json")),
             *sorted((root / "tracker" / "catalog" / "data").glob("*.csv")),
             *sorted((root / "tests" / "fixtures").glob("**/*.md"))]
    found = [f"{f.relative_to(root)}:{n}: {m.group(0)!r}"
             for f in files for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             for m in DEVELOPMENT_NOTE.finditer(line)]
    assert len(files) > 40 and not found, found


def test_every_builtin_says_how_its_request_was_checked() -> None:
    from scrapers.registry import all_scrapers, builtin_modules

    builtins = {n: c for n, c in all_scrapers().items() if c.__module__.split(".")[-1] in builtin_modules()}
    unchecked = [n for n, c in builtins.items()
                 if not c.checked_by.startswith(("recording: ", "reference: ", "API reference: ", "public client: "))]
    assert len(builtins) > 20 and not unchecked, unchecked


def test_the_table_lists_retired_providers_apart_with_date_and_reason() -> None:
    from tracker.docs import provider_table

    table = provider_table()
    active, _, retired = table.partition("Retired: no longer collected")
    assert "| **cudo** (Cudo Compute) | retired since 2026-03-31: CUDO Compute's public platform shut down" in retired
    assert "**cudo**" not in active and "| **lambda** (Lambda) | active | page |" in active
    from scrapers.registry import all_scrapers

    keyed = next(c for c in all_scrapers().values() if c.credentials and c.retired is None)
    assert f"| **{keyed.name}** ({keyed.display_name}) | active | " in active
    assert " | yes: " + ", ".join(f"`{c}`" for c in keyed.credentials) + " | " in active

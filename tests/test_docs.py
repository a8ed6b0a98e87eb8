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

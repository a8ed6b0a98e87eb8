"""Generated documentation: the README's provider table comes from the scrapers themselves.

The "fixture" column is what the bundled replay recording is (a real recording, with its date;
a handmade sample; an API-reference example; a reference fixture: our own values in a public
capture's shape), from the scraper and its ``manifest.json``.

``python -m tracker.docs`` rewrites the block between the markers in README.md; a test
fails when the README and the code disagree, so the table cannot go stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from scrapers.registry import all_scrapers
from tracker.pipeline.replay import recording_info

BEGIN, END = "<!-- providers:begin -->", "<!-- providers:end -->"
README = Path(__file__).parent.parent / "README.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def provider_table() -> str:
    lines = [
        "| provider | source | endpoint | auth | kinds | fixture | caveats |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, cls in all_scrapers().items():
        auth = ", ".join(f"`{c}`" for c in cls.credentials) or "none"
        if cls.optional_credentials:
            auth += " (optional: " + ", ".join(f"`{c}`" for c in cls.optional_credentials) + ")"
        kinds = ", ".join(k.replace("_", "-") for k in cls.kinds)
        source, fixture = _cell(cls.source_kind) or "?", _cell(cls.fixture_kind) or "?"
        info = recording_info(name)
        if info is not None and info.recorded:
            fixture += f" ({info.recorded})"
        elif info is not None and info.fixture == "recording":
            fixture += " (undated)"
        lines.append(
            f"| **{name}** ({_cell(cls.display_name)}) | {source} | `{_cell(cls.endpoint)}` | {auth} | {kinds} "
            f"| {fixture} | {_cell(cls.caveats) or '-'} |"
        )
    return "\n".join(lines)


def render_readme(text: str) -> str:
    block = f"{BEGIN}\n{provider_table()}\n{END}"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block")
    return pattern.sub(lambda _m: block, text)


if __name__ == "__main__":
    README.write_text(render_readme(README.read_text()))
    sys.stdout.write(provider_table() + "\n")

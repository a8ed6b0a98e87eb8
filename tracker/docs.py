"""Generated documentation: the README's provider table comes from the scrapers themselves.

Per provider: whether it is active or retired (since when, why: listed apart), its source (an
API or a page) and the request it makes, whether it needs a key, its newest bundled replay
recording (its kind: a real recording, a handmade sample, an API-reference example or a
reference fixture, our own values in a public capture's shape; and its date, from its
``manifest.json``), and how its request was checked (``Scraper.checked_by``).

``python -m tracker.docs`` rewrites the block between the markers in README.md; a test
fails when the README and the code disagree, so the table cannot go stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from scrapers.base import Scraper
from scrapers.registry import all_scrapers
from tracker.pipeline.replay import recording_info

BEGIN, END = "<!-- providers:begin -->", "<!-- providers:end -->"
README = Path(__file__).parent.parent / "README.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _key(cls: type[Scraper]) -> str:
    """Whether it needs a key: "no", "yes: `ENV`", "optional: `ENV`" (used when set)."""
    if cls.credentials:
        return "yes: " + ", ".join(f"`{c}`" for c in cls.credentials)
    if cls.optional_credentials:
        return "optional: " + ", ".join(f"`{c}`" for c in cls.optional_credentials)
    return "no"


def _recording(name: str, cls: type[Scraper]) -> str:
    """The newest bundled recording: its kind and date (the manifest's; "undated" when it has none)."""
    info = recording_info(name)
    if info is None:
        return f"none ({_cell(cls.fixture_kind) or '?'} fixture)"
    if info.recorded:
        return f"{info.fixture} ({info.recorded})"
    return f"{info.fixture} (undated)" if info.fixture == "recording" else info.fixture


def _row(name: str, cls: type[Scraper], status: str) -> str:
    kinds = ", ".join(k.replace("_", "-") for k in cls.kinds)
    return (f"| **{name}** ({_cell(cls.display_name)}) | {status} | {_cell(cls.source_kind) or '?'} "
            f"| `{_cell(cls.endpoint)}` | {_key(cls)} | {kinds} | {_recording(name, cls)} "
            f"| {_cell(cls.checked_by) or '?'} | {_cell(cls.caveats) or '-'} |")


HEADER = [
    "| provider | status | source | request | needs a key | kinds | newest recording | request checked by | caveats |",
    "|---|---|---|---|---|---|---|---|---|",
]


def provider_table() -> str:
    """The active providers' table, then the retired ones' (no longer collected, history kept)."""
    scrapers = all_scrapers()
    active = [(n, c) for n, c in scrapers.items() if c.retired is None]
    retired = [(n, c) for n, c in scrapers.items() if c.retired is not None]
    lines = [*HEADER, *(_row(n, c, "active") for n, c in active)]
    if retired:
        lines += ["", "Retired: no longer collected; their stored history stays readable.", "", *HEADER]
        for n, c in retired:
            assert c.retired is not None
            lines.append(_row(n, c, f"retired since {c.retired.on.isoformat()}: {_cell(c.retired.reason)}"))
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

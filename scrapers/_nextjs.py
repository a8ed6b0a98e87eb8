"""Next.js App Router pages: their React Server Components ("flight") stream, as text.

Such a page sends its data in ``<script>self.__next_f.push([1, "<chunk>"])</script>`` tags; the
chunks, each a JSON string, joined in order, are the stream: lines ``<hex id>:<payload>``. Not a
provider (a private module); pricing pages built this way (Massed Compute, Latitude.sh) read it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from scrapers.html import layout_changed

_PUSH_RE = re.compile(r"self\.__next_f\.push\(\[\s*1\s*,\s*(\"(?:[^\"\\]|\\.)*\")\s*\]\)", re.DOTALL)


def flight_stream(provider: str, raw: Any) -> str:
    """The flight stream of a Next.js page: its ``self.__next_f.push([1, ...])`` chunks, decoded and
    joined. A bare stream excerpt (escaped quotes, no script tags) is unescaped instead."""
    if not isinstance(raw, str):
        raise layout_changed(provider, f"expected the page's HTML text, got {type(raw).__name__!r}")
    if not raw.strip():
        raise layout_changed(provider, "the page is empty")
    chunks = _PUSH_RE.findall(raw)
    if chunks:
        try:
            return "".join(json.loads(chunk) for chunk in chunks)
        except ValueError:
            raise layout_changed(provider, "a 'self.__next_f.push' chunk is not a JSON string") from None
    if '\\"' in raw:
        return raw.replace('\\"', '"').replace("\\n", "\n")
    raise layout_changed(provider, "no Next.js flight data (self.__next_f.push) on the page")

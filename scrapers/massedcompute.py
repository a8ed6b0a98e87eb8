"""Massed Compute: on-demand GPU VM prices read from the Next.js flight data of its pricing page.

Called: ``GET https://massedcompute.com/pricing`` once per run, after checking robots.txt; no
auth (the site's ``/api/pricing`` needs a sign-in). The page is a Next.js app: its data travels in
``<script>self.__next_f.push([1, "<chunk>"])</script>`` tags whose chunks, joined, are the React
Server Components ("flight") stream: lines ``<hex id>:<JSON>``. The parser decodes those chunks
(no HTML parser is needed) and reads the price table from them.

What it relies on in the stream:

* every price row is a React element keyed ``"<GPU label>-x <count>-<n>"`` (the desktop table
  row) or ``"<GPU label>-mobile-x <count>-<n>"`` (the same row's mobile card): the label is the
  GPU as printed ("H100 (80GB)", "RTX PRO 6000 Blackwell (96GB)", "B300 SXM6"), the count the
  row's GPU quantity;
* a price cell holds ``"$$52.80"`` (the stream writes a literal dollar sign as ``$$``) followed by
  "/hr": the price of the whole row (all its GPUs), in dollars. A cell may be sent later as its own
  line and referenced from the row as ``"$L<id>"``: the reference is followed;
* a row's element ends at the next row key or at the end of its stream line, so a price is never
  taken from a neighbouring row.

Each (label, count) is one ``on_demand`` offer (the page has one price column: the on-demand VM
rate; no region). The two copies of a row must agree: different prices quarantine the offer. A
row with "Request" instead of a price is listed without a price (contact sales); a row with no
price at all, or two prices in one copy, is quarantined. vCPU, RAM and storage are read from the
card when present; the memory in the label ("(80GB)") is the GPU's.

No flight data, or no row key in it -> ``ParseError("massedcompute: layout changed: ...")``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from scrapers._nextjs import flight_stream
from scrapers.base import REFERENCE_CAPTURE, Http, ScrapedOffer, Scraper, unreadable
from scrapers.html import layout_changed, parse_gb, parse_number

PRICING_URL = "https://massedcompute.com/pricing"
_KEY_RE = re.compile(r'"(?P<label>[^"\\]{1,80}?)(?P<mobile>-mobile)?-x\s*(?P<count>\d+)-\d+"')
_PRICE_RE = re.compile(r'"\$\$([\d,]+(?:\.\d+)?)"')
_REF_RE = re.compile(r'"\$L([0-9a-f]+)"')
_LINE_RE = re.compile(r"^([0-9a-f]+):", re.MULTILINE)
_REQUEST_RE = re.compile(r'"(Request|Contact (?:us|sales))"', re.IGNORECASE)
_SPEC_RE = re.compile(r'"children":"(vCPU|RAM|Storage)"\}\],\["\$","dd",null,\{"className":"[^"]*","children":"?([^"}\]]*)"?\}')
_MEMORY_RE = re.compile(r"\((\d+(?:\.\d+)?)\s*GB\)", re.IGNORECASE)
#: How far a row's own reference chain is followed (a cell, its children).
_MAX_DEPTH = 3


@dataclass
class _Row:
    label: str
    count: int
    prices: dict[str, set[float]] = field(default_factory=dict)  #: copy ("desktop"/"mobile") -> prices seen
    request: bool = False
    specs: dict[str, str] = field(default_factory=dict)


class MassedcomputeScraper(Scraper):
    name = "massedcompute"
    segment = "neocloud"
    display_name = "Massed Compute"
    homepage = "https://massedcompute.com/pricing"
    endpoint = "GET https://massedcompute.com/pricing (public page, Next.js flight data)"
    #: the page has been served from the bare domain and from the "vm." app host
    hosts = ("www.massedcompute.com", "vm.massedcompute.com")
    kinds = ("on_demand",)
    source_kind = "page"
    fixture_kind = "reference"
    checked_by = REFERENCE_CAPTURE
    caveats = "reference fixture (real 2026 shape, own values); on-demand VM rates from the pricing page's flight data (whole row price for its GPU count); no region on the page"

    async def fetch(self, http: Http) -> str:
        return await http.get_page(PRICING_URL)

    def parse(self, raw: Any) -> list[ScrapedOffer]:
        stream = flight_stream(self.name, raw)
        keys = list(_KEY_RE.finditer(stream))
        if not keys:
            raise layout_changed(self.name, "no price row ('<GPU>-x <count>-<n>' element key) in the flight data")
        chunks = self._chunks(stream)
        rows: dict[tuple[str, int], _Row] = {}
        for i, key in enumerate(keys):
            label, count = key.group("label").strip(), int(key.group("count"))
            if not label or count < 1:
                continue
            end = keys[i + 1].start() if i + 1 < len(keys) else len(stream)
            line_end = stream.find("\n", key.end())
            if line_end != -1:
                end = min(end, line_end)
            text = self._expand(stream[key.end() : end], chunks)
            row = rows.setdefault((label, count), _Row(label, count))
            copy = "mobile" if key.group("mobile") else "desktop"
            row.prices.setdefault(copy, set()).update(float(p.replace(",", "")) for p in _PRICE_RE.findall(text))
            row.request = row.request or bool(_REQUEST_RE.search(text))
            row.specs.update({k: v for k, v in _SPEC_RE.findall(text) if k not in row.specs})
        return [self._offer(row) for row in rows.values()]

    @staticmethod
    def _chunks(stream: str) -> dict[str, str]:
        """Stream line id -> the line's text (what a ``"$L<id>"`` reference points to)."""
        starts = list(_LINE_RE.finditer(stream))
        out: dict[str, str] = {}
        for i, m in enumerate(starts):
            end = stream.find("\n", m.end())
            out.setdefault(m.group(1), stream[m.end() : end if end != -1 else len(stream)])
        return out

    @staticmethod
    def _expand(text: str, chunks: dict[str, str], depth: int = 0) -> str:
        """``text`` with the lines it references (``"$L<id>"``) appended, to ``_MAX_DEPTH`` levels."""
        if depth >= _MAX_DEPTH:
            return text
        parts = [text]
        for ref in dict.fromkeys(_REF_RE.findall(text)):
            if ref in chunks:
                parts.append(MassedcomputeScraper._expand(chunks[ref], chunks, depth + 1))
        return "\n".join(parts)

    def _offer(self, row: _Row) -> ScrapedOffer:
        where = f"row {row.label!r} x{row.count}"
        copies = {copy: prices for copy, prices in row.prices.items() if prices}
        bad: dict[str, str] = {}
        price: float | None = None
        if any(len(prices) > 1 for prices in copies.values()):
            bad = unreadable("price", where, sorted(set().union(*copies.values())), "several prices in one row")
        elif len({p for prices in copies.values() for p in prices}) > 1:
            bad = unreadable("price", where, sorted(set().union(*copies.values())), "its desktop and mobile copies disagree")
        elif copies:
            price = next(iter(next(iter(copies.values()))))
        elif not row.request:
            bad = unreadable("price", where)
        memory = _MEMORY_RE.search(row.label)
        return self.offer(
            sku=f"{row.label}:{row.count}x",
            gpu_raw=row.label,
            gpu_count=row.count,
            price_per_hour=price,
            kind="on_demand",
            currency="USD",
            gpu_memory_gb=float(memory.group(1)) if memory else None,
            vcpus=parse_number(row.specs["vCPU"]) if "vCPU" in row.specs else None,
            ram_gb=parse_gb(row.specs["RAM"]) if "RAM" in row.specs else None,
            extra={
                "storage": row.specs.get("Storage"),
                "copies": sorted(row.prices),
                **({"listed_without_price": True, "price_text": "Request"} if price is None and not bad else {}),
                **bad,
            },
        )

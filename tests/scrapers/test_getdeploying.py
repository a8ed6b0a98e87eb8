"""GetDeploying (an aggregator's per-GPU pages).

Fixture (handmade, see tests/fixtures/getdeploying/README.md): one page per GPU in the table
structure GetDeploying's pages are read by in thatkavish/OpenComputePrices; our own values."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from db.reader import in_transaction
from scrapers.base import UNREADABLE_PRICE, ParseError, ScrapedOffer
from scrapers.getdeploying import GPU_PAGES, GetdeployingScraper, via_name
from tests.conftest import recording_path
from tests.scrapers.contract import NamedOffer, ProviderContract
from tracker.analysis.aggregators import cheapest_per_provider
from tracker.pipeline.normalise import normalise

FIXTURES = recording_path("getdeploying")  # the replay recording: the one copy


def pages() -> dict[str, str]:
    return {slug: (FIXTURES / f"getdeploying_{slug}_handmade.html").read_text() for slug in GPU_PAGES}


def keyed(offers: list[ScrapedOffer]) -> dict[tuple[str, str, int], ScrapedOffer]:
    return {(o.sku, o.kind, o.term_months): o for o in offers}


def edit(change: Any) -> dict[str, str]:
    return {slug: change(html) for slug, html in pages().items()}


class TestGetdeploying(ProviderContract):
    scraper_cls = GetdeployingScraper
    named_offer = NamedOffer("H100 SXM5", 8, "on_demand", "", 23.92)
    handmade = True
    min_offers = 15

    def load_raw(self) -> Any:
        return pages()

    def broken_payloads(self) -> list[Any]:
        return [
            {},
            "<html></html>",
            edit(lambda h: h.replace("<th>Provider</th>", "<th>Cloud</th>")),  # header renamed
            edit(lambda h: h.replace("<th>$/GPU/h</th>", "<th>Price</th>").replace("<th>Total/h</th>", "<th>Sum</th>")),
            edit(lambda h: re.sub(r"<td>\$[\d.]+</td>", "<td>call us</td>", h)),  # every price unreadable
        ]

    def bad_offer_payloads(self) -> list[Any]:
        return [{**pages(), "nvidia-h100": pages()["nvidia-h100"].replace("<td>$2.49</td>", "<td>soon</td>")}]

    def test_rows_of_clouds_with_the_cloud_as_via(self, offers: list[ScrapedOffer]) -> None:
        k = keyed(offers)
        lam = k[("lambda:8x H100 SXM5", "on_demand", 0)]
        assert (lam.provider, lam.extra["via"], lam.gpu_count, lam.price_per_hour) == ("getdeploying", "lambda", 8, 23.92)
        assert (lam.gpu_raw, lam.gpu_memory_gb, lam.vcpus, lam.ram_gb) == ("H100 SXM5", 80, 208, 1800)
        assert normalise(lam).gpu == "H100-SXM" and normalise(lam).price_per_gpu_hour == pytest.approx(2.99)
        assert k[("vastai:1x H100 PCIe", "spot", 0)].price_per_hour == 1.35
        gcp = k[("gcp:8x H200 (a3-ultragpu-8g)", "spot", 0)]
        assert (gcp.extra["via"], gcp.extra["instance_type"], gcp.gpu_raw) == ("gcp", "a3-ultragpu-8g", "H200")

    def test_billing_terms(self, offers: list[ScrapedOffer]) -> None:
        k = keyed(offers)
        assert k[("nebius:8x H100 SXM5", "reserved", 12)].price_per_hour == 16.40
        assert (k[("cirrascale:8x MI300X", "reserved", 6)].price_per_hour, k[("cirrascale:8x MI300X", "reserved", 1)]
                .price_per_hour) == (28.0, 31.2)
        contact = k[("cirrascale:8x H100 SXM5", "reserved", 0)]
        assert contact.price_per_hour is None and contact.extra["term_unstated"] and UNREADABLE_PRICE not in contact.extra

    def test_a_row_without_a_count_is_one_gpu_and_a_slice_stays_unmapped(self, offers: list[ScrapedOffer]) -> None:
        k = keyed(offers)
        crusoe = k[("crusoe:A100 PCIe 80GB", "on_demand", 0)]
        assert (crusoe.gpu_count, crusoe.price_per_hour, crusoe.extra["gpu_count_stated"]) == (1, 1.65, False)
        row = ("<tr><td>Vultr</td><td>1x A100 PCIe</td><td>8 GB</td><td>1</td><td>6 GB</td><td>On-Demand</td>"
               "<td>$0.12</td><td>$0.12</td></tr>")
        raw = {**pages(), "nvidia-a100": pages()["nvidia-a100"].replace("</tbody></table>\n</body>", row + "</tbody></table>\n</body>")}
        vultr = keyed(GetdeployingScraper(env={}).parse(raw))[("vultr:1x A100 PCIe", "on_demand", 0)]
        assert vultr.gpu_memory_gb == 8 and normalise(vultr).gpu is None  # 8 GB of an A100: a slice

    def test_a_whole_instance_price_without_a_count_is_quarantined(self) -> None:
        raw = edit(lambda h: h.replace("<th>$/GPU/h</th>", "<th>Notes</th>"))
        k = keyed(GetdeployingScraper(env={}).parse(raw))
        assert k[("lambda:8x H100 SXM5", "on_demand", 0)].price_per_hour == 23.92
        crusoe = k[("crusoe:A100 PCIe 80GB", "on_demand", 0)]
        assert crusoe.price_per_hour is None and crusoe.extra[UNREADABLE_PRICE].startswith("GPU count field 'GPUs'")

    def test_layout_change_names_the_page(self) -> None:
        raw = edit(lambda h: h.replace("<th>Billing</th>", "<th>Terms</th>"))
        with pytest.raises(ParseError, match=r"^getdeploying: layout changed: page amd-mi300x"):
            GetdeployingScraper(env={}).parse(raw)


def test_cloud_names() -> None:
    assert [via_name(n) for n in ("Lambda Labs", "Vast.ai", "Google Cloud", "Oracle Cloud", "Packet·ai", "Hot Aisle",
                                  "RunPod (sponsored)")] == [
        "lambda", "vastai", "gcp", "oci", "packetai", "hotaisle", "runpod"]


def test_replayed_into_the_store_a_cloud_counts_once(db_url: str, tmp_path: Path) -> None:
    """Replayed with RunPod's own list: RunPod's H100 through GetDeploying is RunPod's in the market."""
    from typer.testing import CliRunner

    from db.engine import make_engine
    from db.reads import latest_prices
    from tracker.cli import app

    config = tmp_path / "plain.toml"
    config.write_text("")
    runner = CliRunner()
    scrape = runner.invoke(app, ["--config", str(config), "--db", db_url, "scrape", "--replay", "-p", "getdeploying",
                                 "-p", "runpod", "--format", "json", "--no-alerts"])
    assert scrape.exit_code == 0, scrape.stdout
    assert {r["provider"]: r["status"] for r in json.loads(scrape.stdout)} == {"getdeploying": "ok", "runpod": "ok"}
    engine = make_engine(db_url)
    try:
        with Session(engine) as s:
            rows = [r for r in latest_prices(in_transaction(s.connection()), gpus=["H100-SXM"]) if r["kind"] == "on_demand"]
    finally:
        engine.dispose()
    via = {r["via"] for r in rows if r["provider"] == "getdeploying"}
    assert via == {"runpod", "lambda"}
    per = cheapest_per_provider(rows)
    assert set(per) == {"runpod", "lambda"}  # GetDeploying's rows are those clouds', never a third provider

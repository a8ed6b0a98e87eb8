"""OpenComputePrices unified CSVs (real samples in tests/fixtures/history-archives, see its
README): named rows by value, TensorDock's three snapshots against arithmetic on the file, and
the same file at three commits importing to the history of its newest copy alone."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db.models import Offer
from db.reader import in_transaction
from db.reads import latest_prices
from tests.conftest import fixture_path, read
from tests.pipeline.imports.test_archives import stored_intervals
from tracker.analysis.grid import Filters
from tracker.analysis.history import price_history
from tracker.pipeline.imports import import_files
from tracker.pipeline.imports.opencomputeprices import provider_of

ARCHIVES = fixture_path("history-archives")
CRUSOE = ARCHIVES / "opencomputeprices_crusoe_9cf337b.csv"
AKASH = ARCHIVES / "opencomputeprices_akash_9cf337b.csv"
GETDEPLOYING = ARCHIVES / "opencomputeprices_getdeploying_9cf337b.csv"
#: ``data/tensordock.csv`` at three commits, oldest first (1, 2 and 3 runs)
TENSORDOCK = [ARCHIVES / f"opencomputeprices_tensordock_{c}.csv" for c in ("95870c1", "91b838b", "4365244")]
NEWEST = TENSORDOCK[-1]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def offers(engine: Engine, provider: str) -> list[Offer]:
    with Session(engine) as s:
        return list(s.exec(select(Offer).where(Offer.provider == provider)).all())


def current(engine: Engine, provider: str, sku: str) -> tuple[Offer, float, float]:
    """(offer, whole-instance price, per-GPU price) of its newest interval."""
    with Session(engine) as s:
        offer = s.exec(select(Offer).where(Offer.provider == provider, Offer.sku == sku)).one()
        price, per_gpu = s.connection().execute(text(
            "SELECT price_per_hour, price_per_gpu_hour FROM price_interval WHERE offer_id = :o ORDER BY first_seen DESC"
        ), {"o": offer.id}).first()
    return offer, price, per_gpu


def test_named_rows_by_value(engine: Engine) -> None:
    result = import_files(engine, [CRUSOE, AKASH, GETDEPLOYING])
    assert result.format == "opencomputeprices" and not result.bad_rows
    # crusoe: "H200_on_demand,,H200,SXM,141,1,...,on_demand,,4.29,4.29" in the file
    h200 = next(r for r in rows(CRUSOE) if r["instance_type"] == "H200_on_demand")
    offer, price, per_gpu = current(engine, "crusoe", "H200_on_demand/SXM")
    assert (offer.gpu, offer.kind, offer.gpu_count) == ("H200", "on_demand", 1)
    assert per_gpu == pytest.approx(float(h200["price_per_gpu_hour"])) == pytest.approx(4.29)
    # two A100 PCIe 80GB prices in one snapshot: two offers, numbered by price
    assert current(engine, "crusoe", "A100_on_demand/PCIe#1")[2] == pytest.approx(1.45)
    offer, _p, per_gpu = current(engine, "crusoe", "A100_on_demand/PCIe#2")
    assert (offer.gpu, per_gpu) == ("A100-PCIe-80GB", pytest.approx(1.65))
    assert current(engine, "crusoe", "A100_on_demand/SXM")[0].gpu == "A100-SXM-80GB"
    # akash: four price tiers of the H100 SXM5 are one offer at the cheapest (min 1.20, max 2.07)
    offer, _p, per_gpu = current(engine, "akash", "h100_SXM5/SXM5")
    assert (offer.gpu, per_gpu) == ("H100-SXM", pytest.approx(1.2))
    assert offer.extra["price_tiers"]["max"] == pytest.approx(2.07)
    assert offer.extra["available_count"] == 24
    # getdeploying: stored under the aggregator, the cloud it names kept as ``via``
    cirrascale = [r for r in rows(GETDEPLOYING) if r["provider"] == "cirrascale" and "6-month" in r["raw_extra"]]
    assert len(cirrascale) == 1 and cirrascale[0]["price_per_gpu_hour"] == "3.52"
    sku = f"cirrascale:{cirrascale[0]['instance_type']}"
    with Session(engine) as s:
        six = s.exec(select(Offer).where(Offer.provider == "getdeploying", Offer.sku == sku,
                                         Offer.term_months == 6)).one()
    assert (six.gpu, six.kind, six.gpu_count, six.extra["via"]) == ("MI300X", "reserved", 8, "cirrascale")
    assert "cirrascale" not in result.providers and "getdeploying" in result.providers
    # an Azure A10 with 4 GB is a slice: never an A10, kept raw and reported unmapped
    slices = [o for o in offers(engine, "getdeploying") if o.extra.get("via") == "azure" and " 4GB" in o.sku]
    assert slices and all(o.gpu is None and o.gpu_raw.endswith("slice") for o in slices)
    assert any(name.endswith("slice") for name in result.unmapped)
    # the name the page prints, not that project's folded one ("RTX 4070" for a 4070 Ti Super)
    ti = next(o for o in offers(engine, "getdeploying") if o.sku == "cheapest_RTX 4070 Ti Super")
    assert (ti.gpu, ti.extra["via"]) == ("RTX-4070-Ti-SUPER", "salad")


def tensordock_snapshots(path: Path) -> dict[datetime, dict[tuple[str, str], dict[str, str]]]:
    """time -> {(instance type, location id): row}, read straight from the file."""
    out: dict[datetime, dict[tuple[str, str], dict[str, str]]] = defaultdict(dict)
    for r in rows(path):
        at = datetime.fromisoformat(r["snapshot_ts"].replace("Z", "+00:00"))
        out[at][(r["instance_type"], json.loads(r["raw_extra"])["location_id"])] = r
    return dict(sorted(out.items()))


def test_tensordock_three_snapshots(engine: Engine) -> None:
    result = import_files(engine, [NEWEST])
    snaps = tensordock_snapshots(NEWEST)
    assert len(snaps) == 3 and result.snapshots == 3 and not result.bad_rows and not result.unmapped
    # price changes and returns, from the file: consecutive snapshots (at most 48 hours apart)
    changes = returns = 0
    times = list(snaps)
    for (t0, t1) in pairwise(times):
        assert t1 - t0 <= timedelta(hours=48)
        for key, row in snaps[t1].items():
            if key in snaps[t0]:
                changes += float(snaps[t0][key]["price_per_hour"]) != float(row["price_per_hour"])
            elif any(key in snaps[t] for t in times if t < t0):
                returns += 1
    assert (result.prices_changed, result.returned) == (changes, returns) and changes >= 5
    # Chubbuck's RTX 4090: 0.396667, 0.40, 0.395; available_count as of the newest snapshot
    chubbuck = [r for r in rows(NEWEST) if r["instance_type"] == "geforcertx4090-pcie-24gb"
                and r["region"].startswith("Chubbuck")]
    assert [float(r["price_per_hour"]) for r in chubbuck] == [0.396667, 0.4, 0.395]
    assert [r["available_count"] for r in chubbuck] == ["3", "1", "3"]
    location = json.loads(chubbuck[0]["raw_extra"])["location_id"]
    with Session(engine) as s:
        offer = s.exec(select(Offer).where(Offer.provider == "tensordock",
                                           Offer.sku == f"geforcertx4090-pcie-24gb/PCIe@{location}")).one()
        prices = [p for (p,) in s.connection().execute(text(
            "SELECT price_per_gpu_hour FROM price_interval WHERE offer_id = :o ORDER BY first_seen"), {"o": offer.id})]
    assert prices == pytest.approx([0.396667, 0.4, 0.395])
    assert (offer.gpu, offer.kind, offer.extra["available_count"]) == ("RTX-4090", "on_demand", 3)
    # the daily minimum per GPU, computed here from the file
    expected: dict[date, float] = {}
    for at, by_key in snaps.items():
        four = [float(r["price_per_gpu_hour"]) for r in by_key.values() if r["gpu_name"] == "RTX 4090"]
        expected[at.date()] = min(expected.get(at.date(), math.inf), *four)
    h = read(engine, price_history,  Filters.of(gpus=["RTX-4090"], providers=["tensordock"]),
                      since=datetime(2026, 3, 21, tzinfo=UTC), until=datetime(2026, 3, 23, 23, tzinfo=UTC),
                      resolution="day")
    got = {t.date(): v for t, v in zip(h.market["time"], h.market["min"], strict=True) if not math.isnan(v)}
    assert got == pytest.approx(expected)


def test_three_copies_of_one_file_give_the_newest_copys_history(engine: Engine, sqlite_engine: Engine) -> None:
    """The oldest copy holds a run (06:09) that a re-run of that day (06:19) replaced in the later
    copies: one snapshot per day, the newest, whatever the order of files and commands."""
    import_files(sqlite_engine, [NEWEST])
    newest_alone = stored_intervals(sqlite_engine)
    assert {r["snapshot_ts"] for r in rows(TENSORDOCK[0])} == {"2026-03-21T06:09:11Z"}
    for path in TENSORDOCK:  # oldest first, one command each: the 06:09 run is taken out again
        import_files(engine, [path])
    assert stored_intervals(engine) == newest_alone
    again = import_files(engine, list(reversed(TENSORDOCK)))
    assert again.stored == 0
    assert stored_intervals(engine) == newest_alone
    with Session(engine) as s:
        times = [t for (t,) in s.connection().execute(text("SELECT at FROM snapshot_time ORDER BY at"))]
    assert [datetime.fromtimestamp(t, UTC).isoformat() for t in times] == [
        "2026-03-21T06:19:24+00:00", "2026-03-22T22:59:05+00:00", "2026-03-23T07:02:37+00:00"]


@pytest.mark.parametrize("order", [[2, 0, 1], [1, 2, 0], "together"])
def test_any_order_or_together(sqlite_engine: Engine, tmp_path: Path, order: Any) -> None:
    if order == "together":
        import_files(sqlite_engine, TENSORDOCK)
    else:
        for i in order:
            import_files(sqlite_engine, [TENSORDOCK[i]])
    got = stored_intervals(sqlite_engine)
    from db.engine import make_engine
    from db.migrate import init_db

    alone = make_engine(f"sqlite:///{tmp_path / 'alone.db'}")
    init_db(alone)
    import_files(alone, [NEWEST])
    assert got == stored_intervals(alone)
    alone.dispose()


HEADER = ("snapshot_date,snapshot_ts,source,provider,instance_type,instance_family,gpu_name,gpu_variant,gpu_memory_gb,"
          "gpu_count,gpu_interconnect,vcpus,ram_gb,storage_desc,network_desc,region,zone,country,geo_group,pricing_type,"
          "commitment_period,price_per_hour,price_per_gpu_hour,currency,price_unit,available,available_count,os,"
          "tenancy,pre_installed_sw,raw_extra")


def handmade_row(**values: str) -> str:
    row = dict.fromkeys(HEADER.split(","), "")
    row.update(snapshot_date="2026-03-22", snapshot_ts="2026-03-22T10:00:00Z", currency="USD", price_unit="hour",
               pricing_type="on_demand", available="True")
    row.update(values)
    return ",".join(f'"{v}"' if "," in v or '"' in v else v for v in (row[k] for k in HEADER.split(",")))


def test_rows_that_are_not_rentals_slices_and_counts(engine: Engine, tmp_path: Path) -> None:
    """Handmade rows in the schema: what is kept out, what is a slice, what a count of 0 means."""
    path = tmp_path / "handmade_opencomputeprices.csv"
    path.write_text("\n".join([
        HEADER,
        handmade_row(source="oracle", provider="oracle", instance_type="NVIDIA AI Enterprise", gpu_name="H100",
                     gpu_count="1", price_per_hour="1.0", price_per_gpu_hour="1.0"),
        handmade_row(source="oracle", provider="oracle", instance_type="BM.GPU.L40S.4 Compute Cloud@Customer",
                     gpu_name="L40S", gpu_count="4", price_per_hour="2.4", price_per_gpu_hour="0.6"),
        handmade_row(source="together", provider="together", instance_type="llama-3-70b", gpu_name="H100",
                     pricing_type="inference", gpu_count="1", price_per_hour="0.9", price_per_gpu_hour="0.9"),
        handmade_row(source="oracle", provider="oracle", instance_type="BM.GPU.H100.8", gpu_name="H100",
                     gpu_variant="SXM", gpu_memory_gb="80", gpu_count="0", price_per_hour="10.0",
                     price_per_gpu_hour="10.0"),
        handmade_row(source="vultr", provider="vultr", instance_type="vcg-a100-1c-6g-4vram", gpu_name="A100",
                     gpu_memory_gb="4", gpu_count="1", price_per_hour="0.123", price_per_gpu_hour="0.123"),
        handmade_row(source="lambda", provider="lambda_labs", instance_type="gpu_1x_h100_sxm5", gpu_name="H100",
                     gpu_variant="SXM5", gpu_memory_gb="80", gpu_count="1", pricing_type="reserved",
                     commitment_period="1yr", price_per_hour="2.0", price_per_gpu_hour="2.0"),
    ]) + "\n")
    result = import_files(engine, [path])
    assert not result.bad_rows and result.not_gpu == 3
    assert sorted(result.providers) == ["lambda", "oci", "vultr"]
    oci = offers(engine, "oci")
    assert [(o.sku, o.gpu, o.gpu_count, o.extra["per_gpu_price"]) for o in oci] == [
        ("BM.GPU.H100.8/SXM", "H100-SXM", 1, True)]
    assert current(engine, "oci", "BM.GPU.H100.8/SXM")[2] == pytest.approx(10.0)
    (vcg,) = offers(engine, "vultr")
    assert vcg.gpu is None and vcg.gpu_raw.endswith("slice")
    (reserved,) = offers(engine, "lambda")
    assert (reserved.kind, reserved.term_months, reserved.gpu) == ("reserved", 12, "H100-SXM")


def test_a_price_in_rupees_is_converted_with_its_dated_rate(engine: Engine, tmp_path: Path) -> None:
    """Handmade row: an E2E Networks price in INR, imported with a configured rate of a stated day."""
    path = tmp_path / "handmade_inr.csv"
    path.write_text("\n".join([HEADER, handmade_row(
        source="e2e", provider="e2e", instance_type="GDC.H100-80GB", gpu_name="H100", gpu_variant="SXM",
        gpu_memory_gb="80", gpu_count="1", price_per_hour="250.0", price_per_gpu_hour="250.0", currency="INR",
        region="Delhi")]) + "\n")
    from tracker.config.settings import Settings

    rates = Settings(currency_rates={"INR": {"rate": 0.012, "date": "2026-03-20"}}).currency_rates  # a test rate
    import_files(engine, [path], currency_rates=rates)
    with Session(engine) as s:
        (row,) = [r for r in latest_prices(in_transaction(s.connection()), providers=["e2e"], include_stale=True)]
    assert (row["currency"], row["price_per_gpu_hour"]) == ("USD", pytest.approx(3.0))
    assert (row["original_price_per_hour"], row["original_currency"], row["usd_rate"], row["usd_rate_date"]) == (
        250.0, "INR", 0.012, "2026-03-20")
    unconverted = tmp_path / "unconverted"
    unconverted.mkdir()
    other = unconverted / "handmade_inr.csv"
    other.write_text(path.read_text().replace("GDC.H100-80GB", "GDC.2xH100-80GB").replace("03-22", "03-23"))
    import_files(engine, [other])  # imported without a rate: stored in rupees, nothing converted
    with Session(engine) as s:
        rows = latest_prices(in_transaction(s.connection()), providers=["e2e"], include_stale=True)
    assert [(r["sku"], r["currency"], r["price_per_hour"], r["usd_rate"]) for r in rows if r["currency"] == "INR"] == [
        ("GDC.2xH100-80GB/SXM", "INR", 250.0, None)]


def test_a_snapshot_of_bad_rows_is_no_delisting(engine: Engine, tmp_path: Path) -> None:
    """The next day's copy of Crusoe's rows with a pricing type this importer does not know: the
    rows are reported by line, and the offers are not read as delisted at that snapshot."""
    import_files(engine, [CRUSOE])
    lines = CRUSOE.read_text().splitlines()
    bad = [lines[0], *(x.replace("2026-03-22", "2026-03-23").replace(",on_demand,", ",flex,") for x in lines[1:])]
    path = tmp_path / "crusoe_bad_pricing_type.csv"
    path.write_text("\n".join(bad) + "\n")
    before = stored_intervals(engine)
    result = import_files(engine, [path])
    assert len(result.bad_rows) == len(lines) - 1 and result.bad_rows[0].line == 2
    assert "pricing_type 'flex'" in result.bad_rows[0].reason
    assert result.snapshots == 0 and stored_intervals(engine) == before


def test_provider_names() -> None:
    assert [provider_of(n) for n in ("google_cloud", "lambda_labs", "oracle_cloud", "runpod_sponsored", "vastai",
                                     "packet·ai_sponsored", "hot_aisle", "tensordock")] == [
        "gcp", "lambda", "oci", "runpod", "vastai", "packetai", "hotaisle", "tensordock"]


def test_the_archive_availability_is_kept(engine: Engine) -> None:
    """Each snapshot's ``available`` is the offer's availability in its intervals, and the newest
    snapshot's ``available_count`` of a one-GPU row is its GPUs free now (read from the file here)."""
    import_files(engine, [NEWEST, AKASH])
    newest: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows(NEWEST):
        newest[(r["instance_type"], json.loads(r["raw_extra"])["location_id"])] = r  # rows run oldest first
    with Session(engine) as s:
        now = {(p["provider"], p["sku"]): p for p in latest_prices(in_transaction(s.connection()), include_stale=True, now=datetime.now(UTC))}
    for (itype, location), r in newest.items():
        if r["snapshot_ts"] != max(x["snapshot_ts"] for x in newest.values()):
            continue  # not listed by the newest snapshot: not current
        p = now[("tensordock", f"{itype}/{r['gpu_variant']}@{location}")]
        assert (p["available"], p["available_count"]) == (r["available"] == "True", int(r["available_count"]))
    # Akash's H100 SXM5: one offer of its price tiers, 24 GPUs free in the newest snapshot
    h100 = now[("akash", "h100_SXM5/SXM5")]
    assert (h100["available"], h100["available_count"]) == (True, 24)
    sold_out = [p for (prov, _), p in now.items() if prov == "akash" and p["available"] is False]
    assert sold_out and all(p["available_count"] == 0 for p in sold_out)

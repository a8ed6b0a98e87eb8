"""Import: our own CSV exports round-trip, SkyPilot vms.csv, bad rows, one transaction."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db import intervals, reads
from db.engine import engine_reader, make_engine
from db.migrate import init_db
from db.models import Offer, Provider, Quarantine, ScrapeRun
from db.reader import in_transaction
from tests.analysis.seq import HOUR, T0, offer, scrape
from tests.analysis.test_history import store_day_one
from tests.conftest import fixture_path, read
from tracker.analysis.grid import Filters
from tracker.analysis.history import price_history
from tracker.cli.common import Format, emit
from tracker.errors import ConfigError, ValidationError
from tracker.pipeline.imports.own_csv import import_file

H100 = Filters.of(gpus=["H100-SXM"])
OBSERVED = datetime(2025, 6, 1, 12, tzinfo=UTC)
LAMBDA = fixture_path("skypilot/lambda_vms_v7_11580132_excerpt.csv")
AWS = fixture_path("skypilot/aws_vms_v7_001367d2_excerpt.csv")


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Engine]:
    """A second database to export from (the ``engine`` fixture is the import target)."""
    eng = make_engine(f"sqlite:///{tmp_path / 'source.db'}")
    init_db(eng)
    yield eng
    eng.dispose()


def csv_of(rows: list[dict], capsys: pytest.CaptureFixture[str], path: Path) -> Path:  # type: ignore[type-arg]
    capsys.readouterr()
    emit(rows, Format.csv)
    path.write_text(capsys.readouterr().out)
    return path


def prices(engine: Engine) -> list[dict]:  # type: ignore[type-arg]
    with Session(engine) as s:
        rows = reads.latest_prices(in_transaction(s.connection()), include_stale=True)
    return sorted(rows, key=lambda r: (r["provider"], r["sku"]))


def counts(engine: Engine) -> dict[str, int]:
    with engine_reader(engine) as reader:
        return reads.row_counts(reader)


def test_prices_csv_round_trips(source: Engine, engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scrape(source, "alpha", T0, offer("alpha", "a1", 3.0), offer("alpha", "a8", 2.9, count=8, region="eu"))
    scrape(source, "alpha", T0 + HOUR, offer("alpha", "a1", 2.5), offer("alpha", "a8", 2.9, count=8, region="eu"))
    scrape(source, "alpha", T0 + 2 * HOUR, offer("alpha", "a1", 2.5), offer("alpha", "a8", 2.9, count=8, region="eu"))
    scrape(source, "beta", T0 + 2 * HOUR, offer("beta", "b1", 0.4, gpu="RTX-4090"),
           offer("beta", "res", 2.0, kind="reserved"), offer("beta", "unmapped", 1.0, gpu=None))
    exported = prices(source)
    assert {r["price_since"] for r in exported} == {T0, T0 + HOUR, T0 + 2 * HOUR}
    path = csv_of(exported, capsys, tmp_path / "prices.csv")

    result = import_file(engine, path)
    assert result.format == "prices" and not result.bad_rows and result.providers == ["alpha", "beta"]
    def same(rows: list[dict]) -> list[dict]:  # type: ignore[type-arg]
        return [{k: v for k, v in r.items() if k not in ("source", "age_s")} for r in rows]

    assert same(prices(engine)) == same(exported)
    assert {r["source"] for r in prices(engine)} == {"import prices.csv"}, "an imported price says so"
    csv_of(same(prices(engine)), capsys, tmp_path / "again.csv")
    csv_of(same(exported), capsys, tmp_path / "first.csv")
    assert (tmp_path / "again.csv").read_text() == (tmp_path / "first.csv").read_text()
    with Session(engine) as s:
        runs = s.exec(select(ScrapeRun)).all()
        assert {r.provider for r in runs} == {"alpha", "beta"}
        assert all(r.source == "import" and r.status == "ok" and "import of prices.csv" in (r.error_message or "") for r in runs)
        assert s.get(Provider, "alpha").last_success_at == T0 + 2 * HOUR  # type: ignore[union-attr]


def test_history_csv_round_trips(source: Engine, engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_day_one(source)
    before = read(source, price_history, H100, since=T0, until=T0 + 11 * HOUR, resolution="hour")
    path = csv_of(before.rows(), capsys, tmp_path / "history.csv")

    result = import_file(engine, path)
    assert result.format == "history" and not result.bad_rows
    assert result.providers == ["alpha", "beta", "delta", "gamma"]
    after = read(engine, price_history,  H100, since=T0, until=T0 + 11 * HOUR, resolution="hour")
    cols = ["time", "gpu", "min", "p25", "median", "providers", "alpha", "beta", "gamma", "delta"]
    a, b = before.wide()[cols], after.wide()[cols]
    assert a.equals(b), (a, b)
    # the gaps came back as gaps: beta's outage and delta's delisting are separate intervals
    with Session(engine) as s:
        beta = reads.interval_rows(in_transaction(s.connection()), provider="beta")
    assert [(i.first_seen, i.last_seen, i.price_per_hour) for i in beta] == [
        (T0, T0 + 2 * HOUR, 2.8), (T0 + 5 * HOUR, T0 + 11 * HOUR, 2.7)]


def test_importing_twice_changes_nothing(engine: Engine, source: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_day_one(source)
    path = csv_of(read(source, price_history, H100, since=T0, until=T0 + 11 * HOUR, resolution="hour").rows(), capsys,
                  tmp_path / "h.csv")
    import_file(engine, path)
    rows = counts(engine)
    again = import_file(engine, path)
    assert again.stored == 0 and again.already_stored == again.observations > 0
    after = counts(engine)
    assert {k: v for k, v in after.items() if k != "scrape_run"} == {k: v for k, v in rows.items() if k != "scrape_run"}


def test_bad_rows_are_reported_with_line_numbers_and_skipped(engine: Engine, source: Engine, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    store_day_one(source)
    path = csv_of(read(source, price_history, H100, since=T0, until=T0 + 11 * HOUR, resolution="hour").rows(), capsys,
                  tmp_path / "h.csv")
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace(",3.0,2.8,", ",abc,2.8,")  # line 3 of the file: 01:00, alpha's price unreadable
    lines[5] = lines[5].replace("2026-01-01T04:00:00+00:00", "yesterday-ish")  # line 6
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")

    with pytest.raises(ValidationError, match="line 3"):
        import_file(engine, bad, strict=True)
    assert counts(engine)["price_interval"] == 0  # strict: nothing imported

    result = import_file(engine, bad)
    assert [(b.line, "abc" in b.reason or "time" in b.reason) for b in result.bad_rows] == [(3, True), (6, True)]
    assert str(result.bad_rows[0]).startswith("line 3: ")
    assert result.rows == 12 and result.stored > 0
    # a skipped row is like a failed scrape: a price seen on both sides continues across it (the
    # store's rule: alpha and beta at 01:00); delta, absent at 02:00, is not carried into 01:00,
    # and at 04:00 (the row with the bad time) it only comes back at 05:00
    h = read(engine, price_history,  H100, since=T0, until=T0 + 11 * HOUR, resolution="hour").wide().set_index("time")
    assert h.loc[T0 + HOUR, ["alpha", "beta"]].tolist() == [3.0, 2.8] and math.isnan(h.loc[T0 + HOUR, "delta"])
    assert h.loc[T0 + 4 * HOUR, "providers"] == 1 and math.isnan(h.loc[T0 + 4 * HOUR, "delta"])


def test_the_import_is_one_transaction(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(
        "provider,gpu,gpu_raw,gpu_count,kind,term_months,region,sku,price_per_hour,price_per_gpu_hour,currency,"
        "available,observed_at,price_since\n"
        "alpha,H100-SXM,H100 SXM,1,on_demand,0,r1,a1,2.5,2.5,USD,True,2026-01-01T02:00:00+00:00,2026-01-01T00:00:00+00:00\n"
        "beta,H100-SXM,H100 SXM,1,on_demand,0,r1,b1,2.7,2.7,USD,True,2026-01-01T02:00:00+00:00,2026-01-01T01:00:00+00:00\n"
    )
    calls = {"n": 0}
    real = intervals.insert_new

    def flaky(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:  # alpha's interval is in; beta's fails
            raise RuntimeError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(intervals, "insert_new", flaky)
    with pytest.raises(RuntimeError, match="disk full"):
        import_file(engine, path)
    assert calls["n"] == 2
    c = counts(engine)
    assert c["offer"] == c["price_interval"] == c["scrape_run"] == c["provider"] == 0
    monkeypatch.setattr(intervals, "insert_new", real)
    assert import_file(engine, path).stored == 4 and len(prices(engine)) == 2


def test_skypilot_lambda(engine: Engine) -> None:
    result = import_file(engine, LAMBDA, provider="lambda", observed_at=OBSERVED)
    assert result.format == "skypilot" and result.not_gpu == 1 and not result.bad_rows
    rows = {(r["sku"], r["region"]): r for r in prices(engine)}
    assert rows[("gpu_1x_h100_pcie", "us-east-1")]["gpu"] == "H100-PCIe"  # PCIe read from the instance type
    sxm = rows[("gpu_1x_h100_sxm5", "us-west-1")]
    assert (sxm["gpu"], sxm["price_per_hour"], sxm["kind"], sxm["observed_at"]) == ("H100-SXM", 3.29, "on_demand", OBSERVED)
    a100 = rows[("gpu_8x_a100_80gb_sxm4", "us-east-1")]
    assert (a100["gpu"], a100["gpu_count"], a100["price_per_gpu_hour"], a100["gpu_memory_gb"]) == (
        "A100-SXM-80GB", 8, pytest.approx(14.32 / 8), 80)
    assert rows[("gpu_1x_a10", "us-east-1")]["gpu"] == "A10"
    assert rows[("gpu_8x_v100", "us-east-1")]["gpu"] is None  # a bare "V100" is never guessed: kept unmapped
    assert all(r["kind"] == "on_demand" for r in rows.values())  # no SpotPrice in Lambda's file
    with Session(engine) as s:
        assert s.get(Provider, "lambda").last_success_at == OBSERVED  # type: ignore[union-attr]
        run = s.exec(select(ScrapeRun)).one()
    assert run.source == "import" and run.status == "ok" and "skypilot" in (run.error_message or "")


def test_skypilot_aws_zones_and_spot(engine: Engine) -> None:
    result = import_file(engine, AWS, provider="aws", observed_at=OBSERVED)
    assert result.not_gpu == 1 and not result.bad_rows
    rows = {(r["sku"], r["region"], r["kind"]): r for r in prices(engine)}
    assert set(rows) == {
        ("p3.2xlarge", "us-east-1", "on_demand"), ("p3.2xlarge", "us-east-1", "spot"),
        ("p3.2xlarge", "us-east-2", "on_demand"), ("p3.2xlarge", "us-east-2", "spot"),
        ("p4d.24xlarge", "us-east-1", "on_demand"), ("p4d.24xlarge", "us-east-1", "spot"),
    }
    assert rows[("p3.2xlarge", "us-east-1", "spot")]["price_per_hour"] == 0.5197  # cheapest zone
    assert rows[("p4d.24xlarge", "us-east-1", "spot")]["price_per_hour"] == 5.0933
    assert rows[("p4d.24xlarge", "us-east-1", "on_demand")]["gpu"] == "A100-SXM-40GB"  # instance-type table
    assert rows[("p3.2xlarge", "us-east-1", "on_demand")]["gpu"] == "V100-SXM-16GB"
    with Session(engine) as s:
        extra = s.exec(select(Offer.extra).where(Offer.sku == "p4d.24xlarge", Offer.kind == "spot")).one()
    assert extra["availability_zone"] == "use1-az6"


def test_skypilot_bad_row_and_quarantine(engine: Engine, tmp_path: Path) -> None:
    lines = AWS.read_text().splitlines()
    lines[2] = lines[2].replace("3.06,0.519700", "three,0.519700")  # line 3
    lines[8] = lines[8].replace("32.7726,5.093300", "0,5.093300")  # line 9: a zero price in one zone
    path = tmp_path / "vms.csv"
    path.write_text("\n".join(lines) + "\n")
    result = import_file(engine, path, provider="aws", observed_at=OBSERVED)
    assert [b.line for b in result.bad_rows] == [3] and "Price 'three' is not a number" in result.bad_rows[0].reason
    assert result.quarantined == 1
    with Session(engine) as s:
        q = s.exec(select(Quarantine)).one()
    assert q.sku == "p4d.24xlarge" and "not a positive number" in q.reason
    # zones merge to the cheapest row, here the zero: it is quarantined with its reason, not hidden
    # behind the other zones' prices, so there is no on-demand p4d price from this file
    assert ("p4d.24xlarge", "on_demand") not in {(r["sku"], r["kind"]) for r in prices(engine)}


def test_skypilot_needs_provider_and_time(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--provider and --observed-at"):
        import_file(engine, LAMBDA)
    with pytest.raises(ConfigError, match="SkyPilot"):
        path = tmp_path / "p.csv"
        path.write_text("provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at\n")
        import_file(engine, path, provider="x")
    weird = tmp_path / "weird.csv"
    weird.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ConfigError, match="unrecognised"):
        import_file(engine, weird)


def test_skypilot_import_continues_scraped_intervals(engine: Engine, tmp_path: Path) -> None:
    shutil.copy(LAMBDA, tmp_path / "vms.csv")
    scrape(engine, "lambda", OBSERVED.replace(hour=11), offer("lambda", "gpu_1x_h100_sxm5", 3.29, region="us-east-1",
                                                            available=None))
    import_file(engine, tmp_path / "vms.csv", provider="lambda", observed_at=OBSERVED)
    with Session(engine) as s:
        oid = s.exec(select(Offer.id).where(Offer.sku == "gpu_1x_h100_sxm5", Offer.region == "us-east-1")).one()
        ivs = reads.interval_rows(in_transaction(s.connection()), offer_id=oid)
    assert [(i.first_seen, i.last_seen) for i in ivs] == [(OBSERVED.replace(hour=11), OBSERVED)]


def test_an_import_does_not_replace_what_a_live_scrape_listed(sqlite_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A one-row file for a provider that is really scraped adds history; the scrape's list stays current."""
    from datetime import timedelta

    from db.spans import utcnow
    from tests.fakes import make_fake, offers_payload, routing_transport
    from tracker.config.settings import Settings
    from tracker.pipeline.collect import collect
    from tracker.pipeline.imports.own_csv import import_file

    live = make_fake("livecloud")
    rows = offers_payload(*({"sku": f"s{i}", "gpu": "H100 SXM", "price": 2.0 + i / 10} for i in range(3)))
    collect(sqlite_engine, Settings(), classes=[live], transport_factory=routing_transport({"livecloud": rows}))
    later = (utcnow() + timedelta(minutes=1)).isoformat()
    csv_file = tmp_path / "one.csv"
    csv_file.write_text(
        "provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at\n"
        f"livecloud,imported,on_demand,H100 SXM,1,2.2,USD,{later}\n"
    )
    import_file(sqlite_engine, csv_file)
    from sqlmodel import Session

    with Session(sqlite_engine) as s:
        assert sorted(r["sku"] for r in reads.latest_prices(in_transaction(s.connection()), providers=["livecloud"], include_stale=True)) == ["s0", "s1", "s2"]


def test_future_observation_times_are_refused(sqlite_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from tracker.errors import ConfigError
    from tracker.pipeline.imports.own_csv import import_file

    csv_file = tmp_path / "future.csv"
    csv_file.write_text(
        "provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at\n"
        "somecloud,a,on_demand,H100 SXM,1,2.2,USD,2030-01-01T00:00:00+00:00\n"
        "somecloud,b,on_demand,H100 SXM,1,2.3,USD,2026-01-01T00:00:00+00:00\n"
    )
    result = import_file(sqlite_engine, csv_file)
    assert len(result.bad_rows) == 1 and "line 2" in str(result.bad_rows[0]) and "future" in str(result.bad_rows[0])
    from datetime import UTC, datetime

    sky = tmp_path / "vms.csv"
    sky.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"
                   "p4d.24xlarge,A100,8,96,1152,32.77,,us-east-1\n")
    with pytest.raises(ConfigError, match="in the future"):
        import_file(sqlite_engine, sky, provider="aws", observed_at=datetime(2030, 1, 1, tzinfo=UTC))


def test_a_prices_row_holds_the_offer_normalise_makes_of_it(tmp_path: Path) -> None:
    """``OfferRow`` takes its offer fields from ``NormalisedOffer`` and is built positionally: each
    holds what ``normalise`` makes of the row's offer (but ``extra``, which the import writes itself)."""
    from dataclasses import fields

    from tracker.catalog.specs import load_catalog
    from tracker.pipeline.imports import own_csv
    from tracker.pipeline.imports.base import ImportResult
    from tracker.pipeline.normalise import NormalisedOffer, normalise

    path = tmp_path / "p.csv"
    path.write_text("provider,sku,kind,gpu_raw,gpu_count,gpu_memory_gb,price_per_hour,currency,observed_at,"
                    "price_since,region,country,term_months,available\n"
                    "synthetic,s-1,reserved,H100 SXM,8,80,20.5,USD,2026-06-01T12:00:00+00:00,"
                    "2026-05-30T12:00:00+00:00,eu-1,DE,12,true\n")
    with path.open(newline="") as fh:
        reader, fmt = own_csv._open_csv(path, fh)
        (row,), = list(own_csv._read_prices(reader, ImportResult("p", fmt), load_catalog()))
    made = normalise(own_csv._offer(row))
    for f in fields(NormalisedOffer):
        if f.name != "extra":
            assert getattr(row, f.name) == getattr(made, f.name), f.name
    assert (row.gpu, row.term_months, row.available, row.country) == ("H100-SXM", 12, True, "DE")

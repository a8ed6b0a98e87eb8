"""The rental index, both methods, against arithmetic done here: on the bundled ewyluda observation
days (real, trimmed: tests/fixtures/history-archives) and on a handmade history in the
OpenComputePrices schema; ``verify`` against a deliberately corrupted roll-up. Both backends."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import text
from sqlalchemy.engine import Engine

from tests.analysis import test_rollup_equivalence as equivalence
from tests.conftest import fixture_path, read, run_main
from tests.pipeline.imports.test_opencomputeprices import HEADER, handmade_row
from tracker.analysis.index import EWYLUDA, METHOD_1, half_up, rental_index, verify
from tracker.errors import ConfigError
from tracker.pipeline.imports import import_files

EWYLUDA_FILES = sorted(fixture_path("history-archives").glob("ewyluda_*.csv"))
#: The archive's GPU keys and the catalog ids they are (ewyluda's docs/methodology.md table).
MODELS = {"A100-40GB": "A100-SXM-40GB", "A100-80GB": "A100-SXM-80GB", "A100-80GB-PCIe": "A100-PCIe-80GB",
          "B200": "B200", "B300": "B300", "H100": "H100-SXM", "H100-NVL": "H100-NVL", "H100-PCIe": "H100-PCIe",
          "H200": "H200", "L40S": "L40S", "MI300X": "MI300X"}
#: The archive's source names as stored (the alias table).
SOURCES = {"vast": "vastai", "oracle": "oci"}
SINCE, UNTIL = datetime(2026, 9, 28, tzinfo=UTC), datetime(2026, 10, 11, tzinfo=UTC)


def archive_rows() -> list[dict[str, Any]]:
    """The bundled observation rows as the arithmetic reads them: a MIG slice is no GPU of its
    model (the catalog refuses it), a sku naming a PCIe A100 is that card (the archive files it
    under A100-40GB), the price per GPU is the instance price over its GPUs."""
    out = []
    for path in EWYLUDA_FILES:
        with path.open(newline="") as fh:
            for r in csv.DictReader(fh):
                if "MIG" in r["sku"]:
                    continue
                gpu = MODELS[r["gpu_model"]]
                if gpu == "A100-SXM-40GB" and "pcie" in r["sku"]:  # Lambda's PCIe cards, filed under A100-40GB there
                    gpu = "A100-PCIe-40GB"
                out.append({"day": datetime.fromisoformat(r["date"]).replace(tzinfo=UTC), "gpu": gpu,
                            "source": SOURCES.get(r["source"], r["source"]), "seller": r["provider"],
                            "segment": r["segment"], "pricing": r["pricing"],
                            "price": float(r["usd_per_hour"]) / float(r["gpu_count"])})
    return out


def cents(value: float) -> float:
    return float(Decimal(repr(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def two_stage(rows: list[dict[str, Any]], seller: str) -> dict[tuple[datetime, str], list[float]]:
    """Each seller's median per (day, gpu): the votes."""
    prices: dict[tuple[datetime, str, str], list[float]] = defaultdict(list)
    for r in rows:
        prices[(r["day"], r["gpu"], r[seller])].append(r["price"])
    votes: dict[tuple[datetime, str], list[float]] = defaultdict(list)
    for (day, gpu, _s), values in prices.items():
        votes[(day, gpu)].append(statistics.median(values))
    return votes


@pytest.fixture
def archive(engine: Engine) -> Engine:
    result = import_files(engine, EWYLUDA_FILES, fmt="ewyluda")
    assert not result.bad_rows
    return engine


def test_method_1_on_the_bundled_observation_days(archive: Engine) -> None:
    """On-demand only (RunPod's community rows are another kind), one vote per stored provider."""
    rows = [r for r in archive_rows() if r["pricing"] == "on_demand" and "Community" not in r["seller"]]
    votes = two_stage(rows, "source")
    got = {(r["time"], r["gpu"]): r for r in read(archive, rental_index, since=SINCE, until=UNTIL).rows}
    assert set(got) == set(votes)
    for key, v in votes.items():
        row, ordered = got[key], sorted(v)
        assert row["index"] == pytest.approx(statistics.median(ordered))
        assert row["providers"] == len(ordered) and row["thin"] is (len(ordered) < 3)
        assert (row["min"], row["max"]) == (pytest.approx(ordered[0]), pytest.approx(ordered[-1]))
        q1, _m, q3 = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else (ordered[0],) * 3
        assert (row["q1"], row["q3"]) == (pytest.approx(q1), pytest.approx(q3))
    h100 = got[(datetime(2026, 10, 10, tzinfo=UTC), "H100-SXM")]
    assert h100["providers"] == 10 and not h100["thin"]


def test_ewyluda_on_the_bundled_observation_days(archive: Engine) -> None:
    """Sellers as the archive names them (RunPod's two clouds apart), segments as its segment
    column says, spot its own series, values rounded half-up to the cent."""
    rows = archive_rows()
    on_demand = [r for r in rows if r["pricing"] == "on_demand"]
    expected: dict[tuple[datetime, str, str], tuple[float, int]] = {}
    for series, subset in [("index", on_demand), ("spot", [r for r in rows if r["pricing"] == "spot"]),
                           *[(s, [r for r in on_demand if r["segment"] == s])
                             for s in ("hyperscaler", "neocloud", "marketplace")]]:
        for (day, gpu), v in two_stage(subset, "seller").items():
            expected[(day, gpu, series)] = (cents(statistics.median(v)), len(v))
    result = read(archive, rental_index, method=EWYLUDA, since=SINCE, until=UNTIL)
    got = {(r["time"], r["gpu"], r["series"]): (r["value"], r["providers"]) for r in result.rows}
    assert got == expected
    assert got[(datetime(2026, 9, 29, tzinfo=UTC), "H100-SXM", "neocloud")] == (3.82, 2)  # (4.14 + 3.49) / 2 = 3.815
    assert not any(r["carried"] for r in result.rows)  # eleven days apart: nothing is carried that far
    assert result.notes == []  # every seller has a segment


def ocp(day: str, source: str, provider: str, price: str, instance: str, *, count: str = "1",
        pricing: str = "on_demand") -> str:
    per_gpu = str(float(price) / float(count))
    return handmade_row(snapshot_date=day, snapshot_ts=f"{day}T10:00:00Z", source=source, provider=provider,
                        instance_type=instance, gpu_name="H100", gpu_variant="SXM5", gpu_memory_gb="80",
                        gpu_count=count, price_per_hour=price, price_per_gpu_hour=per_gpu, pricing_type=pricing)


def handmade_history(engine: Engine, tmp_path: Path) -> None:
    """Two days of handmade H100 prices: a provider with three offers, an aggregator's offer for a
    cloud we collect (that cloud's) and for one we do not (the aggregator's), a half GPU, spot."""
    path = tmp_path / "handmade_index.csv"
    path.write_text("\n".join([
        HEADER,
        ocp("2026-03-20", "lambda", "lambda_labs", "2.0", "gpu_1x_h100_a"),
        ocp("2026-03-20", "lambda", "lambda_labs", "3.0", "gpu_1x_h100_b"),
        ocp("2026-03-20", "lambda", "lambda_labs", "80.0", "gpu_8x_h100_c", count="8"),  # 10.0 per GPU
        ocp("2026-03-20", "runpod", "runpod", "4.0", "H100 SXM"),
        ocp("2026-03-20", "getdeploying", "runpod", "6.0", "1x H100 via gd"),  # runpod's, through the aggregator
        ocp("2026-03-20", "getdeploying", "database_mart", "2.6", "1x H100 dm"),  # a cloud we do not collect
        ocp("2026-03-20", "vultr", "vultr", "5.0", "vbm-h100"),
        ocp("2026-03-20", "vultr", "vultr", "0.25", "vcg-h100-half", count="0.5"),  # half a GPU: left out
        ocp("2026-03-20", "coreweave", "coreweave", "1.0", "h100-spot", pricing="spot"),
        ocp("2026-03-21", "lambda", "lambda_labs", "3.5", "gpu_1x_h100_a"),
        ocp("2026-03-21", "runpod", "runpod", "4.5", "H100 SXM"),
    ]) + "\n")
    result = import_files(engine, [path])
    assert not result.bad_rows


DAY1, DAY2 = datetime(2026, 3, 20, tzinfo=UTC), datetime(2026, 3, 21, tzinfo=UTC)


def test_method_1_on_a_handmade_history(engine: Engine, tmp_path: Path) -> None:
    handmade_history(engine, tmp_path)
    result = read(engine, rental_index,  ["H100-SXM"], since=DAY1, until=DAY2)
    assert result.kinds == ("on_demand",) and result.source == "rollups"
    day1, day2 = result.rows
    votes = sorted([3.0, (4.0 + 6.0) / 2, 5.0, 2.6])  # lambda's middle offer; runpod with its aggregator row; vultr whole
    assert day1["index"] == pytest.approx((votes[1] + votes[2]) / 2)
    assert (day1["providers"], day1["thin"], day1["offers"]) == (4, False, 7)
    assert day1["q1"] == pytest.approx(votes[0] + (votes[1] - votes[0]) * 0.75)
    assert day1["q3"] == pytest.approx(votes[2] + (votes[3] - votes[2]) * 0.25)
    assert (day1["min"], day1["max"]) == (pytest.approx(2.6), pytest.approx(5.0))
    assert day2["index"] == pytest.approx((3.5 + 4.5) / 2)
    assert (day2["providers"], day2["thin"]) == (2, True)
    # spot joins only when asked, as one more provider's vote
    mixed = read(engine, rental_index,  ["H100-SXM"], kinds=("on_demand", "spot"), kinds_given=True, since=DAY1, until=DAY1)
    assert mixed.rows[0]["index"] == pytest.approx(3.0) and mixed.rows[0]["providers"] == 5
    spot = read(engine, rental_index,  ["H100-SXM"], kinds=("spot",), kinds_given=True, since=DAY1, until=DAY1)
    assert [(r["index"], r["providers"], r["thin"]) for r in spot.rows] == [(pytest.approx(1.0), 1, True)]
    # the raw intervals give the same answer, hourly buckets hold the day's single observations
    raw = read(engine, rental_index,  ["H100-SXM"], since=DAY1, until=DAY2, use_rollups=False)
    assert [(r["time"], r["index"]) for r in raw.rows] == [(r["time"], r["index"]) for r in result.rows]
    hourly = read(engine, rental_index,  ["H100-SXM"], since=DAY1, until=DAY1.replace(hour=10), resolution="1h")
    assert [(r["time"], r["index"]) for r in hourly.rows] == [(DAY1.replace(hour=10), pytest.approx(day1["index"]))]


def test_verify_finds_a_corrupted_rollup(engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    handmade_history(engine, tmp_path)
    clean = read(engine, verify,  since=DAY1, until=DAY2)
    assert clean.ok and clean.groups == 8  # six on the first day (spot included), two on the second
    with engine.begin() as conn:
        conn.execute(text("UPDATE index_day SET median = median + 0.5 WHERE provider_id = "
                          "(SELECT id FROM label WHERE space = 'provider' AND name = 'lambda') AND bucket = :b"),
                     {"b": int(DAY1.timestamp())})
        conn.execute(text("DELETE FROM index_day WHERE bucket = :b AND provider_id = "
                          "(SELECT id FROM label WHERE space = 'provider' AND name = 'runpod')"),
                     {"b": int(DAY2.timestamp())})
    found = read(engine, verify,  since=DAY1, until=DAY2)
    assert not found.ok
    what = {(d["time"], d["provider"], d["what"]) for d in found.differences}
    assert (DAY1, "lambda", "median differs") in what
    assert (DAY2, "runpod", "missing from the roll-up") in what
    assert (DAY1, "", "median-of-medians-1 index differs") in what
    url = engine.url.render_as_string(hide_password=False)
    code, out, _err = run_main(capsys, "--db", url, "index", "verify", "--since", "2026-03-20", "--until",
                               "2026-03-22", "--format", "json")
    assert code == 1 and '"median differs"' in out


def ewyluda_row(day: str, source: str, provider: str, segment: str, price: str, sku: str = "x") -> str:
    return f"{day},{day}T06:17:00+00:00,{source},{provider},{segment},on_demand,H100,{sku},global,Global,1,{price},{price},1"


def test_ewyluda_carries_a_missing_seller_forward_three_days(engine: Engine, tmp_path: Path) -> None:
    """Handmade observation files: a seller absent on a day, seen within three days, votes with
    its last prices; after that it is gone. A seller present with another GPU is not absent."""
    header = ("date,collected_at,source,provider,segment,pricing,gpu_model,sku,region,geo,gpu_count,usd_per_hour,"
              "usd_per_gpu_hour,sample_size")
    lines = [header]
    for day in ("2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04", "2026-10-05", "2026-10-06"):
        lines.append(ewyluda_row(day, "lambda", "Lambda", "neocloud", "3.00"))
        lines.append(ewyluda_row(day, "runpod", "RunPod Secure Cloud", "neocloud", "2.00"))
    lines.append(ewyluda_row("2026-10-01", "aws", "AWS", "hyperscaler", "10.00"))
    lines.append(ewyluda_row("2026-10-01", "nebius", "Nebius", "neocloud", "2.50"))
    lines.append("2026-10-02,2026-10-02T06:17:00+00:00,nebius,Nebius,neocloud,on_demand,L40S,l40s,global,Global,1,"
                 "1.2,1.2,1")
    path = tmp_path / "handmade_ewyluda.csv"
    path.write_text("\n".join(lines) + "\n")
    assert not import_files(engine, [path], fmt="ewyluda").bad_rows
    result = read(engine, rental_index,  ["H100-SXM"], method=EWYLUDA, since=datetime(2026, 10, 1, tzinfo=UTC),
                          until=datetime(2026, 10, 6, tzinfo=UTC))
    index = {r["time"].day: (r["value"], r["providers"], r["carried"]) for r in result.rows if r["series"] == "index"}
    assert index[1] == (cents(statistics.median([3.0, 2.0, 10.0, 2.5])), 4, "")
    assert index[2] == (3.0, 3, "aws")  # nebius is present (an L40S): absent only from the H100, not carried
    assert index[3] == (cents(statistics.median([3.0, 2.0, 10.0])), 3, "aws")
    assert index[4] == (3.0, 3, "aws")  # three days after its last observation
    assert index[5] == (2.5, 2, "")  # four days: gone
    hyperscaler = {r["time"].day for r in result.rows if r["series"] == "hyperscaler"}
    assert hyperscaler == {1, 2, 3, 4}


def test_half_up_and_bad_choices() -> None:
    assert (half_up(2.675), half_up(0.125), half_up(2.344999)) == (2.68, 0.13, 2.34)
    with pytest.raises(ConfigError, match="--method"):
        rental_index(None, method="mean-1")
    with pytest.raises(ConfigError, match="daily"):
        rental_index(None, method=EWYLUDA, resolution="1h")
    with pytest.raises(ConfigError, match="--kind"):
        rental_index(None, method=EWYLUDA, kinds=("spot",), kinds_given=True)


def test_every_scraper_declares_its_segment() -> None:
    from scrapers.base import SEGMENTS
    from scrapers.registry import all_scrapers

    assert {name: cls.segment for name, cls in all_scrapers().items() if cls.segment not in SEGMENTS} == {}


def test_index_cli(archive: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    url = archive.url.render_as_string(hide_password=False)
    code, out, _ = run_main(capsys, "--db", url, "index", "--gpu", "H100-SXM", "--since", "2026-09-28", "--until",
                            "2026-10-11", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["time"][:10], r["method"], r["providers"]) for r in rows] == [
        ("2026-09-29", METHOD_1, 4), ("2026-10-10", METHOD_1, 10)]
    code, out, _ = run_main(capsys, "--db", url, "index", "verify", "--since", "2026-09-28", "--until", "2026-10-11")
    assert code == 0 and "the roll-up equals the raw intervals" in out
    code, _out, err = run_main(capsys, "--db", url, "index", "--method", "nope")
    assert code == 2 and "--method" in err


@pytest.mark.parametrize("args", [["index", "--help"], ["index", "verify", "--help"]])
def test_index_help(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, out, _ = run_main(capsys, *args)
    assert code == 0 and "Usage" in out


def test_method_names_agree() -> None:
    from tracker.analysis.index import METHODS
    from tracker.cli.index_cmds import METHOD_NAMES

    assert METHOD_NAMES == METHODS


def test_index_exports_name_the_method_and_its_version(archive: Engine, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import pyarrow.parquet as pq

    url = archive.url.render_as_string(hide_password=False)
    expected = read(archive, rental_index, ["H100-SXM"], since=SINCE, until=UNTIL).rows
    out = tmp_path / "index.csv"
    code, _, err = run_main(capsys, "--db", url, "export", "--format", "csv", "--table", "index", "--gpu", "H100-SXM",
                            "--since", "2026-09-28", "-o", str(out))
    assert code == 0, err
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["time"][:10], float(r["index"]), int(r["providers"])) for r in rows] == [
        (r["time"].date().isoformat(), pytest.approx(r["index"]), r["providers"]) for r in expected]
    meta = json.loads((tmp_path / "index.csv.metadata.json").read_text())
    assert (meta["index_method"], meta["index_method_version"], meta["index_kinds"]) == (METHOD_1, "1", "on_demand")
    pq_path = tmp_path / "index.parquet"
    code, _, err = run_main(capsys, "--db", url, "export", "--format", "parquet", "--table", "index", "--method",
                            EWYLUDA, "--since", "2026-09-28", "-o", str(pq_path))
    assert code == 0, err
    t = pq.read_table(pq_path)
    md = {k.decode(): v.decode() for k, v in t.schema.metadata.items()}
    assert (md["gpu_price_tracker.index_method"], md["gpu_price_tracker.index_method_version"]) == (EWYLUDA, "1.3")
    assert str(t.schema.field("value").type) == "double" and "series" in t.column_names
    h100 = [r for r in t.to_pylist() if r["gpu"] == "H100-SXM" and r["series"] == "neocloud"]
    assert [r["value"] for r in h100] == [3.82, 4.07]
    code, _, err = run_main(capsys, "--db", url, "export", "--format", "csv", "-o", str(tmp_path / "p.csv"))
    assert code == 2 and "--table index" in err


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=equivalence.events)
def test_rollup_index_equals_raw_index_on_random_histories(engine: Engine, history) -> None:  # noqa: ANN001
    """Random collections (hourly, half-hourly and daily providers, failures, spot): the index
    roll-up answers what the raw intervals answer, for both methods and mixed kinds, and verify agrees."""
    with engine.begin() as conn:
        for table in ("index_day", *equivalence.TABLES):
            conn.execute(text(f"DELETE FROM {table}"))
    end = equivalence.record(engine, history)
    since, until = equivalence.T0, end
    for method, kinds in ((METHOD_1, None), (METHOD_1, ("on_demand", "spot")), (EWYLUDA, None)):
        args: dict[str, Any] = {"method": method, "kinds": kinds, "kinds_given": kinds is not None, "since": since,
                                "until": until}
        assert read(engine, rental_index,  **args).rows == read(engine, rental_index,  **args, use_rollups=False).rows
    assert read(engine, verify,  since=since, until=until).ok


def test_a_merged_vote_after_the_raw_horizon_is_the_median_of_medians(engine: Engine, tmp_path: Path) -> None:
    """RunPod's own offers and an aggregator's offers for RunPod are one vote: the median of their
    union while the raw intervals are kept; once pruned, the median of the two groups' medians."""
    from db import rollups

    rows = [HEADER]
    for day, bump in (("2026-03-20", 0.0), ("2026-03-21", 1.0)):
        for price, sku in ((4.0, "a"), (4.2, "b"), (9.0, "c")):
            rows.append(ocp(day, "runpod", "runpod", str(price + bump), f"H100 SXM {sku}"))
        for price, sku in ((6.0, "d"), (7.0, "e")):
            rows.append(ocp(day, "getdeploying", "runpod", str(price + bump), f"1x H100 {sku}"))
        rows.append(ocp(day, "lambda", "lambda_labs", str(3.0 + bump), "gpu_1x_h100_a"))
    path = tmp_path / "handmade_merge.csv"
    path.write_text("\n".join(rows) + "\n")
    assert not import_files(engine, [path]).bad_rows
    union = statistics.median([4.0, 4.2, 9.0, 6.0, 7.0])
    before = read(engine, rental_index,  ["H100-SXM"], since=DAY1, until=DAY1)
    assert before.rows[0]["index"] == pytest.approx((3.0 + union) / 2) and before.notes == []
    with engine.begin() as conn:
        rollups.prune(conn, int(datetime(2026, 3, 24, tzinfo=UTC).timestamp()))
    after = read(engine, rental_index,  ["H100-SXM"], since=DAY1, until=DAY1)
    medians = statistics.median([statistics.median([4.0, 4.2, 9.0]), statistics.median([6.0, 7.0])])
    assert after.rows[0]["index"] == pytest.approx((3.0 + medians) / 2) and medians != union
    assert any("median of their medians" in n for n in after.notes)
    assert read(engine, verify,  since=DAY1, until=DAY2).notes  # the pruned days are left out, and said so

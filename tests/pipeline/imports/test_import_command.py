"""``gpu-tracker import`` end to end, and external providers in ``providers`` and ``/api/providers``.

SQLite only: the command is presentation; the importers are tested on both backends beside it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from tests.conftest import fixture_path
from tests.pipeline.imports.test_archives import H100_FILE
from tracker.cli import app
from tracker.config.settings import Settings


def run(engine: Engine, *args: str, code: int = 0) -> tuple[str, str]:
    res = CliRunner().invoke(app, ["--db", engine.url.render_as_string(hide_password=False), *args])
    assert res.exit_code == code, (res.output, res.exception)
    return res.stdout, res.stderr


@pytest.mark.parametrize("command", [["prices", "--format", "csv"],
                                     ["history", "--gpu", "H100", "--since", "2025-01-01", "--format", "csv"]])
def test_an_export_of_an_empty_store_imports_again(sqlite_engine: Engine, tmp_path: Path, command: list[str]) -> None:
    out, _ = run(sqlite_engine, *command)
    path = tmp_path / "empty.csv"
    path.write_text(out)
    summary, _ = run(sqlite_engine, "import", str(path), "--format", "json")
    assert json.loads(summary)[0]["rows"] == 0


def test_a_bad_header_names_the_missing_column(sqlite_engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("provider,gpu_raw,gpu_count,kind,price_per_hour,currency,observed_at\n"
                    "alpha,H100,1,on_demand,2.0,USD,2025-01-01T00:00:00Z\n")
    res = CliRunner().invoke(app, ["--db", sqlite_engine.url.render_as_string(hide_password=False), "import", str(path)])
    assert res.exit_code != 0
    assert "sku" in str(res.exception) and "column" in str(res.exception)


def test_summary_skipped_lines_and_unmapped_names(sqlite_engine: Engine, tmp_path: Path) -> None:
    lines = fixture_path("history-archives/ewyluda_2026-09-29_without_azure_rows.csv").read_text().splitlines()
    unknown = lines[1].split(",")
    unknown[6], unknown[7] = "Mystery-9000", "mystery-9000-box"
    future = lines[2].split(",")
    future[1] = "2099-01-01T00:00:00+00:00"
    path = tmp_path / "day.csv"
    path.write_text("\n".join([lines[0], lines[1], ",".join(unknown), ",".join(future), lines[3]]) + "\n")
    out, err = run(sqlite_engine, "import", str(path), "--format", "json")
    summary = json.loads(out)[0]
    assert (summary["format"], summary["rows"], summary["stored"], summary["bad_rows"]) == ("ewyluda", 4, 3, 1)
    assert "day.csv line 4: collected_at 2099-01-01T00:00:00+00:00 is in the future" in err
    assert "Mystery-9000" in err and summary["unmapped_gpus"] == "Mystery-9000 (1)"


def test_external_providers_are_listed(sqlite_engine: Engine) -> None:
    run(sqlite_engine, "import", str(H100_FILE), "--max-gap", "5h")
    out, _ = run(sqlite_engine, "providers", "--format", "json")
    rows = {r["provider"]: r for r in json.loads(out)}
    assert rows["dc_roan"]["external"] is True and rows["primecompute"]["status"] == "external"
    assert rows["lambda"]["external"] is False and "lambdalabs" not in rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from tracker.web import create_app

    url = sqlite_engine.url.render_as_string(hide_password=False)
    with TestClient(create_app(Settings(database=url), sqlite_engine), base_url="http://127.0.0.1") as client:
        api = {r["provider"]: r for r in client.get("/api/providers").json()}
    assert api["dc_roan"]["external"] is True and api["dc_roan"]["health"] == "external"
    assert api["lambda"]["external"] is False


def test_the_command_knows_every_format() -> None:
    from tracker.pipeline.imports import FORMAT_NAMES, FORMATS

    assert tuple(FORMATS) == FORMAT_NAMES

"""Imports name GPUs with the project's catalog, the archive's label only a hint: a MIG slice,
a fraction or an unknown name is never stored as a whole GPU (kept raw, reported unmapped).

The slice is ewyluda's real row (tests/fixtures/history-archives/ewyluda_2026-10-10_without_azure_rows.csv:
RunPod's ``NVIDIA B300 SXM6 AC MIG 1g.34gb``, labelled ``B300``, $0.50), re-dated to an hour ago
so that every surface answers "now" with it; beside it a whole B300 at a price of our own
(handmade, $5.00), so that each surface has a B300 to answer with.
"""

from __future__ import annotations

import json
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from db.spans import utcnow
from tests.conftest import fixture_path
from tests.mcp.conftest import call_all, with_client
from tracker.cli import app
from tracker.config.settings import Settings
from tracker.pipeline.imports import import_files
from tracker.pipeline.imports.base import catalog_gpu

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

ARCHIVE = fixture_path("history-archives/ewyluda_2026-10-10_without_azure_rows.csv")
MIG = "NVIDIA B300 SXM6 AC MIG 1g.34gb"
SLICE_PRICE, WHOLE_PRICE = 0.5, 5.0


def _archive(tmp_path: Path) -> Path:
    """The archive's header and its RunPod Secure Cloud MIG row, plus a handmade whole B300, an hour old."""
    lines = ARCHIVE.read_text().splitlines()
    mig = next(line for line in lines if MIG in line and "Secure Cloud" in line)
    at = (utcnow() - timedelta(hours=1)).replace(microsecond=0).isoformat()
    cells = mig.split(",")
    assert cells[6] == "B300" and float(cells[11]) == SLICE_PRICE  # the archive labels the slice a B300
    cells[0], cells[1] = at[:10], at
    whole = [*cells[:7], "NVIDIA B300 SXM6 AC", *cells[8:11], str(WHOLE_PRICE), str(WHOLE_PRICE), "1"]
    path = tmp_path / "ewyluda.csv"
    path.write_text("\n".join([lines[0], ",".join(cells), ",".join(whole)]) + "\n")
    return path


def _cli(engine: Engine, *args: str) -> Any:
    res = CliRunner().invoke(app, ["--db", engine.url.render_as_string(hide_password=False), *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _prices(rows: Any, key: str) -> set[float]:
    return {round(float(r[key]), 2) for r in rows if r.get(key) is not None}


def test_a_mig_slice_labelled_b300_is_not_a_b300_anywhere(engine: Engine, tmp_path: Path) -> None:
    result = import_files(engine, [_archive(tmp_path)])
    assert f"{MIG} slice" in result.unmapped and not result.bad_rows
    assert _prices(_cli(engine, "value", "--gpu", "B300"), "price_per_gpu_hour") == {WHOLE_PRICE}
    trends = [t for t in _cli(engine, "trends", "--gpu", "B300") if t["current"] is not None]
    assert _prices(trends, "current") == {WHOLE_PRICE}
    url = engine.url.render_as_string(hide_password=False)
    with TestClient(__import__("tracker.web", fromlist=["create_app"]).create_app(Settings(database=url), engine),
                    base_url="http://127.0.0.1") as client:
        assert _prices(client.get("/api/prices?gpu=B300").json(), "price_per_gpu_hour") == {WHOLE_PRICE}
        assert _prices(client.get("/api/value?gpu=B300").json()["rows"], "price_per_gpu_hour") == {WHOLE_PRICE}
        page = client.get("/").text
        assert "5.00" in page and "0.50" not in page
    config = tmp_path / "config.toml"
    config.write_text("# defaults\n")
    calls = {"value": ("value", {"gpu": "B300"}), "trends": ("trends", {"gpu": "B300"}),
             "prices": ("prices", {"gpu": "B300", "limit": 100})}
    out = with_client(url, config, lambda client: call_all(client, calls))
    for key in calls:
        assert not out[key].is_error, out[key].content
        text = json.dumps(out[key].structured_content)
        assert "5.0" in text and SLICE_PRICE not in _numbers(out[key].structured_content), (key, text)


def _numbers(doc: Any) -> set[float]:
    """Every number in a JSON document (the prices an MCP answer carries, wherever they sit)."""
    if isinstance(doc, dict):
        return {n for v in doc.values() for n in _numbers(v)}
    if isinstance(doc, list):
        return {n for v in doc for n in _numbers(v)}
    return {round(float(doc), 2)} if isinstance(doc, (int, float)) and not isinstance(doc, bool) else set()


def test_the_catalog_names_every_archive_row() -> None:
    """The rule itself: the provider's name before the archive's label; slices and fractions never whole."""
    assert catalog_gpu([MIG, "B300"], provider="runpod")[:2] == (None, f"{MIG} slice")
    assert catalog_gpu(["p4d.24xlarge", "A100-40GB"], provider="aws")[0] == "A100-SXM-40GB"
    assert catalog_gpu(["H100 80GB HBM3"], provider=None, count=0.5)[:2] == (None, "H100 80GB HBM3 slice")
    assert catalog_gpu(["Tesla A10"], provider=None, memory=4.0)[:2] == (None, "Tesla A10 slice")
    assert catalog_gpu(["Quantum GPU 9000"], provider=None)[:2] == (None, "Quantum GPU 9000")
    # a name that says it is a slice resolves to nothing anywhere in the catalog (normalise included)
    from tracker.catalog.specs import resolve_gpu

    assert resolve_gpu("H100 slice") is None and resolve_gpu("H100 fractional") is None

"""Charts: a PNG (matplotlib, Agg) and a self-contained plotly HTML page (no CDN), from a stored
sequence and from replayed real data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from tests.analysis.seq import HOUR, T0
from tests.analysis.test_history import store_day_one
from tests.conftest import read
from tracker.analysis.grid import Filters
from tracker.analysis.history import cost_per_tflop_history, price_history
from tracker.analysis.plot import lows_for, plot, plot_html, plot_png
from tracker.analysis.trends import all_time_lows
from tracker.cli import app
from tracker.config.settings import Settings
from tracker.errors import ConfigError
from tracker.pipeline.collect import collect

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXTERNAL_SCRIPT = re.compile(r"<script[^>]*\bsrc\s*=", re.IGNORECASE)
EXTERNAL_LINK = re.compile(r"<link[^>]*\bhref\s*=\s*[\"']?(https?:)?//", re.IGNORECASE)
H100 = Filters.of(gpus=["H100-SXM"])


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 10_000


def assert_self_contained_html(path: Path) -> str:
    html = path.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<html") or "<!doctype html" in html[:200].lower()
    assert not EXTERNAL_SCRIPT.search(html), "the page must not load scripts from anywhere"
    assert not EXTERNAL_LINK.search(html)
    # plotly.js itself is inlined (a few MB); the page draws with it
    assert len(html) > 1_000_000 and "Plotly.newPlot" in html
    return html


def test_png_and_html_from_a_stored_sequence(engine: Engine, tmp_path: Path) -> None:
    store_day_one(engine)
    h = read(engine, price_history,  H100, since=T0, until=T0 + 11 * HOUR, resolution="hour")
    lows = lows_for(read(engine, all_time_lows,  H100), "price")
    assert lows["H100-SXM"].value == 2.0 and lows["H100-SXM"].at == T0 + 8 * HOUR
    assert_png(plot_png(h, tmp_path / "chart.png", lows))
    html = assert_self_contained_html(plot_html(h, tmp_path / "chart.html", lows))
    for name in ("alpha", "beta", "gamma", "delta", "market min", "market median", "all-time low 2.00"):
        assert name in html


def test_cost_per_tflop_chart(engine: Engine, tmp_path: Path) -> None:
    store_day_one(engine)
    h = cost_per_tflop_history(read(engine, price_history,  H100, since=T0, until=T0 + 11 * HOUR, resolution="hour"))
    lows = lows_for(read(engine, all_time_lows,  H100), "cost-per-tflop")
    assert lows["H100-SXM"].value == pytest.approx(2.0 / 989.4)
    assert_png(plot(h, tmp_path / "cpt.png", lows))
    html = assert_self_contained_html(plot(h, tmp_path / "cpt.htm", lows))
    assert "TFLOP-h (fp16-dense)" in html  # plotly writes the slash as \u002f


def test_plot_refuses_unknown_suffix_and_empty_data(engine: Engine, tmp_path: Path) -> None:
    h = read(engine, price_history,  H100, since=T0, until=T0 + HOUR, resolution="hour")
    with pytest.raises(ConfigError, match="no data"):
        plot(h, tmp_path / "x.png")
    store_day_one(engine)
    h = read(engine, price_history,  H100, since=T0, until=T0 + HOUR, resolution="hour")
    with pytest.raises(ConfigError, match=".png or .html"):
        plot(h, tmp_path / "x.svg")


def test_plot_command_from_replayed_data(sqlite_engine: Engine, tmp_path: Path) -> None:
    """`scrape --replay` on the bundled real recordings (every active provider), then `plot` writes both files."""
    results = collect(sqlite_engine, Settings(), None, replay=True)
    assert any(r.ok for r in results), [(r.provider, r.error_message) for r in results]
    url = sqlite_engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    for out in (tmp_path / "h100.png", tmp_path / "h100.html"):
        res = runner.invoke(app, ["--db", url, "plot", "--gpu", "H100", "--since", "1d", "--every", "1h", "-o", str(out)])
        assert res.exit_code == 0, (res.output, res.exception)
        assert f"wrote {out}" in res.stdout.replace("\n", "")
    assert_png(tmp_path / "h100.png")
    assert_self_contained_html(tmp_path / "h100.html")

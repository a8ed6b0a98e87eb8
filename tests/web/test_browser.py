"""The dashboard in a real browser (Debian's headless Chromium, driven by Playwright) against a
real uvicorn server, with no network: plotly.js comes from the app itself.

Every page is loaded at phone width (390 px) and desktop width (1400 px) and checked from
inside the page: nothing wider than the viewport, the GPU / provider / $/GPU-h cells of the
price tables on screen, every chart's SVG within its card and its legend clear of the axis
titles. A full-page screenshot of each is saved in the test's own temporary directory (its
path is printed; ``pytest -s`` shows it).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.alerts.helpers import start_receiver
from tests.web.conftest import (
    DEAD_SECRET,
    HOOK_SECRET,
    Store,
    TestClient,
    alert_scenario,
    get_json,
    serving,
)

CHROMIUM = Path("/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)"),
]

PHONE, DESKTOP = 390, 1400
WIDTHS = pytest.mark.parametrize("width", [PHONE, DESKTOP], ids=["phone", "desktop"])


@pytest.fixture(scope="module")
def server(store: Store) -> Iterator[str]:
    from tracker.web import create_app

    with serving(create_app(store.settings, store.engine)) as url:
        yield url


@pytest.fixture(scope="module")
def alerts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A store where rules fired, resolved, were delivered and failed (SQLite: the layout, not
    the backend, is under test here; the page's data is tested on both backends)."""
    from db.engine import make_engine
    from db.migrate import init_db
    from tracker.web import create_app

    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('alerts') / 'tracker.db'}")
    init_db(engine)
    with contextlib.contextmanager(start_receiver)() as receiver:
        settings = alert_scenario(engine, receiver)
        with serving(create_app(settings, engine)) as url:
            yield url
    engine.dispose()


@pytest.fixture(scope="module")
def browser(server: str, alerts_server: str) -> Iterator[Any]:
    """One Chromium for the module. Started after the servers' stores are filled: Playwright's
    sync API keeps an event loop running in this thread, where the pipeline's asyncio.run cannot."""
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM),
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


def open_page(browser: Any, url: str, width: int) -> Any:
    """``url`` in a fresh context of ``width`` CSS pixels (a phone context below 500), loaded
    and, where there are charts, drawn."""
    phone = width < 500
    context = browser.new_context(viewport={"width": width, "height": 844 if phone else 1000},
                                  is_mobile=phone, has_touch=phone, device_scale_factor=1)
    context.route(re.compile(r"^(?!http://127\.0\.0\.1:)"), lambda route: route.abort())  # no network at all
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200, url
    if page.locator(".chart").count():
        page.wait_for_function("[...document.querySelectorAll('.chart')].every(c => c.querySelector('svg.main-svg'))",
                               timeout=15_000)
        page.wait_for_timeout(300)  # plotly's responsive relayout after the first paint
    assert errors == [], errors
    return page


def screenshot(page: Any, directory: Path, name: str) -> Path:
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000  # a rendered page, not a blank one
    print(f"screenshot: {path}")
    return path


#: Measured in the page: horizontal overflow, the key cells of every price table, the charts.
LAYOUT_JS = """
() => {
  const box = el => { const r = el.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom, w: r.width, h: r.height}; };
  const shown = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== "hidden"; };
  const out = {vw: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, bodyWidth: document.body.scrollWidth,
               cells: [], wraps: [], charts: []};
  for (const td of document.querySelectorAll("td.c-gpu, td.c-provider, td.c-price")) {
    const wrap = td.closest(".table-wrap");
    out.cells.push({table: td.closest("table").id, col: td.className, text: td.textContent.trim().slice(0, 40),
                    shown: shown(td), box: box(td), wrap: wrap ? box(wrap) : null});
  }
  for (const w of document.querySelectorAll(".table-wrap")) {
    const t = w.querySelector("table");
    out.wraps.push({table: t ? t.id : "", scroll: w.scrollWidth, client: w.clientWidth});
  }
  for (const c of document.querySelectorAll(".chart")) {
    const card = c.closest(".chart-box"), svg = c.querySelector("svg.main-svg");
    const legend = c.querySelector("g.legend"), xt = c.querySelector(".xtitle"), yt = c.querySelector(".ytitle");
    const low = [...c.querySelectorAll("g.annotation")].find(a => a.textContent.includes("all-time low"));
    const plot = c.querySelector("rect.nsewdrag");
    const ticks = [...c.querySelectorAll("g.xtick text, g.ytick text")].filter(shown).map(box);
    out.charts.push({gpu: c.dataset.gpu, svg: svg ? box(svg) : null, card: box(card), cardInner: card.clientWidth,
                     legend: legend ? box(legend) : null, xtitle: xt ? box(xt) : null, ytitle: yt ? box(yt) : null,
                     legendItems: c.querySelectorAll("g.legend .traces").length,
                     low: low ? box(low.querySelector("text") || low) : null, plot: plot ? box(plot) : null, ticks: ticks});
  }
  return out;
}
"""


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]


def check_layout(page: Any, key_tables: set[str], charts: int = 0) -> dict[str, Any]:
    """Everything the issue asks of the layout, measured by the browser; returns the figures."""
    m = page.evaluate(LAYOUT_JS)
    vw = m["vw"]
    assert m["scrollWidth"] <= vw and m["bodyWidth"] <= vw, f"page wider than the viewport: {m['scrollWidth']} > {vw}"
    seen = {c["table"] for c in m["cells"]}
    assert key_tables <= seen, f"tables without GPU/provider/price cells: {key_tables - seen}"
    for c in m["cells"]:
        b, w = c["box"], c["wrap"]
        assert c["shown"], f"{c['table']}: a {c['col']} cell is hidden ({c['text']!r})"
        assert 0 <= b["l"] and b["r"] <= vw + 0.5, f"{c['table']}: {c['col']} {c['text']!r} is off screen: {b}"
        assert w is None or b["r"] <= w["r"] + 0.5, f"{c['table']}: {c['col']} {c['text']!r} needs sideways scrolling"
    if vw >= DESKTOP:  # no clipping at all on a desktop: no table needs its scrollbar
        wide = [w for w in m["wraps"] if w["scroll"] > w["client"] + 1]
        assert not wide, f"tables clipped at {vw} px: {wide}"
    assert len(m["charts"]) == charts
    for c in m["charts"]:
        assert c["svg"] is not None, f"chart {c['gpu']} not drawn"
        assert c["svg"]["w"] <= c["cardInner"] + 0.5, f"chart {c['gpu']}: svg {c['svg']['w']} px in a {c['cardInner']} px card"
        assert c["svg"]["l"] >= c["card"]["l"] and c["svg"]["r"] <= c["card"]["r"] + 0.5
        assert c["legend"] is not None and c["legendItems"] >= 3
        for title in ("xtitle", "ytitle"):
            if c[title] is not None:
                assert not overlaps(c["legend"], c[title]), f"chart {c['gpu']}: legend overlaps the {title}"
        # the all-time-low label sits inside the plot area, covering neither axis nor a tick label
        if c["low"] is not None:
            low, plot = c["low"], c["plot"]
            assert plot["l"] - 0.5 <= low["l"] and low["r"] <= plot["r"] + 0.5, f"chart {c['gpu']}: low label {low} leaves the plot {plot}"
            assert plot["t"] - 0.5 <= low["t"] and low["b"] <= plot["b"] + 0.5, f"chart {c['gpu']}: low label {low} covers an axis"
            for tick in c["ticks"]:
                assert not overlaps(low, tick), f"chart {c['gpu']}: the all-time-low label covers a tick label {tick}"
        # the legend is inside the drawn SVG, not cut off by it
        assert c["svg"]["l"] - 0.5 <= c["legend"]["l"] and c["legend"]["r"] <= c["svg"]["r"] + 0.5
        assert c["svg"]["t"] - 0.5 <= c["legend"]["t"] and c["legend"]["b"] <= c["svg"]["b"] + 0.5
    return m


@WIDTHS
def test_overview_says_each_price_source_and_age(server: str, client: TestClient, browser: Any, width: int) -> None:
    """Every cheapest-now row says where its price came from and how old it is, on screen."""
    page = open_page(browser, server + "/", width)
    rows = page.evaluate("""() => [...document.querySelectorAll("td.c-provider[data-best]")].map(td => {
        const age = td.querySelector(".sub.age"); const r = age ? age.getBoundingClientRect() : null;
        return {provider: td.dataset.provider, text: age ? age.textContent.trim() : null,
                shown: !!r && r.width > 0 && r.height > 0, right: r ? r.right : 0}; })""")
    assert len(rows) >= 5
    sources = {r["source"] for r in get_json(client, "/api/prices")}
    for r in rows:
        assert r["text"] and r["shown"], r
        source, _, age = r["text"].rpartition(" · ")
        assert source in sources, r
        assert re.fullmatch(r"\d+(\.\d)?[smhd]", age), r
        assert r["right"] <= width + 0.5, f"the age of {r['provider']} is off screen at {width} px"
    page.context.close()


def test_gpu_page_chart_renders_from_the_app_own_plotly(server: str, client: TestClient, browser: Any) -> None:
    page = open_page(browser, f"{server}/gpu/H100-SXM", DESKTOP)
    chart = page.locator("#chart-H100-SXM")
    assert "js-plotly-plot" in (chart.get_attribute("class") or "")  # plotly drew it, from our own server
    legend = set(chart.locator("text.legendtext").all_text_contents())
    assert {"market min", "market median"} <= legend
    assert "all-time low" in chart.inner_text()
    # the chart is in USD: a provider listed only in EUR or INR (no rate configured) has no line
    providers = {r["provider"] for r in get_json(client, "/api/prices?gpu=H100-SXM&kind=on_demand,community")
                 if r["currency"] == "USD"}
    assert providers <= legend, providers - legend
    offers = get_json(client, "/api/prices?gpu=H100-SXM")
    assert page.locator("tr.offer").count() == len(offers) > 5
    page.context.close()


@WIDTHS
@pytest.mark.parametrize(("name", "path", "key_tables", "charts"), [
    ("overview", "/", {"cheapest"}, 0),
    ("gpu-H100", "/gpu/H100", {"offers", "trends", "availability"}, 3),
    ("providers", "/providers", set(), 0),
])
def test_pages_fit_the_screen(server: str, browser: Any, tmp_path: Path, width: int, name: str, path: str,
                              key_tables: set[str], charts: int) -> None:
    page = open_page(browser, server + path, width)
    m = check_layout(page, key_tables, charts)
    if width == PHONE and charts:
        assert all(c["svg"]["w"] <= PHONE for c in m["charts"])
    screenshot(page, tmp_path, f"{name}-{width}")
    if width == DESKTOP and charts:
        # a window made narrow after loading: plotly's responsive resize keeps every chart in its card
        page.set_viewport_size({"width": PHONE + 110, "height": 900})
        page.wait_for_timeout(1200)
        narrowed = check_layout(page, key_tables, charts)
        assert all(c["svg"]["w"] <= PHONE + 110 for c in narrowed["charts"])
        screenshot(page, tmp_path, f"{name}-resized")
    page.context.close()


@WIDTHS
def test_alerts_page_in_the_browser(alerts_server: str, browser: Any, tmp_path: Path, width: int) -> None:
    page = open_page(browser, f"{alerts_server}/", width)
    page.locator("header nav a", has_text="Alerts").click()  # linked from the nav
    page.wait_for_url(f"{alerts_server}/alerts")
    check_layout(page, set())
    html = page.content()
    assert HOOK_SECRET not in html and DEAD_SECRET not in html
    states = dict(zip(page.locator("#rules tr.rule strong").all_text_contents(),
                      page.locator("#rules tr.rule .badge").all_text_contents(), strict=True))
    assert states == {"h100-under-2": "firing", "h100-dead-hook": "firing", "a100-under-1": "armed"}
    assert page.locator("#events tr.event").count() == 7
    failed = page.locator("#deliveries tr.delivery-failed td.reason")
    assert failed.count() == 1 and failed.first.is_visible() and failed.first.inner_text().strip()
    # on a phone too, each row keeps its rule, state and reason on screen
    for cell in ("#rules tr.rule .badge", "#deliveries tr.delivery td.reason", "#events tr.event .badge"):
        for b in page.locator(cell).evaluate_all("els => els.map(e => e.getBoundingClientRect().right)"):
            assert b <= width, (cell, b)
    screenshot(page, tmp_path, f"alerts-{width}")
    page.context.close()

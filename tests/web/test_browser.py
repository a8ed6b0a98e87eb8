"""The dashboard in a real browser (Debian's headless Chromium) against a real uvicorn server:
the GPU page's plotly chart renders from the locally served plotly.js, with no network."""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from tests.web.conftest import Store, TestClient, get_json

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(store: Store) -> Iterator[str]:
    from tracker.web import create_app

    port = _free_port()
    config = uvicorn.Config(create_app(store.settings, store.engine), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="off")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--window-size=1400,1800",
        "--hide-scrollbars", *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_gpu_page_chart_renders_in_chromium(server: str, client: TestClient, tmp_path: Path) -> None:
    result = chromium(tmp_path, "--dump-dom", f"{server}/gpu/H100-SXM")
    dom = result.stdout
    assert result.returncode == 0 and "<html" in dom, result.stderr[-2000:]
    chart = dom[dom.index('id="chart-H100-SXM"'):]
    # plotly replaced the empty div with its SVG: the script ran, from our own server
    assert "js-plotly-plot" in dom[dom.rindex("<div", 0, dom.index('id="chart-H100-SXM"')):][:300]
    assert 'class="main-svg"' in chart
    assert "market min" in chart and "market median" in chart and "all-time low" in chart
    providers = {r["provider"] for r in get_json(client, "/api/prices?gpu=H100-SXM&kind=on_demand,community")}
    legend = set(re.findall(r'class="legendtext"[^>]*>([^<]+)<', chart))
    assert providers <= legend, providers - legend
    offers = get_json(client, "/api/prices?gpu=H100-SXM")
    assert dom.count('<tr class="offer">') == len(offers) > 5


def test_gpu_page_screenshot(server: str, tmp_path: Path) -> None:
    shot = tmp_path / "gpu.png"
    result = chromium(tmp_path, f"--screenshot={shot}", f"{server}/gpu/H100")
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a rendered page, not a blank one

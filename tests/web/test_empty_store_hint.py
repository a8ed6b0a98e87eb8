"""The dashboard of a store with no prices says how to fill it without leading anyone to break it:
collect live prices into it, or look around in a separate demo store; never replay into it (a
replayed store is refused by every later live collection)."""

from __future__ import annotations

import re
import warnings

from sqlalchemy.engine import Engine

from tracker.config.settings import Settings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def test_the_empty_overview_points_to_a_separate_demo_store(engine: Engine) -> None:
    from tracker.web import create_app

    settings = Settings(database=engine.url.render_as_string(hide_password=False))
    with TestClient(create_app(settings, engine), base_url="http://127.0.0.1") as client:
        page = client.get("/")
    assert page.status_code == 200
    hint = re.search(r'<p class="empty" id="no-prices">(.*?)</p>', page.text, re.DOTALL)
    assert hint is not None, page.text[:2000]
    text = " ".join(re.sub(r"<[^>]+>", "", hint.group(1)).split())
    assert "gpu-tracker scrape and reload" in text
    assert "make demo fills a separate demo store (demo.db)" in text and "--db sqlite:///demo.db serve" in text
    # no command in the hint replays or mixes recordings into the store being served
    commands = re.findall(r"<code>(.*?)</code>", hint.group(1))
    assert commands and not [c for c in commands if "--replay" in c or "--mix-replay" in c], commands

"""The fixture kinds a scraper may declare are the ones a replay manifest may say."""

from __future__ import annotations

import json
from pathlib import Path

from scrapers.base import FIXTURE_KINDS
from tracker.pipeline import replay


def test_scrapers_and_replay_know_the_same_fixture_kinds() -> None:
    assert FIXTURE_KINDS == replay.FIXTURE_KINDS
    assert "reference" in FIXTURE_KINDS


def test_an_undated_reference_manifest_is_read_as_a_replay_of_no_date(tmp_path: Path) -> None:
    """A reference fixture holds values of our own, so it has no recording date to be stored at."""
    (tmp_path / "acme").mkdir()
    manifest = {"source": "own values in the shape of a public capture", "recorded": None,
                "fixture": "reference", "responses": []}
    (tmp_path / "acme" / "manifest.json").write_text(json.dumps(manifest))
    info = replay.recording_info("acme", tmp_path)
    assert info is not None and info.fixture == "reference" and info.observed_at is None
    assert info.mark() == {"recorded": None, "fixture": "reference"}

"""The fixture kinds a scraper may declare are the ones a replay manifest may say; every active
provider's replay files say their kind in their names and its fixtures' source and licence are
written down beside them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scrapers.base import FIXTURE_KINDS
from scrapers.registry import all_scrapers, get_scraper
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


ACTIVE = sorted(name for name, cls in all_scrapers().items() if cls.retired is None)
NOT_RECORDINGS = [name for name in ACTIVE if get_scraper(name).fixture_kind != "recording"]
FIXTURE_DOCS = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize("provider", NOT_RECORDINGS)
def test_a_replay_file_name_says_its_kind_where_it_is_no_recording(provider: str) -> None:
    """A reference or handmade fixture never passes for a recording: in a provider whose weakest
    fixture is not a recording, every bundled file names its own kind (a real recording among
    them says ``recording``)."""
    manifest = json.loads((replay.BUNDLED_RECORDINGS / provider / "manifest.json").read_text())
    unnamed = sorted({r["file"] for r in manifest["responses"] if not any(k in r["file"] for k in FIXTURE_KINDS)})
    assert not unnamed, f"{provider}: name the kind (one of {FIXTURE_KINDS}) in {unnamed}"


@pytest.mark.parametrize("provider", ACTIVE)
def test_every_active_provider_documents_its_fixtures_source_and_licence(provider: str) -> None:
    """tests/fixtures/<provider>/README.md says where each fixture came from, its kind, which file
    replay serves and under what licence (or that its values are our own)."""
    doc = FIXTURE_DOCS / provider / "README.md"
    assert doc.is_file(), f"{provider}: no {doc.relative_to(FIXTURE_DOCS.parent.parent)}"
    text = doc.read_text()
    assert re.search(r"^Licen[cs]e: \S", text, re.M), f"{provider}: its README needs a 'Licence:' line"
    assert f"tracker/recordings/{provider}/" in text, f"{provider}: its README must name the replay recording"
    kind = get_scraper(provider).fixture_kind
    assert kind.replace("-", " ").upper() in text.upper().replace("-", " "), f"{provider}: its README must say {kind!r}"

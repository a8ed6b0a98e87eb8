"""Fixtures for the alert tests: a local HTTP receiver (127.0.0.1 only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.alerts.helpers import Receiver, start_receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from start_receiver()

"""The roll-ups of a dense window are summarised a few buckets at a time (``db.rollups.summarise_bounded``):
the same figures as one pass, and the bucket rule of ``db.spans.span`` applied to arrays."""

from __future__ import annotations

import numpy as np
import pytest

from db import rollups
from db.spans import DAY, HOUR, span


def _intervals(seed: int, n: int = 400) -> rollups.Intervals:
    rng = np.random.default_rng(seed)
    offer = np.sort(rng.integers(0, n // 3, n))
    first = rng.integers(0, 3 * DAY, n)
    order = np.lexsort((first, offer))
    offer, first = offer[order], first[order]
    last = first + rng.integers(0, 30 * HOUR, n)
    ends = np.where(rng.random(n) < 0.3, np.nan, last + rng.integers(1, 3 * HOUR, n)).astype(float)
    return rollups.Intervals(offer, rng.integers(1, 3, n), rng.integers(1, 3, n), rng.uniform(1, 9, n).round(2),
                             first, last, ends, rollups.next_seen(offer, first), rng.integers(7, 9, n))


def _rows(s: rollups.Summary) -> list[tuple[float, ...]]:
    return sorted(zip(*(a.tolist() for a in s), strict=True))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("step", [HOUR, DAY])
def test_bounded_summaries_equal_one_pass(seed: int, step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    iv = _intervals(seed)
    b_lo, b_hi = (5 if step == HOUR else 1), (4 * DAY) // step
    whole = rollups.summarise(iv, step, 2 * HOUR, b_lo, b_hi)
    monkeypatch.setattr(rollups, "SUMMARY_ROWS", 50)
    assert len(whole.gpu) > 3 and _rows(rollups.summarise_bounded(iv, step, 2 * HOUR, b_lo, b_hi)) == _rows(whole)


@pytest.mark.parametrize("seed", range(3))
def test_span_arrays_is_the_bucket_rule(seed: int) -> None:
    iv = _intervals(seed)
    for step in (HOUR, DAY):
        first, last = rollups.span_arrays(iv, 2 * HOUR, step)
        expected = [span(int(f), int(ls), None if np.isnan(e) else int(e), 2 * HOUR, None if np.isnan(x) else int(x), step)
                    for f, ls, e, x in zip(iv.first_seen, iv.last_seen, iv.ends_at, iv.next_seen, strict=True)]
        assert list(zip(first.tolist(), last.tolist(), strict=True)) == expected

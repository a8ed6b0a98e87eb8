"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


def best_in_turn(n: int, ours: Callable[[], object], theirs: Callable[[], object]) -> tuple[float, float]:
    """Best of ``n`` seconds of each, one run of ``ours`` then one of ``theirs``, ``n`` times: a busy
    moment of the machine falls on both sides instead of on one."""
    best = [math.inf, math.inf]
    for _ in range(n):
        for k, fn in enumerate((ours, theirs)):
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best[0], best[1]

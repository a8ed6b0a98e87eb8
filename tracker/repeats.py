"""A column of values that come in runs: a list like any other, which also says where it repeats.

A long table built from runs of one value (an hourly year of history: each provider's price
holds for hours, the market changes only where a provider's run does) is hundreds of thousands
of cells but a few thousand runs. ``Repeats`` is that column as a plain list, so every reader of
a list (JSON, CSV, pandas, tests) reads it as one, and its ``runs`` let a table
(``tracker.cli.render``) format, measure and pad each run once instead of each cell.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain, repeat, starmap
from typing import Any


class Repeats(list[Any]):
    """The values of ``runs`` ((value, count) pairs, in order) one after another; ``runs`` is kept
    beside them, so the list is built once and never changed afterwards."""

    __slots__ = ("runs",)

    def __init__(self, runs: Iterable[tuple[Any, int]] = ()) -> None:
        self.runs: list[tuple[Any, int]] = [(v, n) for v, n in runs if n > 0]
        super().__init__(chain.from_iterable(starmap(repeat, self.runs)))

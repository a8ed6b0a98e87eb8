"""A column of values that come in runs: a sequence like a list, which also says where it repeats.

A long table built from runs of one value (an hourly year of history: each provider's price
holds for hours, the market changes only where a provider's run does) is hundreds of thousands
of cells but a few thousand runs. ``Repeats`` is that column as a sequence read like a list (by
index, length and iteration), spelled out cell by cell only when read so, and its ``runs`` let a
table (``tracker.cli.render``) format, measure and pad each run once instead of each cell.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, repeat, starmap
from operator import itemgetter
from typing import Any, overload


class Repeats(Sequence[Any]):
    """The values of ``runs`` ((value, count) pairs, in order, each count at least 1) one after another."""

    __slots__ = ("_cells", "_length", "runs")

    def __init__(self, runs: list[tuple[Any, int]]) -> None:
        self.runs = runs
        self._length = sum(map(itemgetter(1), runs))  # in C: an hourly year's table has 80,000 runs
        self._cells: list[Any] | None = None

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Any]:
        return chain.from_iterable(starmap(repeat, self.runs))

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if self._cells is None:  # spelled out once, on the first read by index
            self._cells = list(self)
        return self._cells[index]

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of the same values in the same order (a list of them too)."""
        return isinstance(other, Sequence) and not isinstance(other, str) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # a sequence compared by its values, like a list

    def __repr__(self) -> str:
        return f"Repeats({self.runs!r})"

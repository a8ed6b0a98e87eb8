"""The README's tour, run as written in a real terminal 80 columns wide, on the demo store ``make
demo`` fills.

The commands are read from README.md (the first ``sh`` block under "A short tour"), so the README
and this test cannot drift apart. They run one after another in one shell, as a reader pastes
them, in a scratch folder that looks like a checkout (``Makefile``, ``pyproject.toml``, ``tests/``
with the archives, and ``.venv`` linked from this one): ``make demo`` there fills that folder's
``demo.db``, never the checkout's, and needs nothing outside the repository. What the
terminal shows is then checked: every command succeeds, ``history`` and ``trends`` show prices
that move over the ranges the tour asks about, and every table fits 80 columns with the numbers
that answer its question on screen.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.terminal import run_in_terminal

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
WIDTH = 80
#: What the scratch checkout links from this one: all that ``make demo`` and the tour read.
LINKED = ("Makefile", "pyproject.toml", "tests", ".venv")
MARK = "@@tour"
TABLE_BORDERS = "┃│"
#: The characters a table line ends with when the terminal did not cut it.
LINE_ENDS = "┃│┓┐┩┤┘┛"


def tour_lines(text: str | None = None) -> list[str]:
    """The command lines of the README's tour: the first ``sh`` block under "## A short tour"."""
    text = README.read_text(encoding="utf-8") if text is None else text
    section = text.split("\n## A short tour", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "README: the tour's ```sh block is missing"
    return [line.strip() for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def command_of(line: str) -> str:
    """A tour line's command, for test ids and the checks below: ``make demo``, ``history``, ``alerts backtest``."""
    words = line.split("#", 1)[0].split()
    if words[:1] != ["gpu-tracker"]:
        return " ".join(words[:2])
    rest = [w for w in words[1:] if not w.startswith("-")]
    return " ".join(rest[:2]) if rest[:1] == ["alerts"] else rest[0]


@dataclass(frozen=True)
class Step:
    line: str
    screen: list[str]
    exit_code: int


def run_tour(folder: Path, lines: list[str]) -> list[Step]:
    """Run ``lines`` in one bash in a pty WIDTH columns wide, in ``folder``; each line's screen apart.

    Between the lines (never inside one) the script prints a marker and the line's exit code."""
    script = "".join(f"printf '{MARK} {i}\\n'\n{line}\nprintf '{MARK} exit %d\\n' $?\n" for i, line in enumerate(lines))
    (folder / "tour.sh").write_text(script, encoding="utf-8")
    home = folder / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PWD": str(folder)}
    screen = run_in_terminal(["-c", f"cd {folder} && bash tour.sh"], width=WIDTH, env=env, command=["bash"],
                             timeout=600)
    steps: list[Step] = []
    current: list[str] | None = None
    for row in screen.lines:
        if row.startswith(f"{MARK} exit "):
            assert current is not None
            steps.append(Step(lines[len(steps)], current, int(row.split()[-1])))
            current = None
        elif row.startswith(f"{MARK} "):
            current = []
        elif current is not None:
            current.append(row)
    return steps


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Step]]:
    venv = ROOT / ".venv"
    if not (venv / "bin" / "gpu-tracker").exists():
        pytest.skip("the tour needs this checkout's .venv (`make install`)")
    folder = tmp_path_factory.mktemp("checkout")
    for name in LINKED:
        (folder / name).symlink_to(ROOT / name)
    # `make demo` first brings .venv up to date with pyproject.toml (`install`); that must be a
    # no-op here, or it would install the scratch folder into this checkout's venv
    if subprocess.run(["make", "-q", "install"], cwd=folder, capture_output=True).returncode != 0:
        pytest.skip(".venv is older than pyproject.toml: run `make install` first")
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("GPU_TRACKER_")}
    try:
        lines = tour_lines()
        steps = run_tour(folder, lines)
    finally:
        os.environ.update(saved)
    assert len(steps) == len(lines), f"the tour stopped after {len(steps)} of {len(lines)} lines"
    yield {command_of(s.line): s for s in steps}


# -- reading a table off the screen ------------------------------------------------------------

@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]
    lines: list[str]

    def column(self, name: str) -> list[str]:
        i = self.header.index(name)
        return [r[i] for r in self.rows]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(f"[{TABLE_BORDERS}]", line)[1:-1]]


def tables(screen: list[str]) -> list[Table]:
    """The Rich tables on a screen: header cells (a header wrapped over lines joined), body rows
    as shown (a wrapped row is several rows here), and every line of the table."""
    found: list[Table] = []
    header: list[list[str]] = []
    rows: list[list[str]] = []
    lines: list[str] = []
    for line in screen:
        first = line[:1]
        if first in "┏┡└├":
            lines.append(line)
            if first == "└":
                found.append(Table([" ".join(w for w in col if w) for col in zip(*header, strict=True)], rows, lines))
                header, rows, lines = [], [], []
        elif first == "┃":
            header.append(_cells(line))
            lines.append(line)
        elif first == "│":
            rows.append(_cells(line))
            lines.append(line)
    return found


NUMBER = re.compile(r"^-?\$?\d[\d,]*(\.\d+)?%?$")


def as_number(cell: str) -> float | None:
    return float(cell.replace(",", "").replace("$", "").rstrip("%")) if NUMBER.match(cell) else None


# -- the checks --------------------------------------------------------------------------------

def test_the_tour_is_read_from_the_readme() -> None:
    lines = tour_lines()
    assert command_of(lines[0]) == "make demo" and lines[1].startswith(". .venv/bin/activate")
    assert any(command_of(line) == "history" and "--since 2025-" in line for line in lines)
    sample = "## A short tour\n\n```sh\nmake demo   # a comment\n# only a comment\n\ngpu-tracker trends --as-of 2025-10-25\n```\n"
    assert tour_lines("intro\n" + sample) == ["make demo   # a comment", "gpu-tracker trends --as-of 2025-10-25"]
    assert [command_of(x) for x in ("make demo", "gpu-tracker alerts backtest r --since 1d", "gpu-tracker trends")] == \
        ["make demo", "alerts backtest", "trends"]


def test_every_line_of_the_tour_succeeds(tour: dict[str, Step]) -> None:
    failed = {s.line: "\n".join(s.screen[-5:]) for s in tour.values() if s.exit_code != 0}
    assert not failed, failed


def test_history_moves_over_the_range_the_tour_asks_about(tour: dict[str, Step]) -> None:
    (table,) = tables(tour["history"].screen)
    prices = {n for name in ("min", "median") for c in table.column(name) if (n := as_number(c)) is not None}
    assert len(table.rows) >= 5 and len(prices) > 1, table.lines


def test_trends_moves_as_of_the_archive(tour: dict[str, Step]) -> None:
    (table,) = tables(tour["trends"].screen)
    changes = [as_number(c) for name in table.header if name.endswith("%") for c in table.column(name)]
    assert any(c for c in changes), table.lines  # a change that is a number and not 0


def test_plot_and_backtest_see_the_archive(tour: dict[str, Step]) -> None:
    assert re.search(r"wrote \S*h100\.png \([\d,]+ bytes\)", "\n".join(tour["plot"].screen))
    (table,) = tables(tour["alerts backtest"].screen)
    assert table.rows and all(r[0].startswith("2025-10-") for r in table.rows), table.lines


#: The columns that answer each command's question: on screen at 80 columns, never behind --wide.
ANSWERS: dict[str, tuple[str, ...]] = {
    "make demo": ("gpu", "provider", "$/GPU-h"),
    "prices": ("gpu", "provider", "$/GPU-h"),
    "value": ("gpu", "$/GPU-h", "TFLOP-h"),
    "history": ("time", "min", "median"),
    "trends": ("gpu", "now", "24h %"),
    "tco": ("key", "value"),
    "recommend": ("gpu", "USD/h", "provider"),
    "alerts backtest": ("time", "event", "value", "threshold"),
}

#: Tables that still push numbers off an 80-column screen: their layouts are being reworked
#: (numbers first, long text below). Not strict, so the rework landing first breaks nothing: an
#: XPASS in the summary says the mark can go.
STILL_HIDES_NUMBERS = {
    "make demo": "the import summaries (key/value tables) show only their labels: the long list of unmapped names "
                 "pushes the values out",
    "tco": "the key/value table shows only its labels: a long source string pushes the values out",
    "alerts backtest": "the threshold is behind --wide",
}


def _fit_cases() -> list[object]:
    cases: list[object] = []
    for command in ANSWERS:
        marks = [pytest.mark.xfail(reason=STILL_HIDES_NUMBERS[command], strict=False)] if command in STILL_HIDES_NUMBERS else []
        cases.append(pytest.param(command, marks=marks, id=command.replace(" ", "-")))
    return cases


@pytest.mark.parametrize("command", _fit_cases())
def test_every_table_fits_80_columns_with_its_numbers_on_screen(tour: dict[str, Step], command: str) -> None:
    assert command in tour, f"the README tour no longer runs {command!r}: update ANSWERS"
    shown = tables(tour[command].screen)
    assert shown, tour[command].screen
    for table in shown:
        # a table line cut by the terminal ends without its border and goes on on the next line
        cut = [line for line in table.lines if len(line) > WIDTH or line[-1] not in LINE_ENDS]
        assert not cut, cut
        for row in table.rows:
            for cell in row:
                assert not ("…" in cell and re.search(r"\d", cell)), f"a number cut short: {cell!r} in {row}"
                assert not re.fullmatch(r"[\d.,$%-]*\d[\d.,$%-]*", cell) or as_number(cell) is not None, \
                    f"a number broken over lines: {cell!r} in {row}"
        # a key/value table that shows only its keys has pushed every value off the screen
        assert "key" not in table.header or "value" in table.header, f"labels only: {table.lines[:4]}"
    header = " | ".join(h for t in shown for h in t.header)
    missing = [name for name in ANSWERS[command] if not any(name in h for t in shown for h in t.header)]
    assert not missing, f"{command}: {missing} not on screen (header: {header})"


def test_the_readme_opens_with_the_two_commands_that_set_up_a_fresh_machine() -> None:
    first = re.search(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert first is not None
    assert [line.split("#")[0].strip() for line in first.group(1).splitlines()] == ["make run", "make test"]

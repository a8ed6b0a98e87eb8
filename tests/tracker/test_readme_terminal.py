"""The README's commands, run as written in a real pseudo-terminal 80 and 120 columns wide, on both
backends: every table fits the terminal (no line wrapped by it, nothing cut to "…"), and the numbers
that answer each command's question are on screen whole, in the one format of their column.

The tour is also run whole, as a reader pastes it (``make demo``, the venv, the store, then every
command in one shell), in a scratch folder that looks like a checkout: ``make demo`` there fills
that folder's ``demo.db`` from what the repository holds, and ``history``, ``trends`` and ``alerts
backtest`` must show prices that move over the ranges the tour asks about."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.terminal import Screen, run_in_terminal
from tracker.cli.render import Column, column_texts, quantity

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # `make demo` imports the archives: its own bound is 900 s

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
WIDTHS = (80, 120)
#: Long-running commands of the tour (a collector, a web server): not run here.
NOT_RUN = ("gpu-tracker run", "gpu-tracker serve")
#: Commands of the README's reference with a table, run after the tour on the same store.
REFERENCE = (
    "gpu-tracker providers",
    "gpu-tracker status",
    "gpu-tracker catalog --gpu H100",
    "gpu-tracker catalog --unmapped",
    "gpu-tracker alerts list",
    "gpu-tracker alerts backtest h100-under-2 --since 30d",
    "gpu-tracker alerts history",
    "gpu-tracker prices --gpu H100 --kind all --limit 10",
    "gpu-tracker prices --group-by gpu --limit 15",
    "gpu-tracker prices --gpu H100:8 --max-price 3 --limit 10",
    "gpu-tracker value --max-price 2 --min-gpu-memory 40",
    "gpu-tracker db check",
)
#: Per command, where its JSON keeps its rows and which numbers answer its question.
ANSWERS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "prices": (None, ("price_per_gpu_hour",)),
    "value": (None, ("price_per_gpu_hour", "cost_per_tflop_hour")),
    "history": (None, ("min", "median")),
    "trends": (None, ("current",)),
    "recommend": ("options", ("price_per_hour",)),
    "alerts backtest": ("events", ("value", "threshold")),
}
#: Commands answering with one record (a key/value table): the numbers that answer.
RECORD_ANSWERS = {"tco": ("rent", "purchase", "breakeven_hours", "breakeven_months_at_utilization",
                          "effective_hourly_cost")}
_BOX = "┏┃┡│└┣┗┠├╭╰━"
#: Commands whose rows each fit one line at 80 columns (nothing in them needs to wrap).
ONE_LINE_ROWS = ("value", "trends")
_MAX_ROWS = 10


def tour_block(text: str | None = None) -> list[str]:
    """Every line of the README's tour (the first ``sh`` block under "A short tour"), comments cut."""
    block = re.search(r"## A short tour.*?```sh\n(.*?)```", README.read_text() if text is None else text, re.S)
    assert block, "the README has a tour"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def tour_lines() -> list[str]:
    """The ``gpu-tracker`` lines of the README's tour."""
    return [line for line in tour_block() if line.startswith("gpu-tracker ") and not line.startswith(NOT_RUN)]


def command_of(line: str) -> str:
    words = [w for w in shlex.split(line)[1:] if not w.startswith("-")]
    return " ".join(words[:2]) if words and words[0] == "alerts" else (words[0] if words else "")


def environment(db: str, tmp: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {"GPU_TRACKER_DB": db, "HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp / "config"),
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


def as_json(line: str, env: dict[str, str]) -> Any:
    proc = subprocess.run(["bash", "-c", line + " --format json"], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def expected_numbers(line: str, env: dict[str, str]) -> dict[str, list[str]] | None:
    """Per answering key, its numbers as the table writes them (the JSON form of the same command)."""
    record = RECORD_ANSWERS.get(command_of(line))
    if record:
        data = as_json(line, env)
        return {k: [quantity(data[k])] for k in record}
    spec = ANSWERS.get(command_of(line))
    if spec is None:
        return None
    data = as_json(line, env)
    rows = data if spec[0] is None else data[spec[0]]
    rows = [r for r in rows if all(r.get(k) is not None for k in spec[1])][:_MAX_ROWS]
    return {k: column_texts(Column(k, k), rows) for k in spec[1]}


def check_screen(line: str, screen: Screen, numbers: dict[str, list[str]] | None) -> None:
    where = f"`{line}` at {screen.width} columns"
    assert screen.exit_code == 0, f"{where}:\n{screen.text}"
    assert "…" not in screen.text, f"{where} cut a value:\n{screen.text}"
    for text in screen.lines:
        if text[:1] in _BOX:
            assert text[-1] in _BOX + "┓┫┩┤┘┛╮╯", f"{where}: the terminal wrapped a table line:\n{screen.text}"
    if command_of(line) in ONE_LINE_ROWS:
        body = [t for t in screen.lines if t.startswith("│")]
        assert body and all(t[1:].split("│")[0].strip() for t in body), f"{where}: a row wraps:\n{screen.text}"
    on_screen = set(re.findall(r"[\d,.\-]+", screen.text))
    for key, texts in (numbers or {}).items():
        for text in texts:
            assert text in on_screen, f"{where}: {key} {text} is not on screen whole:\n{screen.text}"


def make_is_current(folder: Path) -> bool:
    """Whether ``make`` in ``folder`` would leave .venv as it is: the file ``install`` builds is up
    to date (``install`` itself is phony, as its bytecode step runs every time, so ``make -q
    install`` always answers "out of date")."""
    return subprocess.run(["make", "-q", ".venv/bin/gpu-tracker"], cwd=folder, capture_output=True).returncode == 0


def test_the_readme_in_a_terminal(db_url: str, tmp_path: Path) -> None:
    env = environment(db_url, tmp_path)
    lines = tour_lines()
    assert tour_block()[0] == "make demo", "the tour starts by filling the demo store"
    if not make_is_current(ROOT):
        pytest.skip(".venv is older than pyproject.toml: run `make install` first")
    demo = subprocess.run(["make", "-s", "demo", f"DEMO_DB={db_url}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={k: v for k, v in os.environ.items() if not k.startswith("GPU_TRACKER_")})
    assert demo.returncode == 0, demo.stderr[-3000:]
    for width in WIDTHS:
        for line in [*lines, *REFERENCE]:
            if width != WIDTHS[0] and line.startswith("gpu-tracker alerts add"):
                run_in_terminal(["-c", "gpu-tracker alerts remove h100-under-2"], width=width, env=env,
                                command=["bash"])
            screen = run_in_terminal(["-c", line], width=width, env=env, command=["bash"])
            check_screen(line, screen, expected_numbers(line, env) if screen.exit_code == 0 else None)


# -- the tour as a reader runs it: make demo, the venv, the store, every command in one shell ---------

#: What the scratch checkout links from this one: all that ``make demo`` and the tour read.
LINKED = ("Makefile", "pyproject.toml", "tests", ".venv")
_MARK = "@@tour"


@dataclass(frozen=True)
class Step:
    line: str
    screen: Screen


def run_tour(folder: Path, lines: list[str], env: dict[str, str]) -> list[Step]:
    """``lines`` in one bash in a pty 80 columns wide, in ``folder``; each line's screen apart
    (between the lines, never inside one, the script prints a marker and the line's exit code)."""
    script = "".join(f"printf '{_MARK} {i}\\n'\n{line}\nprintf '{_MARK} exit %d\\n' $?\n" for i, line in enumerate(lines))
    (folder / "tour.sh").write_text(script)
    screen = run_in_terminal(["-c", f"cd {folder} && bash tour.sh"], width=WIDTHS[0], env=env, command=["bash"],
                             timeout=900)
    steps: list[Step] = []
    current: list[str] | None = None
    for text in screen.lines:
        if text.startswith(f"{_MARK} exit "):
            assert current is not None
            steps.append(Step(lines[len(steps)], Screen(current, int(text.split()[-1]), WIDTHS[0])))
            current = None
        elif text.startswith(f"{_MARK} "):
            current = []
        elif current is not None:
            current.append(text)
    return steps


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not (ROOT / ".venv" / "bin" / "gpu-tracker").exists():
        pytest.skip("the tour needs this checkout's .venv (`make install`)")
    folder = tmp_path_factory.mktemp("checkout")
    for name in LINKED:
        (folder / name).symlink_to(ROOT / name)
    # `make demo` first brings .venv up to date (`install`): from here that would install the
    # scratch folder into this checkout's venv, so it must have nothing to do
    if not make_is_current(folder):
        pytest.skip(".venv is older than pyproject.toml: run `make install` first")
    env = environment(f"sqlite:///{folder}/demo.db", folder)
    lines = tour_block()
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("GPU_TRACKER_")]:
            mp.delenv(key)  # the tour sets its own store; a developer's must not leak in
        steps = run_tour(folder, lines, {k: v for k, v in env.items() if k != "GPU_TRACKER_DB"})
        assert len(steps) == len(lines), f"the tour stopped after {len(steps)} of {len(lines)} lines"
        return {"steps": steps, "env": env, "json": {s.line: as_json(s.line, env) for s in steps
                                                     if command_of(s.line) in ("history", "trends", "alerts backtest")}}


def test_the_tour_runs_as_written_and_every_table_fits(tour: dict[str, Any]) -> None:
    steps: list[Step] = tour["steps"]
    assert [s.line for s in steps][:3] == ["make demo", ". .venv/bin/activate", "export GPU_TRACKER_DB=sqlite:///$PWD/demo.db"]
    for step in steps:
        gpu_tracker = step.line.startswith("gpu-tracker ")
        check_screen(step.line, step.screen, expected_numbers(step.line, tour["env"]) if gpu_tracker else None)
    # make demo's summaries (the replay, each import) keep their values on screen, long texts below
    demo = steps[0].screen.lines
    assert not [t for t in demo if t.startswith("┃ key") and "value" not in t], "\n".join(demo)
    recipe = (ROOT / "Makefile").read_text().split("\ndemo: install\n", 1)[1].split("\n\n", 1)[0]
    imports = len(re.findall(r" import ", recipe))
    assert imports >= 3 and len([t for t in demo if re.match(r"│ stored +│ +[\d,]+ +│$", t)]) == imports, "\n".join(demo)


def _answer(tour: dict[str, Any], command: str) -> tuple[str, Any]:
    line = next(s.line for s in tour["steps"] if s.line.startswith("gpu-tracker ") and command_of(s.line) == command)
    return line, tour["json"][line]


def test_history_moves_over_the_range_the_tour_asks_about(tour: dict[str, Any]) -> None:
    line, rows = _answer(tour, "history")
    assert "--since 2025-" in line and "--until 2025-" in line
    prices = {r[k] for r in rows for k in ("min", "median") if r[k] is not None}
    assert len([r for r in rows if r["min"] is not None]) >= 5 and len(prices) > 1, rows
    # the screen shows them (check_screen above compares each number with the table)


def test_trends_moves_as_of_the_archive(tour: dict[str, Any]) -> None:
    line, rows = _answer(tour, "trends")
    keys = ("change_24h_pct", "change_7d_pct", "change_30d_pct", "change_90d_pct")
    moved = [(r["gpu"], k) for r in rows for k in keys if r[k]]  # a change that is there and not 0
    assert moved, rows
    screen = next(s.screen for s in tour["steps"] if s.line == line)
    on_screen = {round(float(n.replace(",", "")), 2) for n in re.findall(r"-?\d[\d,]*(?:\.\d+)?", screen.text)}
    for gpu, key in moved:  # the change is on screen too, to its cent
        change = next(r[key] for r in rows if r["gpu"] == gpu)
        assert round(change, 2) in on_screen, (gpu, key, change, screen.text)


def test_plot_and_backtest_see_the_archive(tour: dict[str, Any]) -> None:
    plot = next(s.screen for s in tour["steps"] if command_of(s.line) == "plot")
    assert re.search(r"wrote \S*h100\.png \([\d,]+ bytes\)", plot.text), plot.text
    _, backtest = _answer(tour, "alerts backtest")
    fired = [e for e in backtest["events"] if e["event"] == "fired"]
    assert fired and all(str(e["time"]).startswith("2025-10-") for e in backtest["events"]), backtest


def test_the_tour_is_read_from_the_readme() -> None:
    sample = "## A short tour\n\n```sh\nmake demo   # a comment\n# only a comment\n\ngpu-tracker trends  # now\n```\n"
    assert tour_block("intro\n" + sample) == ["make demo", "gpu-tracker trends"]
    assert [command_of(x) for x in ("gpu-tracker alerts backtest r --since 1d", "gpu-tracker trends")] == \
        ["alerts backtest", "trends"]


def test_the_readme_opens_with_the_two_commands_that_set_up_a_fresh_machine() -> None:
    first = re.search(r"```sh\n(.*?)```", README.read_text(), re.S)
    assert first is not None
    assert [line.split("#")[0].strip() for line in first.group(1).splitlines()] == ["make run", "make test"]

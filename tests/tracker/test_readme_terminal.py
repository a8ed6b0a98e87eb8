"""The README's commands, run as written in a real pseudo-terminal 80 and 120 columns wide, on both
backends: every table fits the terminal (no line wrapped by it, nothing cut to "…"), and the numbers
that answer each command's question are on screen whole, in the one format of their column."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.terminal import Screen, run_in_terminal
from tracker.cli.render import Column, column_texts, quantity

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
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


def tour_lines() -> list[str]:
    """The ``gpu-tracker`` lines of the README's tour (the first ``sh`` block under "A short tour"), comments cut."""
    block = re.search(r"## A short tour.*?```sh\n(.*?)```", README.read_text(), re.S)
    assert block, "the README has a tour"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line.startswith("gpu-tracker ") and not line.startswith(NOT_RUN)]


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


def test_the_readme_in_a_terminal(db_url: str, tmp_path: Path) -> None:
    env = environment(db_url, tmp_path)
    lines = tour_lines()
    assert any(line.startswith("gpu-tracker scrape --replay") for line in lines)
    for width in WIDTHS:
        for line in [*lines, *REFERENCE]:
            if width != WIDTHS[0] and line.startswith("gpu-tracker scrape"):
                continue  # the store is filled once
            if width != WIDTHS[0] and line.startswith("gpu-tracker alerts add"):
                run_in_terminal(["-c", "gpu-tracker alerts remove h100-under-2"], width=width, env=env,
                                command=["bash"])
            screen = run_in_terminal(["-c", line], width=width, env=env, command=["bash"])
            check_screen(line, screen, expected_numbers(line, env) if screen.exit_code == 0 else None)

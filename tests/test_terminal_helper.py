"""The pseudo-terminal helper the table tests use shows what a terminal of that width shows."""

from __future__ import annotations

import pytest

from tests.terminal import run_in_terminal

pytestmark = pytest.mark.slow


def test_a_line_longer_than_the_terminal_wraps_on_screen() -> None:
    screen = run_in_terminal(["-c", "printf '%s\\n' " + "a" * 50 + "b" * 50], width=40, command=["bash"])
    assert screen.exit_code == 0
    assert screen.lines == ["a" * 40, "a" * 10 + "b" * 30, "b" * 20]


def test_the_command_sees_the_pty_width_and_not_columns() -> None:
    screen = run_in_terminal(["-c", "stty size; echo $COLUMNS"], width=57, env={}, command=["bash"])
    assert screen.lines[0] == "3000 57"


def test_gpu_tracker_runs_in_the_terminal_with_its_exit_code() -> None:
    help_screen = run_in_terminal(["--help"], width=60)
    assert help_screen.exit_code == 0
    assert help_screen.lines[0].startswith("Usage:")
    assert max(len(line) for line in help_screen.lines) <= 60
    bad = run_in_terminal(["prices", "--no-such-option"], width=60)
    assert bad.exit_code == 2
    assert "No such option" in bad.text

"""Run ``gpu-tracker`` in a real pseudo-terminal of a given width and read the screen a person sees.

``pexpect`` gives the command a pty (so Rich sees a terminal and its real width, not ``COLUMNS``),
and ``pyte`` plays the bytes on a VT100 screen of that width: a line too long for the terminal
wraps there as it would in front of a person, colours and cursor moves are applied, and what is
left is the text on screen. Standard output and standard error share the screen, as they do in a
terminal.

    screen = run_in_terminal(["--db", url, "prices", "--gpu", "H100"], width=80)
    assert screen.exit_code == 0
    assert "2.49" in screen.text
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

#: Rows of the emulated screen: tall enough that no tested output scrolls off the top.
SCREEN_ROWS = 3000
#: Variables that would override the pty's own size or colour handling in the child.
_SIZE_VARIABLES = ("COLUMNS", "LINES", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR", "NO_COLOR", "TERM")
_NUMBER = re.compile(r"(?<![\w.])-?\$?\d[\d,]*(?:\.\d+)?%?(?![\w.])")


@dataclass(frozen=True)
class Screen:
    """What one command left on the terminal: its lines (trailing blanks cut) and its exit code."""

    lines: list[str]
    exit_code: int
    width: int

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def numbers(self) -> list[str]:
        """Every whole number on screen as written (``2.49``, ``1,978.90``, ``-3.1%``)."""
        return _NUMBER.findall(self.text)


def run_in_terminal(
    args: Sequence[str],
    *,
    width: int,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    command: Sequence[str] | None = None,
    when: tuple[str, Callable[[], object]] | None = None,
) -> Screen:
    """Run ``gpu-tracker ARGS`` (or ``command``) in a pty ``width`` columns wide and return the screen.

    ``env`` adds to the environment (``TERM`` is ``xterm-256color``; the size comes from the pty
    only). ``command`` replaces ``python -m tracker`` (e.g. ``["bash", "-c", line]`` for a README
    line as written). ``when`` is (text, action): the action runs once the text is on the screen,
    so a test can act on what the command says (e.g. release a lock once it says it waits).
    """
    import pexpect
    import pyte

    child_env = {k: v for k, v in os.environ.items() if k not in _SIZE_VARIABLES}
    child_env["TERM"] = "xterm-256color"
    child_env.update(env or {})
    argv = [*(command or (sys.executable, "-m", "tracker")), *args]
    child = pexpect.spawn(argv[0], argv[1:], env=child_env, dimensions=(SCREEN_ROWS, width), timeout=timeout)
    try:
        output = b""
        if when is not None:
            child.expect_exact(when[0])
            when[1]()
            output = child.before + child.after
        output += child.read()  # until the command exits (EOF); raises pexpect.TIMEOUT if it does not
    finally:
        child.close()
    code = child.exitstatus if child.exitstatus is not None else 128 + (child.signalstatus or 0)
    screen = pyte.Screen(width, SCREEN_ROWS)
    stream = pyte.Stream(screen)
    # The pty turns "\n" into "\r\n" (onlcr), as a terminal expects.
    stream.feed(output.decode("utf-8", errors="replace"))
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return Screen(lines=lines, exit_code=code, width=width)

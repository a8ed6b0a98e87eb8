"""The ``gpu-tracker`` command line (Typer + Rich). Presentation only: every command calls
into ``tracker``/``db`` functions and formats what they return.

Command modules register themselves on ``app`` when imported; ``COMMAND_MODULES`` lists them.
"""

from __future__ import annotations

import gc

# A command builds its answer in one go (an hourly year of history is a million objects, none in
# a cycle): the cyclic collector, at its default of every 700 allocations, would walk them again
# and again (a tenth of such a command), and the CLI's own imports with them (Typer, Rich,
# Pydantic: a dozen collections before a command starts). In the CLI it runs every 50,000
# allocations from here on, and ``main`` keeps the imports out of its walks.
gc.set_threshold(50_000, 20, 10)

import copy  # noqa: E402
import importlib  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Annotated  # noqa: E402

import typer  # noqa: E402

from tracker import __version__, logs  # noqa: E402
from tracker.cli.common import State, err_console  # noqa: E402

app = typer.Typer(
    name="gpu-tracker",
    help="Track GPU cloud prices: collect, compare, analyse and alert.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Click's plain help: Rich-formatted help imports markdown and syntax highlighting, which
    # would be most of what `gpu-tracker --help` costs. (Sub-apps inherit this.)
    rich_markup_mode=None,
)

COMMAND_MODULES = ("collect_cmds", "catalog_cmds", "schedule_cmds", "web_cmds", "alerts_cmds", "analysis_cmds", "mcp_cmds",
                   "export_cmds", "db_cmds", "store_cmds", "import_cmds", "availability_cmds", "index_cmds")


@app.callback()
def _root(
    ctx: typer.Context,
    config: Annotated[str | None, typer.Option("--config", "-c", help="TOML config file (default: $GPU_TRACKER_CONFIG or the user config dir).")] = None,
    db: Annotated[str | None, typer.Option("--db", help="Database URL (sqlite:///path or postgresql://...); overrides config and $GPU_TRACKER_DB.")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each scrape and step.")] = False,
) -> None:
    """Track GPU cloud prices: collect, compare, analyse and alert."""
    ctx.obj = State(config_path=config, db_url=db, debug=debug)
    ctx.call_on_close(ctx.obj.close)
    logs.configure("text", logging.DEBUG if debug else logging.INFO if verbose else logging.WARNING)


@app.command("version")
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


for _name in COMMAND_MODULES:
    importlib.import_module(f"tracker.cli.{_name}")


def _looks_like_dir(word: str) -> bool:
    return not word.startswith("-") and (Path(word).is_dir() or "/" in word or word.startswith("."))


def expand_replay_dir(argv: list[str]) -> list[str]:
    """Let ``--replay DIR`` and ``--replay=DIR`` mean ``--replay --replay-dir DIR``.

    Click has no option that is both a flag and takes an optional value, and ``--replay
    [DIR]`` is the documented spelling; a following word is taken as DIR only when it is an
    existing directory or written like a path (so a mistyped one gets "does not exist"), and
    ``scrape --replay`` stays a flag.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--replay="):
            out += ["--replay", "--replay-dir", arg.split("=", 1)[1]]
        elif arg == "--replay" and i + 1 < len(argv) and _looks_like_dir(argv[i + 1]):
            out += ["--replay", "--replay-dir", argv[i + 1]]
            i += 1
        else:
            out.append(arg)
        i += 1
    return out


#: Root options that take a value (the word after them is not a command).
_ROOT_VALUE_OPTIONS = frozenset({"--config", "-c", "--db"})


def command_word(argv: list[str]) -> str | None:
    """The command a command line invokes (``prices`` in ``--db X prices --gpu H100``), or ``None``."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _ROOT_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def app_for(argv: list[str]) -> typer.Typer:
    """``app`` with only the command ``argv`` invokes registered, when it names one.

    Typer builds every registered command's parameters (signatures, type hints, Pydantic
    adapters) before running any: a tenth of a second that ``gpu-tracker prices`` would pay
    for seventy commands it does not run. A line without a command (``--help``) or naming no
    command gets the whole app, so listings and "no such command" errors stay complete."""
    word = command_word(argv)
    if word is None:
        return app
    from typer.main import get_command_name

    commands = [c for c in app.registered_commands
                if (c.name or (c.callback and get_command_name(c.callback.__name__))) == word]
    groups = [g for g in app.registered_groups if g.name == word]
    if not commands and not groups:
        return app
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = commands, groups
    return only


def main(argv: list[str] | None = None) -> None:
    """Console-script entry and the CLI's one error handler: one clear line and an exit code
    (``tracker.cli.errors``); tracebacks only with --debug."""
    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    # The CLI uses no Pydantic plugin; looking for one scans every installed distribution's
    # entry points when the settings class is built (a few hundredths of a second per command).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # The objects of the imports so far are kept out of the cyclic collector's walks (its
    # threshold: at the top of this module).
    gc.freeze()
    try:
        args = expand_replay_dir(args)
        code = app_for(args)(args=args, standalone_mode=False)
        # Without standalone mode a `raise typer.Exit(n)` comes back as the return value.
        if isinstance(code, int) and not isinstance(code, bool) and code:
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("aborted")
        sys.exit(130)
    except Exception as exc:
        # Typer vendors its own click: recognise its usage errors by what they can do.
        show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            sys.exit(code)
        if debug:
            raise
        from rich.markup import escape

        from tracker.cli.errors import describe

        message, exit_code = describe(exc)
        err_console.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False, soft_wrap=True)
        sys.exit(exit_code)

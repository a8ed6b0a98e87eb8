"""Start-up stays light: importing the CLI (and so `gpu-tracker --help`) loads none of the heavy
libraries; each command imports what it uses when it runs. Timings are in bench/cli_startup.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Libraries only some commands need (charts, dashboard, alerts, scheduler, analysis, storage).
HEAVY = ("pandas", "numpy", "plotly", "matplotlib", "fastapi", "uvicorn", "apprise", "apscheduler", "sqlalchemy",
         "sqlmodel", "alembic", "httpx", "pydantic")


def modules_after(code: str) -> set[str]:
    """Every module a fresh interpreter has loaded after running ``code`` (a module imported
    lazily and never used, ``scrapers._lazy``, has not run and does not count)."""
    probe = (f"import sys\n{code}\nimport json\n"
             "print(json.dumps(sorted(k for k, m in sys.modules.items() if type(m).__name__ != '_LazyModule')))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def loaded_after(code: str) -> set[str]:
    """The top-level packages of ``modules_after``."""
    return {m.split(".")[0] for m in modules_after(code)}


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert loaded_after("import tracker.cli") & set(HEAVY) == set()


def test_help_loads_no_heavy_library() -> None:
    code = ("import contextlib, io\nfrom tracker.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['--help'])\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['prices', '--help'])")
    # A command's help goes through Typer's parameter adapters, which import pydantic.
    assert loaded_after(code) & set(HEAVY) - {"pydantic"} == set()


#: What a reading command on a current store does without: the database toolkit, the ORM, the
#: migrations and the analysis libraries (``db.direct`` opens the store with its own driver).
NOT_FOR_READING = {"sqlalchemy", "sqlmodel", "alembic", "pandas", "numpy", "filelock", "httpx", "plotly", "matplotlib",
                   "fastapi", "apprise", "apscheduler"}


def test_prices_reads_without_sqlalchemy_pandas_or_alembic(replay_store: str) -> None:
    """A read of the current prices on an up-to-date store goes through the store's own driver
    (sqlite3 or psycopg): no SQLAlchemy, ORM, analysis or HTTP library, and no migration machinery
    (Alembic, the migration lock) since the schema is current."""
    code = ("import contextlib, io\nfrom tracker.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    main(['--db', {replay_store!r}, 'prices', '--gpu', 'H100', '--limit', '5', '--format', 'json'])\n"
            "assert len(__import__('json').loads(out.getvalue())) == 5, out.getvalue()")
    modules = modules_after(code)
    assert "db.direct" in modules, "the probe did run the command"
    assert {m.split(".")[0] for m in modules} & NOT_FOR_READING == set()


def test_history_reads_without_sqlalchemy_or_pandas(replay_store: str) -> None:
    """``history`` answers from roll-ups and intervals in plain Python on the store's own driver
    (``tracker.analysis.history``): neither SQLAlchemy nor pandas, numpy or the chart
    libraries are loaded."""
    code = ("import contextlib, io, json\nfrom tracker.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    main(['--db', {replay_store!r}, 'history', '--gpu', 'H100', '--since', '2025-01-01', '--every', '1d',"
            " '--format', 'json'])\n"
            "assert any(r['min'] is not None for r in json.loads(out.getvalue())), out.getvalue()")
    modules = modules_after(code)
    assert "tracker.analysis.history" in modules, "the probe did run the command"
    assert {m.split(".")[0] for m in modules} & NOT_FOR_READING == set()


def test_a_command_line_builds_only_the_command_it_runs() -> None:
    """Typer builds the parameters of every registered command before running one; a line that
    names a command gets an app holding only it, anything else the whole app."""
    from tracker.cli import app, app_for, command_word

    assert command_word(["--db", "sqlite:///x.db", "-v", "prices", "--gpu", "H100"]) == "prices"
    assert command_word(["--config", "prices", "--help"]) is None  # the value of --config, not a command
    assert command_word(["--debug", "-c", "f.toml", "history"]) == "history"
    prices = app_for(["--db", "x", "prices", "--limit", "5"])
    assert [c.callback.__name__ for c in prices.registered_commands] == ["prices"]
    assert prices.registered_groups == []
    alerts = app_for(["alerts", "list"])
    assert [g.name for g in alerts.registered_groups] == ["alerts"] and alerts.registered_commands == []
    assert app_for(["--help"]) is app and app_for(["pricse"]) is app  # listings and did-you-mean see everything
    assert len(app.registered_commands) > 10 and len(app.registered_groups) >= 4, "the app itself is untouched"


def test_providers_lists_without_importing_the_scrapers(replay_store: str) -> None:
    """``providers`` takes what each scraper declares from its class (plugins from the entry
    points) and the store's rows through its own driver: the scraper modules load, but no HTTP
    client, HTML parser, SQLAlchemy, ORM or pandas."""
    code = ("import contextlib, io, json\nfrom tracker.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    main(['--db', {replay_store!r}, 'providers', '--format', 'json'])\n"
            "rows = {r['provider']: r for r in json.loads(out.getvalue())}\n"
            "assert rows['runpod']['status'] == 'ok' and len(rows) > 20, out.getvalue()")
    modules = modules_after(code)
    assert "db.reads" in modules, "the probe did run the command"
    assert {m.split(".")[0] for m in modules} & NOT_FOR_READING == set()
    assert "scrapers.lambda_" in modules, "the declarations are the classes themselves"
    assert {m.split(".")[0] for m in modules} & {"bs4", "lxml", "httpx"} == set()


def test_value_reads_without_sqlalchemy_or_pandas(replay_store: str) -> None:
    """``value`` ranks the current prices read as ``prices`` reads them (``State.reader``)."""
    code = ("import contextlib, io, json\nfrom tracker.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    main(['--db', {replay_store!r}, 'value', '--format', 'json'])\n"
            "assert any(r['gpu'].startswith('H100') for r in json.loads(out.getvalue())), out.getvalue()")
    modules = modules_after(code)
    assert "db.direct" in modules and "tracker.catalog.value" in modules, "the probe did run the command"
    assert {m.split(".")[0] for m in modules} & NOT_FOR_READING == set()


def test_alerts_list_reads_without_sqlalchemy(replay_store: str, tmp_path: Path) -> None:
    """``alerts list`` parses the rules and reads their states on the store's own driver: the
    alerts package loads neither SQLAlchemy, the ORM, nor the HTTP and Apprise clients that only
    sending needs."""
    config = tmp_path / "alerts.toml"
    config.write_text('[[alerts]]\nname = "h100-under-2"\ngpu = "H100"\nbelow = 2.0\nnotify = ["console", "log"]\n')
    code = ("import contextlib, io, json\nfrom tracker.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    main(['--config', {str(config)!r}, '--db', {replay_store!r}, 'alerts', 'list', '--format', 'json'])\n"
            "assert [r['name'] for r in json.loads(out.getvalue())] == ['h100-under-2'], out.getvalue()")
    modules = modules_after(code)
    assert "db.reads" in modules, "the probe did run the command"
    assert {m.split(".")[0] for m in modules} & NOT_FOR_READING == set()


def test_trends_reads_without_sqlalchemy_pandas_or_numpy(replay_store: str) -> None:
    """``trends`` answers in plain Python on the store's own driver (``tracker.analysis.trends``,
    the volatility's standard deviation included): neither SQLAlchemy, pandas nor numpy is
    loaded, and reading the providers' collection intervals loads no HTTP client (httpx, the
    robots.txt parser)."""
    code = ("import contextlib, io, json\nfrom tracker.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    main(['--db', {replay_store!r}, 'trends', '--format', 'json'])\n"
            "assert any(r['current'] is not None for r in json.loads(out.getvalue())), out.getvalue()")
    modules = modules_after(code)
    assert "tracker.analysis.trends" in modules, "the probe did run the command"
    assert {m.split(".")[0] for m in modules} & NOT_FOR_READING == set()
    assert "urllib.robotparser" not in modules


def test_info_counts_without_the_orm_or_the_scrapers(replay_store: str) -> None:
    """``info`` counts rows through the store's own driver and the registered providers from their
    classes: no HTTP client, HTML parser, ORM, migrations or pandas (SQLAlchemy's URL parser masks
    the password it shows)."""
    code = ("import contextlib, io, json\nfrom tracker.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    main(['--db', {replay_store!r}, 'info', '--format', 'json'])\n"
            "[row] = json.loads(out.getvalue())\n"
            "assert row['providers_registered'] > 20 and row['rows_offer'] > 0, out.getvalue()")
    modules = modules_after(code)
    assert "db.reads" in modules, "the probe did run the command"
    assert {m.split(".")[0] for m in modules} & (NOT_FOR_READING - {"sqlalchemy"} | {"bs4", "lxml"}) == set()

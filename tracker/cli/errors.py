"""One line and an exit code for anything a command raises: the CLI entry's only error handler.

Exit codes: 2 for a usage or configuration mistake (``TrackerError``: the message already says
what to change), 1 for a failure of the environment (files, the database, a missing module),
130 for Ctrl+C. Python exception names never reach the user; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import re

from tracker.errors import TrackerError

USAGE, FAILURE = 2, 1
_URL_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@\s]+@")


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "").rstrip(".")


def _masked(text: str) -> str:
    """Any ``scheme://user:password@`` written as ``scheme://user:***@``."""
    return _URL_PASSWORD.sub(r"\1***@", text)


def _locked(reason: str) -> str | None:
    """SQLite's "database is locked" after its busy timeout, said as what it means."""
    if "database is locked" not in reason.lower():
        return None
    from db.direct import SQLITE_BUSY_TIMEOUT_S

    return (f"the store is locked: another process is writing to it (a scrape, an import or `gpu-tracker run`) and "
            f"did not finish within {SQLITE_BUSY_TIMEOUT_S:.0f} s; try again when it is done")


def _driver_error(exc: BaseException) -> tuple[str, int]:
    """A driver's own error (sqlite3, psycopg: the read path of ``db.direct``) as one line, worded
    as ``_database_error`` words the same error wrapped by SQLAlchemy."""
    reason = _first_line(str(exc))
    lowered = reason.lower()
    if (locked := _locked(reason)) is not None:
        return locked, FAILURE
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return (f"the database file cannot be read ({reason}): check --db points at a gpu-tracker database, "
                "or move the file aside and run `gpu-tracker scrape` to start a new one", FAILURE)
    if type(exc).__name__ == "OperationalError":
        return (f"cannot use the database ({reason}): check that it is reachable and writable "
                "(--db, $GPU_TRACKER_DB or `database` in the config)", FAILURE)
    return f"the database refused a query ({reason}); run with --debug for details", FAILURE


def _database_error(exc: BaseException) -> tuple[str, int] | None:
    """SQLAlchemy's errors (multi-line, with the SQL) as one line naming what to check."""
    from sqlalchemy import exc as sa

    if isinstance(exc, sa.NoSuchModuleError):
        return ("the database URL names an unknown database kind; use sqlite:///path/to/tracker.db or "
                "postgresql://user@host/dbname (--db, $GPU_TRACKER_DB or `database` in the config)", USAGE)
    if isinstance(exc, sa.ArgumentError):
        return f"the database URL is not valid ({_first_line(str(exc))}); use sqlite:///path or postgresql://...", USAGE
    if isinstance(exc, sa.DBAPIError):
        reason = _first_line(str(exc.orig)) if exc.orig is not None else _first_line(str(exc))
        lowered = reason.lower()
        if (locked := _locked(reason)) is not None:
            return locked, FAILURE
        if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
            return (f"the database file cannot be read ({reason}): check --db points at a gpu-tracker database, "
                    "or move the file aside and run `gpu-tracker scrape` to start a new one", FAILURE)
        if isinstance(exc, sa.OperationalError):
            return (f"cannot use the database ({reason}): check that it is reachable and writable "
                    "(--db, $GPU_TRACKER_DB or `database` in the config)", FAILURE)
        return f"the database refused a query ({reason}); run with --debug for details", FAILURE
    if isinstance(exc, sa.SQLAlchemyError):
        return f"database error ({_first_line(str(exc))}); run with --debug for details", FAILURE
    return None


def describe(exc: BaseException) -> tuple[str, int]:
    """(one line, exit code) for ``exc``; secrets in URLs are masked."""
    message, code = _describe(exc)
    return _masked(message), code


def _describe(exc: BaseException) -> tuple[str, int]:
    if isinstance(exc, TrackerError):
        return str(exc), USAGE
    package = type(exc).__module__.split(".")[0]
    if package == "sqlalchemy":
        found = _database_error(exc)
        if found is not None:
            return found
    if package in ("sqlite3", "psycopg"):
        return _driver_error(exc)
    if isinstance(exc, ModuleNotFoundError):
        name = exc.name or _first_line(str(exc))
        return (f"the Python module {name!r} is not installed: a database URL needs sqlite:/// or postgresql:// "
                f"(other databases are not supported), and a plugin needs its package installed "
                f"(`pip install` it into this environment)", FAILURE)
    if isinstance(exc, PermissionError):
        where = f" {exc.filename}" if exc.filename else ""
        return (f"permission denied:{where}; check the owner and mode of the file or its directory, "
                "or point --db/--config at a path you can write", FAILURE)
    if isinstance(exc, FileNotFoundError):
        where = f" {exc.filename}" if exc.filename else ""
        return f"no such file or directory:{where}; check the path", FAILURE
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{(exc.strerror or _first_line(str(exc))).lower()}{where}", FAILURE
    if isinstance(exc, ValueError):
        return f"invalid value: {_first_line(str(exc))}", USAGE
    return f"unexpected error: {_first_line(str(exc)) or 'no message'} (run with --debug for the traceback)", FAILURE

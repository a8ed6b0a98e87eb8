"""Schema migrations with Alembic, driven from code (no alembic.ini to find).

``upgrade(engine)`` brings any database to the newest schema: an empty one is built by the
migrations, an existing one is moved forward. ``gpu-tracker`` calls it on start, so users
never run migrations by hand. To add a migration after changing ``db/models.py``::

    python -m db.migrate revision "what changed"
"""

from __future__ import annotations

import sys
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    cfg.attributes["engine"] = engine
    return cfg


def head_revision() -> str | None:
    return ScriptDirectory(str(MIGRATIONS)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def make_revision(engine: Engine, message: str) -> None:
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.revision(cfg, message=message, autogenerate=True)


if __name__ == "__main__":  # pragma: no cover - developer tool
    from db.engine import make_engine

    if len(sys.argv) != 3 or sys.argv[1] != "revision":
        sys.exit("usage: python -m db.migrate revision MESSAGE")
    scratch = make_engine("sqlite://")
    upgrade(scratch)
    make_revision(scratch, sys.argv[2])

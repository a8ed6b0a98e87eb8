"""Open the store the way every entry point needs it: engine, schema, GPU catalog loaded.

The CLI, the scheduler and the web app all call ``open_store(settings)`` so that a fresh
database, an old one needing migration and a changed user catalog are handled in one place.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from db import queries
from db.engine import default_database_url, init_db, make_engine, session_scope
from tracker.catalog import catalog_rows_for_db, load_catalog
from tracker.config import Settings


def database_url(settings: Settings) -> str:
    return settings.database or default_database_url()


def sync_catalog(engine: Engine, settings: Settings) -> int:
    """Load the shipped catalog plus the user's ``catalog_file`` into ``gpu_model``."""
    rows = catalog_rows_for_db(load_catalog(settings.catalog_file))
    with session_scope(engine) as session:
        return queries.sync_gpu_models(session, rows)


def open_store(settings: Settings, url: str | None = None) -> Engine:
    engine = make_engine(url or database_url(settings))
    init_db(engine)
    sync_catalog(engine, settings)
    return engine

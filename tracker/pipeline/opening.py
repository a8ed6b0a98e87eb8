"""Open the store the way every entry point needs it: engine, schema at the newest migration,
GPU catalog loaded into ``gpu_model``.

Apart from ``store`` (the write path, which brings the roll-ups and so pandas) so that a
command that only reads, such as ``gpu-tracker prices``, starts without them; and in Core
only (no ORM, no ``db.models``; migrations are imported only when the schema is behind,
``db.migrate.init_db``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from db.engine import is_read_only, make_engine
from db.migrate import init_db, sync_gpu_models
from tracker.catalog.specs import catalog_rows_for_db, load_catalog

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from tracker.config.settings import Settings


def sync_catalog(engine: Engine, settings: Settings) -> int:
    """Load the shipped catalog plus the user's ``catalog_file`` into ``gpu_model``."""
    rows = catalog_rows_for_db(load_catalog(settings.catalog_file))
    with engine.begin() as conn:
        return sync_gpu_models(conn, rows)


def open_store(settings: Settings, url: str | None = None) -> Engine:
    engine = make_engine(url or settings.database)
    try:
        init_db(engine)
        if not is_read_only(engine):  # a store only this process cannot write keeps the catalog it has
            sync_catalog(engine, settings)
    except BaseException:
        engine.dispose()  # a store that cannot be opened leaves no pooled connection behind
        raise
    return engine

"""Where the store is when no URL is given: ``$GPU_TRACKER_DB`` or a SQLite file in the user's
data directory. Apart from ``db.engine`` (which re-exports it) so that finding the URL does
not import SQLAlchemy."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "gpu-price-tracker"
DB_ENV = "GPU_TRACKER_DB"


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def default_database_url() -> str:
    """``$GPU_TRACKER_DB`` or a SQLite file in the user's data directory."""
    if os.environ.get(DB_ENV):
        return os.environ[DB_ENV]
    return f"sqlite:///{default_data_dir() / 'tracker.db'}"

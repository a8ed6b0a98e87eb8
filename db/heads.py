"""The newest schema revision, read from the migration files' headers without Alembic or
SQLAlchemy: both opening paths (``db.migrate.is_current`` and ``db.direct``) compare a store's
``alembic_version`` with it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

MIGRATIONS = Path(__file__).parent / "migrations"

_HEADER = re.compile(r"^(revision|down_revision)\b[^=]*=\s*['\"]?([\w-]+)", re.MULTILINE)


@cache
def file_heads() -> frozenset[str]:
    """The revisions no migration revises, read from the files' ``revision``/``down_revision``
    lines (Alembic's own templates; a test holds this equal to Alembic's heads)."""
    revisions, revised = set(), set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        for key, value in _HEADER.findall(path.read_text()):
            (revisions if key == "revision" else revised).add(value)
    return frozenset(revisions - revised)


def known_revisions() -> frozenset[str]:
    """Every revision this version's migrations define."""
    return frozenset(value for path in (MIGRATIONS / "versions").glob("*.py")
                     for key, value in _HEADER.findall(path.read_text()) if key == "revision")


def at_head(stored: list[str]) -> bool:
    """Whether the revisions a store's version table holds are exactly the one head."""
    heads = file_heads()
    return len(heads) == 1 and stored == list(heads)

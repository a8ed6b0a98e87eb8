"""The web app's context: the shared read context plus the web's own cache of rendered bodies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Self

from sqlalchemy.engine import Engine

from tracker.config.settings import Settings
from tracker.reads.data import ReadContext
from tracker.web.cache import BodyCache


@dataclass
class WebContext(ReadContext):
    #: Rendered bodies of the heaviest endpoints, kept ``web.cache_s`` (``tracker.web.cache``).
    bodies: BodyCache = field(default_factory=lambda: BodyCache(0.0))

    @classmethod
    def create(cls, settings: Settings, engine: Engine) -> Self:
        base = ReadContext.create(settings, engine)
        return cls(base.settings, base.engine, base.catalog, base.tolerance, BodyCache(settings.web.cache_s))

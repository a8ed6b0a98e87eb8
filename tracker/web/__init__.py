"""The JSON API and the web dashboard (``gpu-tracker serve``); see ``tracker.web.app``."""

from __future__ import annotations

from tracker.web.app import create_app

__all__ = ["create_app"]

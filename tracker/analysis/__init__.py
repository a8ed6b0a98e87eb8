"""Analysis over the stored price history: DataFrames in, DataFrames out.

Each function takes a time range and filters (``Filters``: GPU ids, providers, regions,
kinds) and returns DataFrames or small records; the CLI and the API only present them.

* ``frames``     -- loading intervals, the "price at t" rule, the time grid
* ``history``    -- min/p25/median across providers and per provider; cost per TFLOP; break-even
* ``trends``     -- change over 24 h/7 d/30 d/90 d, all-time low, good-deal flag, volatility
* ``tco``        -- electricity, ownership cost, break-even, market rent
* ``recommend``  -- VRAM estimate, GPUs that fit at market prices, rent-vs-buy advice
* ``importer``   -- our own CSV exports and SkyPilot ``vms.csv`` into the store
* ``plot``       -- PNG (matplotlib) and self-contained HTML (plotly) charts
"""

from tracker.analysis.frames import (
    DEFAULT_KINDS,
    Filters,
    Resolution,
    load_intervals,
    market_at,
)
from tracker.analysis.history import History, history, price_history
from tracker.analysis.tco import market_rent, tco
from tracker.analysis.trends import trends

__all__ = [
    "DEFAULT_KINDS",
    "Filters",
    "History",
    "Resolution",
    "history",
    "load_intervals",
    "market_at",
    "market_rent",
    "price_history",
    "tco",
    "trends",
]

"""Analysis over the stored price history.

Each function takes a time range and filters (``Filters``: GPU ids, providers, regions,
kinds) and returns plain records (history and trends are plain Python over ``db.reader``;
pandas is imported by tco, recommend and the Parquet export only); the CLI and the API only present them.

Time semantics (the same in the roll-ups, ``db.rollups``, and in every raw-interval path):

* an interval is a run of consecutive successful observations of one offer at one price; a
  failed or missing collection ends it (unknown is not "unchanged");
* a bucket's value is taken over the prices observed during the bucket; for buckets finer
  than the provider's collection interval, a price holds until the provider's next
  collection attempt, never longer (and never past the offer's next observation);
* "price at t": an interval is in effect from ``first_seen`` until that next attempt, at most
  one collection interval after ``last_seen`` (exclusive), so a missed collection is a gap;
* market figures are taken across providers, each provider's cheapest once;
* long ranges read the hourly/daily roll-ups for the buckets they cover whole and raw
  intervals only for partial buckets and filters the roll-ups do not carry (``history``);
  both give the same answer (a property test on both backends).

* ``grid``       -- resolutions, spans, dates, filters and tolerances: the time grid in plain Python
* ``history``    -- each provider's value per bucket (roll-ups where they answer, raw intervals
  elsewhere), the market rule (min/p25/median across providers), cost per TFLOP, break-even
* ``trends``     -- change over 24 h/7 d/30 d/90 d, all-time low, good-deal flag, volatility
* ``market``, ``aggregators`` -- the market rule across providers, an aggregator's offers counted once
* ``index``      -- the rental index (two named methods) and its check against the raw intervals
* ``availability`` -- how available a GPU was, per provider and region
* ``frames``     -- stored intervals as a pandas DataFrame (the Parquet export), frames as records
* ``tco``        -- electricity, ownership cost, break-even, market rent
* ``recommend``  -- VRAM estimate, GPUs that fit at market prices, rent-vs-buy advice
* ``plot``       -- PNG (matplotlib) and self-contained HTML (plotly) charts

Import the module you need (``from tracker.analysis.history import history``): the package
itself imports nothing, so a command that uses one of them (the CLI's ``history``) does not
pay for the others' libraries.
"""

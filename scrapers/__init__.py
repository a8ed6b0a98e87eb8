"""Provider scrapers: one module per GPU cloud, each a ``Scraper`` subclass.

A scraper only fetches (``fetch``) and parses (``parse``); it knows nothing of the database,
the catalog tables or alerts. ``scrapers.registry`` discovers the modules of this package and
the ``gpu_tracker.scrapers`` entry-point group.
"""

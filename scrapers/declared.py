"""What each built-in scraper declares about its collection interval (``default_interval_s``),
as a table: reading it imports no scraper module (each brings the HTTP client and the HTML
parser), so a reading command that needs every stored provider's interval
(``tracker.analysis.grid.scrape_intervals``) starts without them. A test holds the table equal
to the classes; plugins are not in it and are looked up through the registry.
"""

from __future__ import annotations

#: ``default_interval_s`` of every built-in scraper, by provider name.
DECLARED_INTERVALS: dict[str, int] = {
    "akash": 3600, "aws": 86400, "aws_spot": 3600, "azure": 3600, "coreweave": 3600, "crusoe": 3600, "cudo": 3600,
    "datacrunch": 3600, "digitalocean": 3600, "gcp": 3600, "hyperbolic": 3600, "hyperstack": 3600, "jarvislabs": 3600,
    "lambda": 3600, "linode": 3600, "modal": 3600, "nebius": 3600, "oci": 3600, "paperspace": 3600, "runpod": 3600,
    "scaleway": 3600, "tensordock": 3600, "vastai": 3600, "verda": 3600, "voltagepark": 3600, "vultr": 3600,
}

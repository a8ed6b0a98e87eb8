"""The commented example configuration ``gpu-tracker config init`` writes.

It loads back through ``load_settings`` unchanged (a test holds it to that): every active
line is a default value, everything else is a comment showing what can be set.
"""

from __future__ import annotations

from scrapers.registry import all_scrapers, declared_interval

HEADER = '''\
# gpu-price-tracker configuration.
#
# Read from --config PATH, else $GPU_TRACKER_CONFIG, else
# <user config dir>/gpu-price-tracker/config.toml. Every key can be overridden by an
# environment variable GPU_TRACKER_<KEY> ("__" between nested keys), for example
#   GPU_TRACKER_DB=postgresql://tracker@db/gpu   GPU_TRACKER_HTTP__TIMEOUT_S=60
# Check a file with: gpu-tracker config check PATH
#
# Secrets never go in this file: it names the environment variables that hold them.

# The database (default: a SQLite file in the user data directory). PostgreSQL:
#   database = "postgresql://tracker@localhost:5432/gpu"   (password via PGPASSWORD or ~/.pgpass)
# database = "sqlite:////var/lib/gpu-tracker/tracker.db"

# Time between two scrapes of a provider that sets no interval of its own
# ("90s", "30m", "1h", "1d" or a number of seconds).
default_interval = "1h"

[http]
timeout_s = 30.0    # seconds per request
retries = 3         # extra attempts on timeouts, 429 and 5xx (Retry-After is honoured)
backoff_s = 0.5     # delay before the first retry; doubles each time
concurrency = 64    # providers collected at the same time

[retention]
raw_days = 365      # raw price intervals kept; hourly/daily roll-ups are kept forever

[scheduler]         # gpu-tracker run
# jitter = "6m"         # random delay added to each run (default: a tenth of the interval, at most 5m)
# misfire_grace = "1h"  # a run missed by less than this still happens once (default: interval + jitter)
shutdown_grace = "30s"  # on SIGINT/SIGTERM, how long an in-flight provider batch may finish
# heartbeat = "30s"     # how often the active scheduler says it is alive (default: from the intervals)
retry_base = "5m"       # a failed provider is retried this long after, doubling per failure in a row,
                        # at most half its interval and never after its next regular run; 0 disables

[web]               # gpu-tracker serve
host = "127.0.0.1"
port = 8000
# base_url = "https://gpu.example.com"   # public URL, for links in alert messages
# allowed_hosts = ["gpu.example.com"]     # Host names answered besides loopback and this machine's
# Binding anything but loopback needs an API token in $GPU_TRACKER_API_TOKEN (never in this file).

# Convert prices listed in other currencies: 1 unit = rate USD, read on that date (every converted
# price is shown with its rate and date).
# [currency_rates]
# EUR = { rate = 1.08, date = 2026-12-01 }

# Your own GPU specs or purchase prices, merged into the catalog.
# catalog_file = "/etc/gpu-tracker/catalog.toml"
'''

PROVIDERS = '''
# Providers. Every registered one is enabled unless a section says enabled = false. One
# that needs a key is skipped (not failed) until its environment variable is set.
#
#   [providers.<name>]
#   enabled = true
#   interval = "1h"                    # overrides default_interval (and the provider's own default)
#   api_key_env = "MY_KEY"             # read the provider's key from $MY_KEY instead of its default name
#   credentials_env = {{ DEFAULT_NAME = "MY_NAME" }}   # the same, one variable at a time
#   max_body_mb = 32                   # largest response body read, decoded (default: the provider's own)
#   max_download_mb = 1024             # largest download to disk (AWS offer files)
#
# Registered providers and the environment variables they read:
{table}
'''

FOOTER = '''
# Alert rules: see the README ("Alerts") for every field.
# [[alerts]]
# name = "h100-under-2"
# gpu = "H100"
# below = 2.0
# notify = ["ntfy://my-topic", "env:SLACK_WEBHOOK_URL"]

# A digest: the best current price of each watched GPU and its change since the last one.
# [[digests]]
# name = "morning"
# every = "daily"          # or "weekly" (with day = "monday"), or a duration such as "12h"
# at = "08:00"             # UTC
# gpus = ["H100", "A100"]  # default: the GPUs of the alert rules
# notify = ["env:SLACK_WEBHOOK_URL"]
'''


def _provider_table() -> str:
    lines = []
    for name, cls in all_scrapers().items():
        needs = ", ".join(cls.credentials)
        optional = ", ".join(cls.optional_credentials)
        creds = " ".join(p for p in (needs and f"needs {needs}", optional and f"optional {optional}") if p) or "no key"
        own = declared_interval(name, cls)
        every = f", default every {own // 3600}h" if own is not None else ""
        lines.append(f"#   {name:<14} {creds}{every}")
    return "\n".join(lines)


def example_config() -> str:
    """The example file's text: defaults active, options commented, providers listed."""
    example = ""
    scrapers = all_scrapers()
    if "aws" in scrapers:
        example += '\n# For example, skip the large daily AWS price file:\n# [providers.aws]\n# enabled = false\n'
    if "runpod" in scrapers:
        example += ('\n# ... and scrape RunPod every 30 minutes with the key in $MY_RUNPOD_KEY:\n'
                    '# [providers.runpod]\n# interval = "30m"\n# api_key_env = "MY_RUNPOD_KEY"\n')
    return HEADER + PROVIDERS.format(table=_provider_table()) + example + FOOTER

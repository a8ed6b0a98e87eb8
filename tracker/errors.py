"""The project's exception tree, drawn once so every layer raises the same things.

```
TrackerError                 anything this project raises on purpose
├── ScraperError             one provider could not be collected; the others go on
│   ├── ProviderSkipped      not collected on purpose: the run is *skipped*, not failed
│   │   ├── MissingCredentials   a required env var is unset ("set X to enable")
│   │   └── RobotsDisallowed     the site's robots.txt disallows the page
│   ├── FetchError           network trouble or an HTTP error status, after retries
│   └── ParseError           the payload's shape or the page layout changed
├── ValidationError          one offer rejected or quarantined, with the reason
└── ConfigError              a bad config key/value (names the key, never a secret)
    └── QueryTooLarge        a question whose answer would exceed a stated bound (API: 422)
```

The CLI turns any ``TrackerError`` into one clear line and a non-zero exit code;
``collect`` turns a ``ScraperError`` into a ``scrape_run`` row with its class and message.
"""

from __future__ import annotations


class TrackerError(Exception):
    """Base of every error this project raises deliberately."""


class ScraperError(TrackerError):
    """A provider could not be collected this time."""


class ProviderSkipped(ScraperError):
    """The provider is deliberately not collected this time: its run is ``skipped``, which
    neither counts as a failure nor stores anything."""


class MissingCredentials(ProviderSkipped):
    """The provider needs credentials that are not set; it is skipped, not failed."""

    def __init__(self, provider: str, env_names: list[str] | tuple[str, ...]) -> None:
        self.provider = provider
        self.env_names = tuple(env_names)
        super().__init__(f"{provider}: set {' and '.join(self.env_names)} to enable")


class RobotsDisallowed(ProviderSkipped):
    """The site's robots.txt disallows our User-Agent on the page: we do not fetch it."""


class FetchError(ScraperError):
    """Network failure or HTTP error status, raised after retries are exhausted."""


class ParseError(ScraperError):
    """The payload no longer has the shape the parser knows; the message names what is missing."""


class ValidationError(TrackerError):
    """An offer failed a sanity check; carries the reason so it can be quarantined."""


class ConfigError(TrackerError):
    """The configuration is wrong; the message names the key and the bad value (never a secret)."""


class QueryTooLarge(ConfigError):
    """A question whose answer would exceed a stated bound (a history grid of too many
    buckets): the message names the bound and what to ask instead. The API answers 422."""

    http_status = 422

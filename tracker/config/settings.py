"""One settings object, read from a TOML file and overridden by ``GPU_TRACKER_*`` env vars.

Precedence (highest first): explicit arguments (CLI flags such as ``--db``), environment
(``GPU_TRACKER_DB``, ``GPU_TRACKER_HTTP__TIMEOUT_S`` ...), the TOML file (``--config``,
``$GPU_TRACKER_CONFIG`` or ``<user config dir>/gpu-price-tracker/config.toml``), defaults.

``Settings`` declares every setting, its validation and its helpers, once; ``load_settings``
reads the environment and the file into it through pydantic-settings (``_from_sources``, a
subclass that adds only the sources), imported when there is something to read: with no config
file and no variable it would read, the settings are the defaults and the explicit arguments,
validated by the same model, and a reading command does not pay for pydantic-settings (it
imports asyncio and its cloud, dotenv and command-line sources: a tenth of ``prices``).

Secrets never live here as values: the file names the *environment variables* that hold
them (``api_key_env``), and ``ConfigError`` messages never echo a value that might be one.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import tomllib
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import platformdirs
from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from scrapers.registry import declared_interval
from tracker.errors import ConfigError

if TYPE_CHECKING:
    from pydantic_settings import PydanticBaseSettingsSource

CONFIG_ENV = "GPU_TRACKER_CONFIG"
#: The environment variables that hold settings: ``GPU_TRACKER_<FIELD>``, ``__`` between nested keys.
ENV_PREFIX = "GPU_TRACKER_"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_duration(value: str | int | float) -> float:
    """``"90s"``, ``"15m"``, ``"1h"``, ``"1d"`` or a number of seconds -> seconds.

    ``true``/``false`` are not durations (a bool is an int in Python, so ``interval = true``
    would otherwise read as one second), nor are NaN, infinities or negative numbers.
    """
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is not a duration: write one like 30s, 15m, 1h or 1d")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        m = _DURATION.match(value)
        if not m:
            raise ValueError(f"{value[:40]!r} is not a duration like 30s, 15m, 1h or 1d")
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        raise ValueError(f"a {type(value).__name__} is not a duration: write one like 30s, 15m, 1h or 1d")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{value!r} is not a duration like 30s, 15m, 1h or 1d")
    return seconds


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


#: The shortest interval between two collections of one provider: shorter only hammers it.
MIN_INTERVAL_S = 1.0
#: The longest duration anywhere (beyond a year the scheduler's date arithmetic overflows).
MAX_DURATION_S = 366 * 86400.0


def bounded_duration(low: float, high: float = MAX_DURATION_S, *, zero_off: bool = False) -> Any:
    """A duration field (``"30s"``, ``"5m"``, seconds) between ``low`` and ``high``; with
    ``zero_off`` also 0, which switches the feature off. Checked in the model, so a file, the
    environment and code all get the same one-line error."""

    def check(v: Any) -> Any:
        if v is None:
            return None
        seconds = parse_duration(v)
        if zero_off and seconds == 0:
            return 0.0
        if seconds < low:
            raise ValueError(f"must be at least {_human(low)}" + (" (or 0 to switch it off)" if zero_off else ""))
        if seconds > high:
            raise ValueError(f"must be at most {_human(high)}")
        return seconds

    return BeforeValidator(check)


def _no_bool(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"must be a number, not {str(v).lower()}")
    return v


NoBool = BeforeValidator(_no_bool)
Interval = Annotated[float, bounded_duration(MIN_INTERVAL_S)]


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir("gpu-price-tracker")) / "config.toml"


#: The slowest download rate a large offer file is still expected to come at (16 MiB/s): a 6 GiB
#: AWS download is given 384 s.
SLOW_DOWNLOAD_BYTES_S = 16 << 20


class ProviderSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    #: Seconds between scrapes of this provider (accepts "1h", "30m", ...; at least 1s).
    interval: Interval = 3600.0
    #: Map a scraper's default credential env var to the one you use, e.g. {"GCP_API_KEY": "MY_GCP_KEY"}.
    credentials_env: dict[str, str] = Field(default_factory=dict)
    #: Name of the env var holding this provider's API key (shorthand for a single credential).
    api_key_env: str | None = None
    #: Largest decoded response body, and download to disk, in MiB (default: the scraper's own).
    max_body_mb: float | None = Field(None, gt=0)
    max_download_mb: float | None = Field(None, gt=0)
    #: Wall-clock limit for this provider's whole fetch (default: ``http.provider_timeout_s``,
    #: longer for a provider whose downloads may pass 1 GiB; see ``Settings.fetch_timeout_s``).
    timeout_s: Annotated[float | None, bounded_duration(1, 86400)] = None

    def body_limits(self, default_body: int, default_download: int) -> tuple[int, int]:
        """(body, download) limits in bytes: the configured ones, else the scraper's defaults."""
        mib = 1 << 20
        body = int(self.max_body_mb * mib) if self.max_body_mb else default_body
        download = int(self.max_download_mb * mib) if self.max_download_mb else default_download
        return body, download


class HttpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    timeout_s: Annotated[float, bounded_duration(0.1, 3600)] = 30.0
    retries: Annotated[int, NoBool] = Field(3, ge=0, le=10)
    backoff_s: Annotated[float, bounded_duration(0, 600)] = 0.5
    #: Providers collected at the same time: by default more than there are providers, so a
    #: cycle takes as long as its slowest provider, not the sum of the slow ones.
    concurrency: Annotated[int, NoBool] = Field(64, ge=1, le=64)
    #: Wall-clock limit for one provider's whole fetch (all pages), so one stuck (or slow-loris)
    #: API cannot hold a worker. Real APIs answer in seconds: the largest API payload sampled is
    #: 3.8 MB (Vast.ai's offers), and a request that keeps failing gives up after
    #: (retries + 1) x timeout_s = 120 s by default; 180 s leaves room for both. Downloads
    #: larger than 1 GiB (AWS offer files) get more: see ``Settings.fetch_timeout_s``.
    provider_timeout_s: Annotated[float, bounded_duration(1, 86400)] = 180.0


class RetentionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: Days of raw price intervals kept (``gpu-tracker rollups prune``); the hourly and daily
    #: roll-ups are kept forever, so history past this age still has its buckets.
    raw_days: Annotated[int, NoBool] = Field(365, ge=1, le=36_500)


class WebSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: Annotated[int, NoBool] = Field(8000, ge=1, le=65535)
    #: Public URL of the dashboard, used for links in alert messages (its host is an allowed Host).
    base_url: str | None = None
    #: Host header names the server answers to besides loopback, the bind address and this
    #: machine's name (``*.example.com`` for subdomains, ``*`` for any).
    allowed_hosts: list[str] = Field(default_factory=list)
    #: How long one rendering of /api/prices serves every client (0 turns it off).
    cache_s: Annotated[float, bounded_duration(0.1, 300, zero_off=True)] = 2.0


class DeliverySettings(BaseModel):
    """Where alerts may go (see ``tracker.alerts.targets``)."""

    model_config = ConfigDict(extra="forbid")

    #: Hosts on this machine, the local network or a metadata service that alert channels may
    #: reach after all, by name as written in their URLs (``"127.0.0.1"``, ``"alerts.lan"``).
    allow_hosts: list[str] = Field(default_factory=list)


class SchedulerSettings(BaseModel):
    """How ``gpu-tracker run`` schedules the providers (all durations accept "30s", "5m", ...)."""

    model_config = ConfigDict(extra="forbid")

    #: Random delay added to each run so providers are not all hit in the same second
    #: (unset: a tenth of the provider's interval, at most 5 minutes).
    jitter: Annotated[float | None, bounded_duration(0)] = None
    #: A run missed by less than this (e.g. the machine slept) still happens once; later
    #: ones are dropped (unset: the provider's interval plus jitter, so a restart catches up once).
    misfire_grace: Annotated[float | None, bounded_duration(1)] = None
    #: On SIGINT/SIGTERM, how long to let an in-flight provider batch finish before abandoning it.
    shutdown_grace: Annotated[float, bounded_duration(0, 3600)] = 30.0
    #: How often the active scheduler records that it is alive (unset: from the shortest interval, 1-30 s).
    heartbeat: Annotated[float | None, bounded_duration(0.5, 3600)] = None
    #: A leader not heard from for this long loses the lead to a standby (unset: three heartbeats,
    #: at least 5 s). A frozen leader that wakes after it stops collecting before writing.
    lease: Annotated[float | None, bounded_duration(2, 86400)] = None
    #: After a failed run, retry the provider this long later, doubling with each failure in a
    #: row, at most half its interval (0 disables retries; a skipped run is not retried).
    retry_base: Annotated[float, bounded_duration(0.1, zero_off=True)] = 300.0


class Settings(BaseModel):
    """Everything configurable. Unknown keys are errors, so a typo never silently does nothing.

    Built directly, it holds what it is given and the defaults; ``load_settings`` adds the
    environment and the config file (``_from_sources``)."""

    #: pydantic-settings' own model defaults (defaults validated too, no key the model lacks), so
    #: the settings validate alike with and without their sources.
    model_config = ConfigDict(extra="forbid", validate_default=True, arbitrary_types_allowed=True)

    database: str | None = Field(default=None, validation_alias=AliasChoices("database", "GPU_TRACKER_DB", "GPU_TRACKER_DATABASE"))
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    http: HttpSettings = Field(default_factory=HttpSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    alerts: list[dict[str, Any]] = Field(default_factory=list)
    delivery: DeliverySettings = Field(default_factory=DeliverySettings)
    #: ``[[digests]]``: a daily or weekly summary per channel list (checked by ``tracker.alerts.digest_config``).
    digests: list[dict[str, Any]] = Field(default_factory=list)
    #: Multiply a price in this currency by the rate to get USD, with the day the rate was read:
    #: ``EUR = { rate = 1.08, date = 2026-12-01 }`` (or a number here and its day in
    #: ``currency_rate_dates``). Each value is a ``DatedRate``: a float that knows its ``date``.
    currency_rates: dict[str, Annotated[float, NoBool, Field(gt=0, allow_inf_nan=False)]] = Field(default_factory=dict)
    #: The day each rate of ``currency_rates`` was read (a converted price is shown with it).
    currency_rate_dates: dict[str, dt.date] = Field(default_factory=dict)
    #: A TOML file that adds GPUs to the catalog or overrides fields (e.g. your purchase price).
    catalog_file: Path | None = None
    #: Default schedule interval for providers without their own (at least 1s).
    default_interval: Interval = 3600.0

    _source_path: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _rate_tables(cls, data: Any) -> Any:
        """``EUR = { rate = 1.08, date = 2026-12-01 }``: the rate to ``currency_rates``, its day
        to ``currency_rate_dates``."""
        if not isinstance(data, dict) or not isinstance(data.get("currency_rates"), dict):
            return data
        rates, dates = {}, dict(data.get("currency_rate_dates") or {})
        for code, value in data["currency_rates"].items():
            if isinstance(value, dict):
                table = {str(k).lower(): v for k, v in value.items()}
                if set(table) - {"rate", "date"}:
                    raise ValueError(f"currency_rates.{code}: a table holds rate and date only (got "
                                     f"{', '.join(sorted(table))})")
                value = table.get("rate")
                if table.get("date") is not None:
                    dates[code] = table["date"]
            rates[code] = value
        return {**data, "currency_rates": rates, "currency_rate_dates": dates}

    @model_validator(mode="after")
    def _dated_rates(self) -> Settings:
        """Every rate has its day (no converted price is shown without both); each becomes a ``DatedRate``."""
        for code, rate in self.currency_rates.items():
            on = self.currency_rate_dates.get(code)
            if on is None:
                raise ValueError(f"currency_rates.{code}: give the day the rate was read, e.g. "
                                 f"{code} = {{ rate = {rate:g}, date = YYYY-MM-DD }}")
            self.currency_rates[code] = DatedRate(rate, on)
        return self

    def fetch_timeout_s(self, name: str, download_bytes: int) -> float:
        """The wall-clock limit of ``name``'s fetch: ``providers.<name>.timeout_s`` when set;
        else ``http.provider_timeout_s``, raised for a provider whose download limit passes
        1 GiB to the time that download takes at ``SLOW_DOWNLOAD_BYTES_S``."""
        own = self.provider(name).timeout_s
        if own is not None:
            return own
        base = self.http.provider_timeout_s
        return max(base, download_bytes / SLOW_DOWNLOAD_BYTES_S) if download_bytes > 1 << 30 else base

    def provider(self, name: str) -> ProviderSettings:
        ps = self.providers.get(name)
        if ps is None:
            return ProviderSettings(interval=self.default_interval)
        if "interval" not in ps.model_fields_set:
            return ps.model_copy(update={"interval": self.default_interval})
        return ps

    def interval_for(self, name: str, scraper: Any = None) -> float:
        """Seconds between collections of ``name``: the one rule that the scheduler, the
        collector (which stores it), the analysis's tolerance for "price at t", status, the
        providers listing and ``/metrics`` all follow, so none of them disagrees with another.

        The provider's own ``interval`` in the config wins; then the interval the scraper
        declares as its own (``scrapers.registry.declared_interval``: a ``default_interval_s``
        apart from the base class's, e.g. a daily bulk file); then ``default_interval``.
        ``scraper``: its class when the caller holds one; else it is looked up by name, importing
        only that provider's module.
        """
        ps = self.providers.get(name)
        if ps is not None and "interval" in ps.model_fields_set:
            return ps.interval
        declared = declared_interval(name, scraper)
        return float(declared) if declared is not None else self.default_interval

    def provider_env(self, name: str, environ: dict[str, str] | None = None) -> dict[str, str]:
        """The environment a scraper sees: its default credential names mapped to the user's.

        ``credentials_env`` maps names one by one; ``api_key_env`` feeds the scraper's first
        required credential (or its only optional one) from the named variable.
        """
        env = dict(os.environ if environ is None else environ)
        ps = self.provider(name)
        if ps.api_key_env and ps.api_key_env in env:
            target = _primary_credential(name)
            if target:
                env[target] = env[ps.api_key_env]
        for default_name, user_name in ps.credentials_env.items():
            if user_name in env:
                env[default_name] = env[user_name]
        return env

    @property
    def source_path(self) -> Path | None:
        return self._source_path


class DatedRate(float):
    """A currency's rate to USD that knows the day it was read (``date``)."""

    date: dt.date

    def __new__(cls, rate: float, on: dt.date) -> DatedRate:
        self = super().__new__(cls, rate)
        self.date = on
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (DatedRate, (float(self), self.date))


def _primary_credential(provider: str) -> str | None:
    """The credential env var that ``api_key_env`` stands for, or None if the provider has none."""
    from scrapers.registry import (
        all_scrapers,  # late: the registry reads the plugins' entry points
    )

    cls = all_scrapers().get(provider)
    if cls is None:
        return None
    if cls.credentials:
        return cls.credentials[0]
    return cls.optional_credentials[0] if len(cls.optional_credentials) == 1 else None


def _describe(err: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ()))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    value = err.get("input")
    shown = ""
    if isinstance(value, (int, float, bool)) or (isinstance(value, str) and len(value) < 40 and not _looks_secret(loc)):
        shown = f" (got {value!r})"
    return f"{loc or 'config'}: {msg}{shown}"


def _looks_secret(key: str) -> bool:
    return any(w in key.lower() for w in ("key", "secret", "token", "password", "notify", "url", "database"))


#: The TOML file ``_from_sources`` reads while ``load_settings`` builds one (none otherwise): a
#: source of the one settings class, instead of a settings class built per file (a model's
#: validators are built with its class, a few milliseconds of every command).
_TOML_FILE: ContextVar[Path | None] = ContextVar("toml_file", default=None)


@cache
def _from_sources() -> type[Settings]:
    """``Settings`` read by pydantic-settings from the explicit arguments, the environment
    (``ENV_PREFIX``) and the TOML file ``_TOML_FILE`` names, in that order of precedence: the same
    fields, validators and helpers, plus the sources. Built once, the first time there is
    something to read (``_environment_may_set``, a config file)."""
    from pydantic_settings import (
        BaseSettings,
        SettingsConfigDict,
        TomlConfigSettingsSource,
    )

    class FromSources(Settings, BaseSettings):
        model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid")

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            toml_file = _TOML_FILE.get()
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if toml_file is not None:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
            return tuple(sources)

    return FromSources


@cache
def _env_aliases() -> frozenset[str]:
    """The other names pydantic-settings reads a field from in the environment: its aliases
    (``database``, ``GPU_TRACKER_DB``), lower-cased as it compares them."""
    names: set[str] = set()
    for info in Settings.model_fields.values():
        for alias in (info.alias, info.validation_alias):
            choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
            names |= {c.lower() for c in choices if isinstance(c, str)}
    return frozenset(names)


def _environment_may_set() -> bool:
    """Whether some environment variable might hold a setting: any ``GPU_TRACKER_*`` or a
    field's alias, case aside (pydantic-settings then reads them; one it ignores, such as
    ``GPU_TRACKER_API_TOKEN``, only costs its import)."""
    prefix, aliases = ENV_PREFIX.lower(), _env_aliases()
    return any((low := name.lower()).startswith(prefix) or low in aliases for name in os.environ)
#: A config file is a few KiB; anything this large is a mistake (or an attack on the parser).
MAX_CONFIG_BYTES = 1024 * 1024


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Read the config file (if any), apply env overrides and explicit ``overrides``.

    A named file that does not exist is an error; the default location may be absent.
    """
    explicit = path or os.environ.get(CONFIG_ENV)
    toml_path = Path(explicit) if explicit else default_config_path()
    if explicit and not toml_path.is_file():
        raise ConfigError(f"config file {toml_path} does not exist")
    use_file = toml_path if toml_path.is_file() else None
    if use_file is not None:
        if use_file.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{use_file}: larger than {MAX_CONFIG_BYTES // 1024} KiB; not a config file")
        try:
            tomllib.loads(use_file.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{use_file}: not valid TOML ({exc})") from None
        except RecursionError:
            raise ConfigError(f"{use_file}: arrays or tables nested too deeply to be a config file") from None
    given = {k: v for k, v in overrides.items() if v is not None}
    model = _from_sources() if use_file is not None or _environment_may_set() else Settings
    reading = _TOML_FILE.set(use_file)
    try:
        settings = model(**given)
    except RecursionError:
        raise ConfigError(f"{use_file or 'settings'}: values nested too deeply to be a config file") from None
    except ValidationError as exc:
        where = f"{use_file}: " if use_file else ""
        raise ConfigError(where + "; ".join(_describe(e) for e in exc.errors())) from None
    finally:
        _TOML_FILE.reset(reading)
    settings._source_path = use_file
    return settings

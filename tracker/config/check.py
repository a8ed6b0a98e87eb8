"""``gpu-tracker config check`` and ``config show``: validate a config file, show it masked.

Every problem names the key and, when it cannot be a secret, the bad value. Values that
may be secrets (database URLs with passwords, notification URLs, anything given where an
environment variable *name* was expected) are never echoed.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from db.engine import mask_url
from scrapers.registry import all_scrapers
from tracker.config.settings import CONFIG_ENV, Settings, load_settings
from tracker.errors import ConfigError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SUPPORTED_BACKENDS = ("sqlite", "postgresql")


@dataclass
class CheckReport:
    path: Path | None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    settings: Settings | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def _split_problems(message: str, path: Path | None) -> list[str]:
    """``load_settings`` joins pydantic's problems with "; " after "<path>: "."""
    prefix = f"{path}: " if path is not None else ""
    body = message[len(prefix):] if prefix and message.startswith(prefix) else message
    return [p for p in body.split("; ") if p]


def check_file(path: Path | None, environ: dict[str, str] | None = None) -> CheckReport:
    """Load ``path`` as ``run`` would (env overrides included) and check what loading cannot."""
    report = CheckReport(path)
    try:
        settings = load_settings(path)
    except ConfigError as exc:
        report.errors += _split_problems(str(exc), path)
        return report
    report.settings = settings
    env = dict(os.environ if environ is None else environ)
    report.errors += semantic_errors(settings)
    report.warnings += semantic_warnings(settings, env)
    overrides = sorted(k for k in env if k.startswith("GPU_TRACKER_") and k != CONFIG_ENV)
    if overrides:
        report.warnings.append(f"environment overrides in effect: {', '.join(overrides)}")
    return report


def semantic_errors(settings: Settings) -> list[str]:
    errors: list[str] = []
    scrapers = all_scrapers()
    if settings.database:
        try:
            backend = make_url(settings.database).get_backend_name()
        except ArgumentError:
            errors.append("database: not a database URL (expected sqlite:///path or postgresql://...)")
        else:
            if backend not in SUPPORTED_BACKENDS:
                errors.append(f"database: the {backend!r} backend is not supported (use sqlite or postgresql)")
    for name, ps in settings.providers.items():
        where = f"providers.{name}"
        cls = scrapers.get(name)
        if cls is None:
            close = difflib.get_close_matches(name, list(scrapers), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(scrapers)})"
            errors.append(f"{where}: unknown provider {name!r}{hint}")
            continue
        known = (*cls.credentials, *cls.optional_credentials)
        if ps.api_key_env is not None:
            if not ENV_NAME.match(ps.api_key_env):
                errors.append(f"{where}.api_key_env: must be the NAME of an environment variable "
                              "(letters, digits, _), not the key itself")
            elif not known:
                errors.append(f"{where}.api_key_env: {name} reads no credentials")
        for default_name, user_name in ps.credentials_env.items():
            key = f"{where}.credentials_env"
            if default_name not in known:
                uses = ", ".join(known) or "none"
                errors.append(f"{key}: {name} has no credential {default_name!r} (it reads: {uses})"
                              if ENV_NAME.match(default_name) else f"{key}: keys must be credential names ({uses})")
            if not ENV_NAME.match(user_name):
                errors.append(f"{key}.{default_name}: must be the NAME of an environment variable, not its value")
    if settings.catalog_file is not None and not Path(settings.catalog_file).expanduser().is_file():
        errors.append(f"catalog_file: no such file (got {str(settings.catalog_file)!r})")
    errors += _alert_errors(settings)
    errors += _digest_errors(settings)
    return errors


def _digest_errors(settings: Settings) -> list[str]:
    """``[[digests]]``: one error per digest (``tracker.alerts.digest_config.check_config``)."""
    if not settings.digests:
        return []
    with warnings.catch_warnings():  # apprise imports modules Python deprecates
        warnings.simplefilter("ignore", DeprecationWarning)
        from tracker.alerts.digest_config import check_config

        try:
            return check_config(settings)
        except ConfigError as exc:
            return [str(exc)]


def _alert_errors(settings: Settings) -> list[str]:
    """The alerts package's own checks, one error per rule.

    ``tracker.alerts.check_config(settings)`` if it exists; else ``tracker.alerts.rules``
    (``parse_rule`` per rule, then ``config_rules`` for what spans rules, such as duplicate
    names); else only the notify targets (``tracker.alerts.channels.check_target``).
    """
    with warnings.catch_warnings():  # apprise imports modules Python deprecates
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            alerts = importlib.import_module("tracker.alerts")
        except ModuleNotFoundError:
            return []
        checker = getattr(alerts, "check_config", None)
        if callable(checker):
            try:
                return [str(e) for e in (checker(settings) or [])]
            except ConfigError as exc:
                return [str(exc)]
        try:
            from tracker.alerts.rules import config_rules, parse_rule
        except ImportError:
            return _notify_errors(settings)
        errors: list[str] = []
        for i, rule in enumerate(settings.alerts):
            name = rule.get("name") if isinstance(rule, dict) else None
            where = f"alerts[{i}]" + (f" ({name})" if isinstance(name, str) and len(name) <= 64 else "")
            try:
                parse_rule(rule, where=where, catalog_file=settings.catalog_file,
                           allow_hosts=settings.delivery.allow_hosts)
            except ConfigError as exc:
                errors.append(str(exc))
        if not errors:
            try:
                config_rules(settings)
            except ConfigError as exc:
                errors.append(str(exc))
        return errors


def _notify_errors(settings: Settings) -> list[str]:
    try:
        from tracker.alerts.channels import check_target
    except ImportError:
        return []
    errors: list[str] = []
    for i, rule in enumerate(settings.alerts):
        targets = rule.get("notify", [])
        for j, target in enumerate(targets if isinstance(targets, list) else [targets]):
            try:
                check_target(target, f"alerts[{i}].notify[{j}]", settings.delivery.allow_hosts)
            except ConfigError as exc:
                errors.append(str(exc))
    return errors


def _literal_secret_warnings(settings: Settings) -> list[str]:
    """A channel URL written in the config file with a credential in it (``user:pass@``, a
    token): it works, but the file now holds a secret; ``env:VAR`` keeps it in the environment."""
    try:
        from tracker.alerts.redact import literal_secrets
    except ImportError:
        return []
    out: list[str] = []
    for section, tables in (("alerts", settings.alerts), ("digests", settings.digests)):
        for i, table in enumerate(tables):
            if not isinstance(table, dict):
                continue
            targets = table.get("notify", [])
            for j, target in enumerate(targets if isinstance(targets, list) else [targets]):
                if isinstance(target, str) and not target.strip().startswith("env:"):
                    found = literal_secrets(target)
                    if found:
                        name = table.get("name")
                        label = f"{section}[{i}]" + (f" ({name})" if isinstance(name, str) and len(name) <= 64 else "")
                        out.append(f"{label}: notify[{j}] holds a literal secret ({found[0]}) in the config file; "
                                   f"put the URL in an environment variable and write notify = [\"env:VAR\"]")
    return out


def semantic_warnings(settings: Settings, env: dict[str, str]) -> list[str]:
    warnings: list[str] = _literal_secret_warnings(settings)
    if settings.digests:
        from tracker.alerts.digest_config import config_warnings

        warnings += config_warnings(settings)
    for name, cls in all_scrapers().items():
        if not settings.provider(name).enabled or not cls.credentials:
            continue
        seen = settings.provider_env(name, env)
        missing = [n for n in cls.credentials if not seen.get(n)]
        if missing:
            warnings.append(f"{name}: {' and '.join(missing)} not set: it will be skipped")
    return warnings


def masked_settings(settings: Settings) -> dict[str, Any]:
    """The effective settings as plain data, with every possibly secret value masked."""
    data = settings.model_dump(mode="json")
    if data.get("database"):
        data["database"] = mask_url(data["database"])
    try:
        from tracker.alerts.redact import redact_url
    except ImportError:
        def redact_url(url: str) -> str:
            return url.split("://", 1)[0] + "://***" if "://" in url else "***"
    for rule in [*data.get("alerts", []), *data.get("digests", [])]:
        if not isinstance(rule, dict):
            continue
        for key, value in list(rule.items()):
            if key == "notify":
                targets = value if isinstance(value, list) else [value]
                rule[key] = [redact_url(t) if isinstance(t, str) else t for t in targets]
            elif isinstance(value, str) and ("://" in value or _looks_secret_key(key)):
                rule[key] = "***"
    data["config_file"] = str(settings.source_path) if settings.source_path else None
    return data


def _looks_secret_key(key: str) -> bool:
    k = key.lower()
    return any(w in k for w in ("secret", "token", "password", "url")) and not k.endswith("_env")

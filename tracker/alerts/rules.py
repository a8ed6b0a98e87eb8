"""Alert rules: parsed and checked from ``[[alerts]]`` tables and from ``alerts add``.

The smallest rule works as written::

    [[alerts]]
    name = "h100-under-2"
    gpu = "H100"
    below = 2.0
    notify = ["json://127.0.0.1:9999/hook", "mailto://user:pass@example.com"]

Every key:

==================  ==========================================================================
name                required; letters, digits, ``.``, ``_``, ``-`` (at most 64)
gpu                 a canonical id (``H100-SXM``), a family (``H100`` = every variant), a
                    prefix (``H200*``), or a list of those
providers           only these providers (list of names)
regions             only these provider region codes
kinds               ``on-demand``, ``spot``, ``community``, ``reserved``, or ``"all"``;
                    default on-demand and community (what anyone can rent now without
                    interruption), so a spot bid floor never trips a price rule by surprise
min_gpu_count       only offers with at least this many GPUs
min_available       only providers with at least this many GPUs free now (the counts they state,
                    ``available_count``, of their matching offers added up best value first): the
                    rule's value is then the value at which that many are free at one provider
                    (``below = 2.5`` with ``min_available = 8``: 8 or more GPUs free at one
                    provider under $2.50 per GPU-hour). Offers without a stated count never
                    count; with ``below``, ``above`` or ``available_again`` only (the stored
                    history keeps no counts)
metric              ``price`` (USD per GPU-hour, default), ``cost_per_tflop`` (USD per hour per
                    dense TFLOPS on ``basis``), ``breakeven_months`` (catalog purchase price /
                    (price per GPU-hour x 730 h): months of 24/7 renting that cost as much as
                    buying the GPU, the simple break-even of ``tracker.analysis.tco`` at 100 %
                    utilisation), ``index`` (the rental index of one GPU, median-of-medians-1
                    over the offers in effect: each provider's median price per GPU-hour, then
                    the median across providers; on-demand unless ``kinds`` says otherwise; with
                    ``below``, ``above`` or ``drop_pct``, no ``aggregate``)
basis               for ``cost_per_tflop`` (``tracker.catalog.value``'s bases): fp16-dense (default;
                    FP16/BF16 tensor, FP32 accumulate; also "fp16"), fp16-sparse, fp8-dense
                    ("fp8"), tf32-dense ("tf32"), fp32
aggregate           ``min``, ``median`` or ``max`` across matching offers; the default is the
                    cheapest offer's value: ``min``, and ``max`` for ``breakeven_months``
one condition       ``below = X`` | ``above = X`` | ``drop_pct = P`` with ``window = "24h"``
                    (the value fell by at least P percent against the value at now - window)
                    | ``new_low = true`` (below every value stored before) |
                    ``available_again = true`` (an offer is listed as available after none was)
for                 the condition must hold for N consecutive evaluations with new data
                    (default 1)
rearm               hysteresis: after firing, the rule re-arms (and resolves) only once the value
                    is this far back on the other side of the threshold; a number in the
                    metric's unit or ``"5%"`` of the threshold (percentage points for
                    ``drop_pct``; for ``new_low``: how much lower a new low must be than the last
                    one alerted on)
notify              list of channels (see ``tracker.alerts.channels``); default ``["log"]``
resolved            also send a message when the condition stops holding (default false)
webhook_secret_env  environment variable holding the HMAC secret for ``webhook+`` channels
enabled             false keeps the rule (and its state) without evaluating it
==================  ==========================================================================

A bad rule raises ``ConfigError`` naming the rule and the key; a notify URL is never echoed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracker.alerts.channels import check_target, display
from tracker.config.settings import Settings, parse_duration
from tracker.errors import ConfigError
from tracker.kinds import DEFAULT_KINDS

METRICS = ("price", "cost_per_tflop", "breakeven_months", "index")
#: The kinds an ``index`` rule watches unless told otherwise (the index's own default: on-demand).
INDEX_KINDS = ("on_demand",)
AGGREGATES = ("min", "median", "max")
CONDITIONS = ("below", "above", "drop_pct", "new_low", "available_again")
ALL_KINDS = ("on_demand", "spot", "community", "reserved")
KIND_ALIASES = {"on-demand": "on_demand", "ondemand": "on_demand", "od": "on_demand", "preemptible": "spot",
                "interruptible": "spot"}
try:  # the cost-per-TFLOP module owns the basis names; these are its defaults if it is absent
    from tracker.catalog.value import BASES as _VALUE_BASES
    from tracker.catalog.value import DEFAULT_BASIS as _VALUE_DEFAULT
except ImportError:  # pragma: no cover
    _VALUE_BASES = {"fp16-dense": "fp16_dense_tflops", "fp16-sparse": "fp16_sparse_tflops",
                    "fp8-dense": "fp8_dense_tflops", "tf32-dense": "tf32_dense_tflops", "fp32": "fp32_tflops"}
    _VALUE_DEFAULT = "fp16-dense"
#: basis -> catalog field; ``tracker.catalog.value``'s names plus short forms (fp16 = bf16 = fp16-dense).
BASES: dict[str, str] = dict(_VALUE_BASES)
BASIS_ALIASES = {"fp16": "fp16-dense", "bf16": "fp16-dense", "bf16-dense": "fp16-dense", "fp8": "fp8-dense",
                 "tf32": "tf32-dense", "fp16-sparse": "fp16-sparse", "bf16-sparse": "fp16-sparse"}
DEFAULT_BASIS: str = _VALUE_DEFAULT


def normalise_basis(basis: str) -> str | None:
    """``FP8``, ``fp8_dense``, ``fp8-dense`` -> ``fp8-dense``; ``None`` when unknown."""
    b = basis.strip().lower().replace("_", "-")
    b = BASIS_ALIASES.get(b, b)
    return b if b in BASES else None
KEYS = (
    "name", "gpu", "providers", "regions", "kinds", "min_gpu_count", "min_available", "metric", "basis", "aggregate",
    *CONDITIONS, "window", "for", "rearm", "notify", "resolved", "webhook_secret_env", "enabled",
)
UNITS = {"price": "USD/GPU-h", "cost_per_tflop": "USD/TFLOPS-h", "breakeven_months": "months", "index": "USD/GPU-h"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    gpu_query: tuple[str, ...]
    gpus: tuple[str, ...]
    condition: str
    threshold: float | None = None
    window_s: float | None = None
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    kinds: tuple[str, ...] = DEFAULT_KINDS
    min_gpu_count: float | None = None
    #: GPUs that must be free now at one provider (``make_view``); ``None``: no such filter.
    min_available: int | None = None
    metric: str = "price"
    basis: str | None = None
    aggregate: str = "min"
    for_count: int = 1
    rearm: float = 0.0
    rearm_is_pct: bool = False
    notify: tuple[str, ...] = ("log",)
    resolved: bool = False
    webhook_secret_env: str | None = None
    enabled: bool = True
    source: str = "config"  # config | added
    definition: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    #: Internal hosts its channels may reach (``[delivery] allow_hosts`` when it was read).
    allow_hosts: tuple[str, ...] = field(default=(), compare=False, hash=False, repr=False)

    @property
    def gpu_label(self) -> str:
        return ", ".join(self.gpu_query)

    @property
    def unit(self) -> str:
        return "available offers" if self.condition == "available_again" else UNITS[self.metric]

    @property
    def basis_field(self) -> str | None:
        return BASES[self.basis or DEFAULT_BASIS] if self.metric == "cost_per_tflop" else None

    @property
    def higher_is_better(self) -> bool:
        """For the renter: a longer break-even means a cheaper rental."""
        return self.metric == "breakeven_months"

    def margin(self, reference: float | None) -> float:
        """The re-arm margin in the metric's unit (``"5%"`` is 5 % of ``reference``)."""
        if not self.rearm:
            return 0.0
        if self.rearm_is_pct and self.condition != "drop_pct":
            return abs(reference or 0.0) * self.rearm / 100.0
        return self.rearm

    def describe(self) -> str:
        """``min price of H100 below 2``: the condition in words."""
        what = "rental index" if self.metric == "index" else f"{self.aggregate} {self.metric.replace('_', ' ')}"
        if self.basis_field:
            what += f" ({self.basis or DEFAULT_BASIS})"
        what += f" of {self.gpu_label}"
        if self.min_available is not None:
            what += f" with {self.min_available}+ GPUs free at one provider"
        if self.condition in ("below", "above"):
            return f"{what} {self.condition} {self.threshold:g}"
        if self.condition == "drop_pct":
            return f"{what} dropped {self.threshold:g}% over {_duration(self.window_s or 0)}"
        if self.condition == "new_low":
            return f"{what} at a new all-time low"
        free = f" ({self.min_available}+ GPUs free at one provider)" if self.min_available is not None else ""
        return f"{self.gpu_label} available again{free}"

    def fingerprint(self) -> str:
        """What the rule watches; a change resets its state (thresholds and channels do not)."""
        watched = [sorted(self.gpus), sorted(self.providers), sorted(self.regions), sorted(self.kinds),
                   self.min_gpu_count, self.metric, self.basis_field, self.aggregate, self.condition, self.window_s]
        if self.min_available is not None:  # appended only when set: older rules keep their fingerprint
            watched.append(self.min_available)
        return hashlib.sha256(json.dumps(watched, default=str).encode()).hexdigest()[:32]

    @property
    def channels(self) -> list[str]:
        """The notify entries as they may be shown (redacted)."""
        return [display(t) for t in self.notify]


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _is_number(v: Any) -> bool:
    """A finite int or float (NaN and infinities compare false with everything, and PostgreSQL's JSON refuses them)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _str_list(raw: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    v = raw.get(key)
    if v is None:
        return ()
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) and x.strip() for x in v):
        raise ConfigError(f"{where}: {key}: must be a string or a list of strings")
    return tuple(x.strip() for x in v)


def _number(raw: Mapping[str, Any], key: str, where: str, *, positive: bool = False) -> float | None:
    v = raw.get(key)
    if v is None:
        return None
    if not _is_number(v):
        raise ConfigError(f"{where}: {key}: must be a number (got {_show(v)})")
    if positive and v <= 0:
        raise ConfigError(f"{where}: {key}: must be greater than 0 (got {v!r})")
    return float(v)


def _show(v: Any) -> str:
    if isinstance(v, (int, float)) or (isinstance(v, str) and len(v) < 40):
        return repr(v)
    return type(v).__name__


def _kinds(raw: Mapping[str, Any], where: str) -> tuple[str, ...]:
    given = _str_list(raw, "kinds", where)
    if not given:
        return DEFAULT_KINDS
    if [k.lower() for k in given] == ["all"]:
        return ALL_KINDS
    out = [KIND_ALIASES.get(k.lower(), k.lower().replace("-", "_")) for k in given]
    bad = [k for k in given if KIND_ALIASES.get(k.lower(), k.lower().replace("-", "_")) not in ALL_KINDS]
    if bad:
        raise ConfigError(f"{where}: kinds: {', '.join(map(repr, bad))} is not one of on-demand, spot, community, reserved, all")
    return tuple(dict.fromkeys(out))


def _resolve_gpus(query: tuple[str, ...], where: str, catalog_file: Any = None) -> tuple[str, ...]:
    from tracker.catalog.specs import gpu_ids_matching

    catalog = None
    if catalog_file is not None:
        from tracker.catalog.specs import load_catalog

        catalog = load_catalog(catalog_file)
    ids: list[str] = []
    for q in query:
        found = gpu_ids_matching(q, catalog) if catalog is not None else gpu_ids_matching(q)
        if not found:
            raise ConfigError(f"{where}: gpu: {q!r} matches no GPU in the catalog (try `gpu-tracker catalog`)")
        ids.extend(found)
    return tuple(dict.fromkeys(ids))


def check_table(raw: Any, where: str, article: str, label: str, name_re: re.Pattern[str], max_len: int,
                keys: Sequence[str]) -> tuple[str, str]:
    """Common checks of a named TOML table (an alert rule, a digest): it is a table, its name
    is valid, it has no unknown key (with a "did you mean"). Returns the name and the label
    later errors start with."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: {article} must be a table of keys")
    name = raw.get("name")
    if not isinstance(name, str) or not name_re.match(name):
        shown = f" (got {_show(name)})" if name is not None else ""
        raise ConfigError(f"{where}: name: required; letters, digits, '.', '_' or '-', at most {max_len}{shown}")
    where = f"{label} {name!r}"
    unknown = [k for k in raw if k not in keys]
    if unknown:
        k = str(unknown[0])
        close = difflib.get_close_matches(k, keys, n=1)
        raise ConfigError(f"{where}: unknown key {k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return name, where


def check_tables(raws: Sequence[Any], section: str, label: str, parse: Callable[[Any, str], Any]) -> list[str]:
    """Every problem of a list of named tables (``[[alerts]]``, ``[[digests]]``): each table's
    ``ConfigError`` and each name used twice, one message per problem (for ``config check``)."""
    errors: list[str] = []
    names: dict[str, int] = {}
    for i, raw in enumerate(raws):
        try:
            name = parse(raw, f"{section}[{i}]").name
        except ConfigError as exc:
            errors.append(str(exc))
            continue
        if name in names:
            errors.append(f"{label} {name!r}: name: used by more than one {label.split()[-1]} "
                          f"({section}[{names[name]}] and {section}[{i}])")
        names.setdefault(name, i)
    return errors


def parse_rule(raw: Mapping[str, Any], *, where: str = "alerts", source: str = "config",
               catalog_file: Any = None, allow_hosts: Iterable[str] = ()) -> Rule:
    """Check one rule table and build a ``Rule``; ``ConfigError`` names the rule and the key."""
    name, where = check_table(raw, where, "an alert rule", "alert rule", _NAME, 64, KEYS)

    gpu_query = _str_list(raw, "gpu", where)
    if not gpu_query:
        raise ConfigError(f"{where}: gpu: required (a GPU id like H100-SXM, a family like H100, or a list)")
    gpus = _resolve_gpus(gpu_query, where, catalog_file)

    given = [c for c in CONDITIONS if raw.get(c) not in (None, False)]
    if len(given) != 1:
        listed = " or ".join(CONDITIONS)
        raise ConfigError(f"{where}: exactly one condition is needed, one of {listed}"
                          + (f" (got {', '.join(given)})" if given else ""))
    condition = given[0]
    threshold: float | None = None
    window_s: float | None = None
    if condition in ("below", "above"):
        threshold = _number(raw, condition, where)
        if threshold is not None and threshold < 0:
            raise ConfigError(f"{where}: {condition}: must not be negative (got {threshold!r})")
    elif condition == "drop_pct":
        threshold = _number(raw, "drop_pct", where, positive=True)
        if threshold is not None and threshold >= 100:
            raise ConfigError(f"{where}: drop_pct: must be below 100 (got {threshold!r})")
    elif raw.get(condition) is not True:
        raise ConfigError(f"{where}: {condition}: must be true (got {_show(raw.get(condition))})")
    if condition == "drop_pct":
        if raw.get("window") is None:
            raise ConfigError(f"{where}: window: required with drop_pct (a duration like \"24h\" or \"7d\")")
        try:
            window_s = parse_duration(raw["window"])
        except (ValueError, TypeError):
            raise ConfigError(f"{where}: window: not a duration like 30m, 24h or 7d (got {_show(raw['window'])})") from None
        if window_s <= 0:
            raise ConfigError(f"{where}: window: must be longer than 0")
    elif raw.get("window") is not None:
        raise ConfigError(f"{where}: window: only applies to drop_pct")

    metric = raw.get("metric", "price")
    if isinstance(metric, str):
        metric = metric.strip().lower().replace("-", "_")  # cost-per-tflop, as `gpu-tracker history` spells it
    if metric not in METRICS:
        raise ConfigError(f"{where}: metric: must be one of {', '.join(METRICS)} (got {_show(metric)})")
    basis = raw.get("basis")
    if basis is not None:
        if metric != "cost_per_tflop":
            raise ConfigError(f"{where}: basis: only applies to metric cost_per_tflop")
        normal = normalise_basis(basis) if isinstance(basis, str) else None
        if normal is None:
            raise ConfigError(f"{where}: basis: must be one of {', '.join(BASES)} (got {_show(basis)})")
        basis = normal
    aggregate = raw.get("aggregate", "max" if metric == "breakeven_months" else "min")
    if aggregate not in AGGREGATES:
        raise ConfigError(f"{where}: aggregate: must be one of {', '.join(AGGREGATES)} (got {_show(aggregate)})")
    if condition == "available_again" and ("metric" in raw or "aggregate" in raw or "basis" in raw):
        raise ConfigError(f"{where}: available_again watches availability; metric, basis and aggregate do not apply")
    kinds = _kinds(raw, where)
    if metric == "index":
        if "aggregate" in raw:
            raise ConfigError(f"{where}: aggregate: does not apply to metric index (the index is the median across "
                              "providers of each provider's median)")
        if condition not in ("below", "above", "drop_pct"):
            raise ConfigError(f"{where}: metric index: the condition is below, above or drop_pct (got {condition})")
        if len(gpus) != 1:
            raise ConfigError(f"{where}: gpu: metric index watches one GPU, and {', '.join(gpu_query)} is "
                              f"{len(gpus)} ({', '.join(gpus[:4])}{'...' if len(gpus) > 4 else ''}): name one, e.g. {gpus[0]}")
        if "kinds" not in raw:
            kinds = INDEX_KINDS

    for_raw = raw.get("for", 1)
    if not isinstance(for_raw, int) or isinstance(for_raw, bool) or for_raw < 1:
        raise ConfigError(f"{where}: for: must be a whole number of evaluations, at least 1 (got {_show(for_raw)})")

    rearm, rearm_is_pct = _rearm(raw, where, condition)

    notify_raw = raw.get("notify", ["log"])
    if isinstance(notify_raw, str):
        notify_raw = [notify_raw]
    if not isinstance(notify_raw, (list, tuple)) or not notify_raw:
        raise ConfigError(f"{where}: notify: must be a list of channel URLs")
    allow = tuple(allow_hosts)
    for i, target in enumerate(notify_raw):
        check_target(target, f"{where}: notify[{i}]", allow)
    notify = tuple(t.strip() for t in notify_raw)

    resolved = raw.get("resolved", False)
    if not isinstance(resolved, bool):
        raise ConfigError(f"{where}: resolved: must be true or false (got {_show(resolved)})")
    if resolved and condition == "new_low":
        raise ConfigError(f"{where}: resolved: a new low is a one-off event with nothing to resolve")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: enabled: must be true or false (got {_show(enabled)})")
    secret_env = raw.get("webhook_secret_env")
    if secret_env is not None and (not isinstance(secret_env, str) or not _ENV_NAME.match(secret_env)):
        raise ConfigError(f"{where}: webhook_secret_env: must be the name of an environment variable (not the secret)")

    min_available = raw.get("min_available")
    if min_available is not None:
        if not isinstance(min_available, int) or isinstance(min_available, bool) or not 1 <= min_available <= MAX_AVAILABLE:
            raise ConfigError(f"{where}: min_available: must be a whole number of GPUs from 1 to {MAX_AVAILABLE} "
                              f"(got {_show(min_available)})")
        if metric == "index":
            raise ConfigError(f"{where}: min_available: does not apply to metric index (taken across providers)")
        if condition not in ("below", "above", "available_again"):
            raise ConfigError(f"{where}: min_available: applies to below, above and available_again only (the stored "
                              "history keeps no counts of free GPUs to compare with)")

    return Rule(
        name=name, gpu_query=gpu_query, gpus=gpus, condition=condition, threshold=threshold, window_s=window_s,
        providers=_str_list(raw, "providers", where), regions=_str_list(raw, "regions", where), kinds=kinds,
        min_gpu_count=_number(raw, "min_gpu_count", where, positive=True), min_available=min_available,
        metric=metric, basis=basis,
        aggregate=aggregate, for_count=for_raw, rearm=rearm, rearm_is_pct=rearm_is_pct, notify=notify,
        resolved=resolved, webhook_secret_env=secret_env, enabled=enabled, source=source, definition=dict(raw),
        allow_hosts=allow,
    )


#: The largest ``min_available``: more GPUs than any provider lists free at once.
MAX_AVAILABLE = 1_000_000
#: The largest re-arm margin in a metric's unit: a margin beyond it could never re-arm a rule
#: (no price, cost or break-even reaches it) and 1e308 would overflow the band's arithmetic.
MAX_REARM = 1e6


def _rearm(raw: Mapping[str, Any], where: str, condition: str) -> tuple[float, bool]:
    v = raw.get("rearm")
    if v is None:
        return 0.0, False
    if condition == "available_again":
        raise ConfigError(f"{where}: rearm: does not apply to available_again")
    if isinstance(v, str) and v.strip().endswith("%"):
        try:
            pct = float(v.strip()[:-1])
        except ValueError:
            raise ConfigError(f"{where}: rearm: not a number or percentage (got {_show(v)})") from None
        if not 0 <= pct <= 100:  # NaN fails too
            raise ConfigError(f"{where}: rearm: a percentage must be between 0% and 100% (got {_show(v)})")
        return pct, True
    if not _is_number(v) or not 0 <= v <= MAX_REARM:
        raise ConfigError(f"{where}: rearm: must be a number >= 0 or a percentage like \"5%\" (at most "
                          f"{MAX_REARM:g} or 100%; got {_show(v)})")
    return float(v), False


def parse_rules(tables: Sequence[Mapping[str, Any]], *, source: str = "config", catalog_file: Any = None,
                taken: Iterable[str] = (), allow_hosts: Iterable[str] = ()) -> list[Rule]:
    """Parse a list of rule tables; names must be unique (also against ``taken``)."""
    seen = set(taken)
    rules = []
    for i, raw in enumerate(tables):
        rule = parse_rule(raw, where=f"alerts[{i}]", source=source, catalog_file=catalog_file,
                          allow_hosts=allow_hosts)
        if rule.name in seen:
            raise ConfigError(f"alert rule {rule.name!r}: name: used by more than one rule")
        seen.add(rule.name)
        rules.append(rule)
    return rules


def config_rules(settings: Settings) -> list[Rule]:
    return parse_rules(settings.alerts, source="config", catalog_file=settings.catalog_file,
                       allow_hosts=settings.delivery.allow_hosts)


def all_rules(settings: Settings, added: Sequence[Mapping[str, Any]]) -> list[Rule]:
    """Every rule: the config file's, then those added with ``alerts add`` (their stored tables,
    ``added``: ``tracker.alerts.store.load_rules`` reads them with the ORM, ``alerts list`` with
    ``db.reads``)."""
    from_config = config_rules(settings)
    try:
        added_rules = parse_rules(added, source="added", catalog_file=settings.catalog_file,
                                  taken=[r.name for r in from_config], allow_hosts=settings.delivery.allow_hosts)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (a rule added with `alerts add`: fix the config or run "
                          "`gpu-tracker alerts remove NAME`)") from None
    return from_config + added_rules

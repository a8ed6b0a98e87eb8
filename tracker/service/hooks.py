"""What runs after each collection: the alert rules, then plugins.

A hook is ``after_collect(engine, settings, results)`` where ``results`` is the list of
``RunResult`` of the collection that just finished (one provider per scheduled job, every
selected provider for ``run --once``). Built-in hooks are found by name::

    tracker.alerts.after_collect     (evaluate rules, queue and deliver notifications)
    tracker.pipeline.retention.after_collect   (prune raw intervals past retention.raw_days, daily)

The analysis needs no hook: it is computed from the stored history when asked (CLI, API,
dashboard), so there is no snapshot to refresh.

Anything else registers itself with ``register``. A hook that raises is logged and the
others still run: a broken alert rule must never stop prices being collected.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from tracker.config.settings import Settings
    from tracker.pipeline.collect import RunResult

log = logging.getLogger("tracker.service.hooks")

AfterCollect = Callable[[Engine, "Settings", "list[RunResult]"], Any]

#: Modules whose ``after_collect`` runs after every collection, in this order.
BUILTIN_HOOK_MODULES: tuple[str, ...] = ("tracker.alerts", "tracker.pipeline.retention")

_registered: list[AfterCollect] = []


def register(hook: AfterCollect) -> AfterCollect:
    """Add ``hook`` (usable as a decorator); registering twice is a no-op."""
    if hook not in _registered:
        _registered.append(hook)
    return hook


def unregister(hook: AfterCollect) -> None:
    if hook in _registered:
        _registered.remove(hook)


def _builtin(module_name: str) -> AfterCollect | None:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:  # not written / not installed: nothing to run
            return None
        raise
    hook = getattr(module, "after_collect", None)
    return hook if callable(hook) else None


def hooks(builtin_modules: Sequence[str] = BUILTIN_HOOK_MODULES) -> list[tuple[str, AfterCollect]]:
    """The hooks to run, named for the logs; a built-in that fails to import is logged and left out."""
    found: list[tuple[str, AfterCollect]] = []
    for name in builtin_modules:
        try:
            hook = _builtin(name)
        except Exception:  # noqa: BLE001 - a broken module must not stop collection
            log.exception("after-collect hook %s.after_collect could not be loaded", name)
            continue
        if hook is not None:
            found.append((f"{name}.after_collect", hook))
    found += [(f"{getattr(h, '__module__', '?')}.{getattr(h, '__qualname__', repr(h))}", h) for h in _registered]
    return found


@dataclass
class HookReport:
    """What the hooks of one collection returned (by hook name) and which ones failed."""

    values: list[tuple[str, Any]] = field(default_factory=list)
    failures: list[tuple[str, BaseException]] = field(default_factory=list)

    @property
    def alerts_sent(self) -> int:
        """Messages delivered by the hooks that deliver (the alerts' ``AlertCycle.deliveries``)."""
        return sum(1 for _, value in self.values for d in getattr(value, "deliveries", ()) or ()
                   if getattr(d, "status", None) == "delivered")


def run_hooks(
    engine: Engine,
    settings: Settings,
    results: Sequence[RunResult],
    *,
    builtin_modules: Sequence[str] = BUILTIN_HOOK_MODULES,
) -> HookReport:
    """Run every hook; failures are logged, never raised."""
    report = HookReport()
    for name, hook in hooks(builtin_modules):
        try:
            report.values.append((name, hook(engine, settings, list(results))))
        except Exception as exc:  # noqa: BLE001 - logged, never fatal
            log.error("after-collect hook %s failed: %s: %s", name, type(exc).__name__, exc,
                      exc_info=log.isEnabledFor(logging.DEBUG))
            report.failures.append((name, exc))
    return report


def run_after_collect(
    engine: Engine,
    settings: Settings,
    results: Sequence[RunResult],
    *,
    builtin_modules: Sequence[str] = BUILTIN_HOOK_MODULES,
) -> list[tuple[str, BaseException]]:
    """Run every hook; returns the (hook, error) pairs that failed, each already logged."""
    return run_hooks(engine, settings, results, builtin_modules=builtin_modules).failures

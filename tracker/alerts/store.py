"""Rules added with ``gpu-tracker alerts add``: stored in ``alert_rule``, loaded beside the config's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from db.models import AlertRule, AlertState
from db.reader import Reader, in_transaction
from db.reads import added_rule_tables
from tracker.alerts.rules import Rule, all_rules, parse_rule
from tracker.config.settings import Settings
from tracker.errors import ConfigError


def load_rules(settings: Settings, reader: Reader) -> list[Rule]:
    """Every rule: the config file's, then those added with ``alerts add`` (stored in ``alert_rule``)."""
    return all_rules(settings, added_rule_tables(reader))


def add_rule(settings: Settings, session: Session, table: Mapping[str, Any]) -> Rule:
    """Check ``table`` against every existing rule and store it in ``alert_rule``."""
    rule = parse_rule(table, where="alerts add", source="added", catalog_file=settings.catalog_file,
                      allow_hosts=settings.delivery.allow_hosts)
    existing = {r.name: r for r in load_rules(settings, in_transaction(session.connection()))}
    if rule.name in existing:
        where = "the config file" if existing[rule.name].source == "config" else "`alerts add`"
        raise ConfigError(f"alert rule {rule.name!r}: name: already defined in {where}")
    session.add(AlertRule(name=rule.name, definition={k: v for k, v in table.items() if v is not None}))
    session.flush()
    return rule


def remove_rule(session: Session, name: str) -> bool:
    """Delete a rule added with ``alerts add`` and its state; ``False`` when there is none."""
    row = session.get(AlertRule, name)
    if row is None:
        return False
    session.delete(row)
    state = session.get(AlertState, name)
    if state is not None:
        session.delete(state)
    session.flush()
    return True

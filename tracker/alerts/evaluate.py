"""Evaluating rules: an edge-triggered state machine whose state lives in ``alert_state``.

::

              condition holds (count < for)              condition holds `for` times
    armed  ----------------------------------> pending -----------------------------> firing
      ^  <---------- condition false ----------'                                        |
      '-------------- value back past the threshold by the re-arm margin ---------------'
                          ("resolved" message when the rule asks for it)

* A rule fires once when its condition becomes true and not again until it is re-armed.
* ``for = N``: the condition must hold for N consecutive evaluations that saw new data. An
  evaluation whose data is unchanged (same providers, same scrape times) changes nothing, so
  running ``alerts check`` twice neither counts twice nor fires twice.
* Both views of ``tracker.alerts.data`` must agree before anything changes; when they differ
  (a provider with matching offers is failing) the state holds. No data holds the state too.
* ``new_low`` is an event, not a lasting condition: it fires when the value goes below every
  value stored before (and below the last alerted low by the re-arm margin), then re-arms.
* ``available_again`` fires when an offer is listed as available after an evaluation that
  saw none (the first evaluation only records the baseline), and re-arms when none is again.
* The state is the ``alert_state`` row itself (``db.columns.AlertStateRow``, immutable): ``step``
  returns the next one, so the state before an evaluation stays at hand for its messages.
* The state row carries a version: an update that finds another process got there first is
  dropped (with its events), so two evaluators never both fire.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col

from db import reads
from db.columns import AlertStateRow
from db.engine import engine_reader
from db.models import AlertEvent, AlertState, Outbox
from db.reader import in_transaction
from db.spans import utcnow
from tracker.alerts.channels import display
from tracker.alerts.data import Observation, gpu_specs, observe
from tracker.alerts.message import render
from tracker.alerts.rules import Rule
from tracker.alerts.store import load_rules
from tracker.config.settings import Settings

log = logging.getLogger("tracker.alerts")
EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class Evaluation:
    rule: str
    before: str
    after: str
    value: float | None
    events: tuple[str, ...] = ()
    event_ids: tuple[int, ...] = ()
    note: str | None = None
    pending_count: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)


class _Conflict(Exception):
    """Another evaluator updated this rule's state first."""


def _agree(a: bool | None, b: bool | None) -> bool | None:
    return a if a is not None and a == b else None


def judge(rule: Rule, st: AlertStateRow, obs: Observation) -> tuple[bool | None, bool | None]:
    """(condition holds, rule may re-arm), each ``None`` when unknown or the views disagree."""
    va, vb = obs.fresh.value, obs.combined.value
    if rule.condition == "available_again":
        if not obs.has_fresh:
            return None, None
        avail = _agree(obs.fresh.available > 0, obs.combined.available > 0)
        if avail is None:
            return None, None
        newly = avail and (st.state == "pending" or st.last_available is False)
        return newly, not avail
    if rule.min_available is not None and (va is None or vb is None):
        # no provider has that many GPUs free: a state of its own (the condition does not hold), when
        # both views agree on it and a fresh collection said so
        none_free = obs.has_fresh and _agree(va is None, vb is None)
        return (False, True) if none_free else (None, None)
    if va is None or vb is None:
        return None, None
    t = rule.threshold
    if rule.condition == "below":
        assert t is not None
        m = rule.margin(t)
        return _agree(va < t, vb < t), _agree(va >= t + m, vb >= t + m)
    if rule.condition == "above":
        assert t is not None
        m = rule.margin(t)
        return _agree(va > t, vb > t), _agree(va <= t - m, vb <= t - m)
    if rule.condition == "drop_pct":
        ref = obs.reference
        if ref is None or ref <= 0:
            return None, None
        assert t is not None
        m = rule.margin(t)
        da, db = (ref - va) / ref * 100, (ref - vb) / ref * 100
        return _agree(da >= t, db >= t), _agree(da < t - m, db < t - m)
    # new_low
    low = st.all_time_low
    if low is None:
        return False, True  # the first value is the baseline
    alerted = st.alerted_low if st.alerted_low is not None else low
    m = rule.margin(alerted)

    def lower(v: float) -> bool:
        return v < low - EPSILON and (m == 0 or v <= alerted - m + EPSILON)

    return _agree(lower(va), lower(vb)), True


def step(rule: Rule, st: AlertStateRow, obs: Observation) -> tuple[AlertStateRow, list[str]]:
    """The state after one evaluation from ``st``, and the events to send (``fired``/``resolved``)."""
    if rule.condition == "new_low" and st.all_time_low is None and obs.history_low is not None:
        # the baseline: what was stored before
        st = st._replace(all_time_low=obs.history_low, alerted_low=obs.history_low)
    cond, rearm = judge(rule, st, obs)
    events: list[str] = []
    if st.state == "firing":
        if rearm is True:
            st = st._replace(state="armed", pending_count=0, last_resolved_at=obs.now)
            if rule.resolved:
                events.append("resolved")
    elif cond is True:
        if st.pending_count + 1 >= rule.for_count:
            st = st._replace(state="firing", pending_count=0, last_fired_at=obs.now)
            events.append("fired")
        else:
            st = st._replace(state="pending", pending_count=st.pending_count + 1)
    elif cond is False:
        st = st._replace(state="armed", pending_count=0)

    va = obs.fresh.value
    if rule.condition == "new_low" and va is not None and cond is not None:
        if st.all_time_low is None:
            st = st._replace(all_time_low=va, alerted_low=va)  # no history: this first value is the baseline
        elif "fired" in events:
            low = min(va, obs.combined.value or va)
            st = st._replace(all_time_low=low, alerted_low=low, state="armed")  # an event, not a lasting condition
        elif st.state != "pending":
            st = st._replace(all_time_low=min(st.all_time_low, va))
    if rule.condition == "available_again" and cond is not None:
        st = st._replace(last_available=obs.fresh.available > 0)
    if va is not None:
        st = st._replace(last_value=va)
    return st, events


def _threshold(rule: Rule, before: AlertStateRow) -> float | None:
    if rule.condition == "new_low":
        return before.all_time_low
    return rule.threshold


def make_event(session: Session, rule: Rule, kind: str, obs: Observation | None, before: AlertStateRow,
               settings: Settings, now: datetime) -> AlertEvent:
    """Store an event and one outbox row per channel of the rule (in the caller's transaction)."""
    view = obs.fresh if obs is not None else None
    value = view.value if view is not None else before.last_value
    threshold = _threshold(rule, before) if kind != "test" else rule.threshold
    title, body, details = render(
        rule, kind, value=value, threshold=threshold, previous=before.last_value,
        best=view.best if view is not None else None, offers_considered=len(view.rows) if view is not None else 0,
        providers=view.providers if view is not None else None, held=obs.held if obs is not None else None,
        reference=obs.reference if obs is not None else None, settings=settings, now=now,
    )
    best = view.best if view is not None else None
    event = AlertEvent(
        rule=rule.name, kind=kind, created_at=now, gpu=rule.gpu_label, value=value, threshold=threshold,
        previous_value=before.last_value, provider=(best or {}).get("provider"), region=(best or {}).get("region"),
        offer_kind=(best or {}).get("kind"), title=title, message=body, details=details,
    )
    session.add(event)
    session.flush()
    assert event.id is not None
    for i, target in enumerate(rule.notify):
        session.add(Outbox(event_id=event.id, rule=rule.name, channel_index=i, channel=display(target),
                           created_at=now, next_attempt_at=now))
    session.flush()
    return event


def _write_state(session: Session, st: AlertStateRow, exists: bool) -> None:
    """Store ``st`` as the next version of its rule's state (``_Conflict``: another process stored
    one after ``st.version`` was read)."""
    if not exists:
        session.add(AlertState(**st._replace(version=1)._asdict()))
        session.flush()
        return
    result = session.execute(
        update(AlertState)
        .where(col(AlertState.rule) == st.rule, col(AlertState.version) == st.version)
        .values(**st._replace(version=st.version + 1)._asdict())
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise _Conflict(st.rule)


def evaluate_rule(engine: Engine, settings: Settings, rule: Rule, *, now: datetime, specs: Mapping[str, Any],
                  dry_run: bool = False) -> Evaluation:
    with Session(engine, expire_on_commit=False) as session:
        reader = in_transaction(session.connection())
        row = reads.alert_state(reader, rule.name)
        st = row or AlertStateRow(rule.name)
        fingerprint = rule.fingerprint()
        reset = st.fingerprint != fingerprint
        if reset:
            st = AlertStateRow(rule.name, fingerprint, version=st.version)
        before = st
        obs = observe(reader, rule, settings, now, specs,
                      want_history_low=rule.condition == "new_low" and st.all_time_low is None)
        if not reset and obs.stamp == st.data_stamp:
            return Evaluation(rule.name, st.state, st.state, obs.fresh.value, note="no new data",
                              pending_count=st.pending_count)
        st, events = step(rule, st, obs)
        st = st._replace(data_stamp=obs.stamp, last_evaluated_at=now)
        note = None
        if obs.held and events == [] and st.state == before.state:
            note = f"holding: latest scrape failed for {', '.join(obs.held)}"
        if dry_run:
            session.rollback()
            return Evaluation(rule.name, before.state, st.state, obs.fresh.value, tuple(events), note=note,
                              pending_count=st.pending_count)
        _write_state(session, st, exists=row is not None)
        ids = []
        for kind in events:
            ev = make_event(session, rule, kind, obs, before, settings, now)
            assert ev.id is not None
            ids.append(ev.id)
        session.commit()
    for kind in events:
        log.info("alert rule=%s event=%s value=%s", rule.name, kind, obs.fresh.value)
    return Evaluation(rule.name, before.state, st.state, obs.fresh.value, tuple(events), tuple(ids), note,
                      st.pending_count)


def evaluate(
    engine: Engine,
    settings: Settings,
    *,
    rules: Sequence[Rule] | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
) -> list[Evaluation]:
    """Evaluate every enabled rule once; store state, events and outbox rows (unless ``dry_run``)."""
    now = now or utcnow()
    if rules is None:
        with engine_reader(engine) as reader:
            rules = load_rules(settings, reader)
    specs: Mapping[str, Any] = gpu_specs(settings) if any(r.metric != "price" for r in rules) else {}
    out = []
    for rule in rules:
        if not rule.enabled:
            out.append(Evaluation(rule.name, "disabled", "disabled", None, note="enabled = false"))
            continue
        try:
            out.append(evaluate_rule(engine, settings, rule, now=now, specs=specs, dry_run=dry_run))
        except (_Conflict, IntegrityError):
            log.info("alert rule=%s evaluated concurrently by another process; left to it", rule.name)
            out.append(Evaluation(rule.name, "?", "?", None, note="evaluated concurrently by another process"))
        except OperationalError as exc:
            log.warning("alert rule=%s not evaluated: %s", rule.name, type(exc).__name__)
            out.append(Evaluation(rule.name, "?", "?", None, note=f"not evaluated: {type(exc).__name__}"))
    return out

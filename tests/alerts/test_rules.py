"""Rule parsing and checking, redaction of channel URLs."""

from __future__ import annotations

from typing import Any

import pytest

from tracker.alerts.redact import redact_url, scrub, secret_parts
from tracker.alerts.rules import DEFAULT_KINDS, parse_rule, parse_rules
from tracker.errors import ConfigError

BASE: dict[str, Any] = {"name": "r", "gpu": "H100", "below": 2.0, "notify": ["log"]}


def rule(**kw: Any) -> Any:
    return parse_rule({**BASE, **kw})


def error(**kw: Any) -> str:
    with pytest.raises(ConfigError) as exc:
        parse_rule({k: v for k, v in {**BASE, **kw}.items() if v is not None})
    return str(exc.value)


def test_defaults() -> None:
    r = rule()
    assert r.condition == "below" and r.threshold == 2.0 and r.metric == "price" and r.aggregate == "min"
    assert r.kinds == DEFAULT_KINDS and r.for_count == 1 and r.rearm == 0 and not r.resolved
    assert set(r.gpus) >= {"H100-SXM", "H100-PCIe"} and r.gpu_query == ("H100",)
    assert parse_rule({"name": "x", "gpu": "H100-SXM", "above": 3}).notify == ("log",)
    assert rule(metric="breakeven_months").aggregate == "max"


def test_every_option() -> None:
    r = rule(gpu=["H100-SXM", "H200*"], providers=["vastai", "runpod"], regions="us-east-1", kinds=["spot", "on-demand"],
             min_gpu_count=8, metric="cost-per-tflop", basis="FP8", aggregate="median", below=None, drop_pct=10,
             window="24h", rearm="5%", resolved=True, webhook_secret_env="HOOK_SECRET", **{"for": 3})
    assert r.gpus[0] == "H100-SXM" and "H200" in r.gpus and r.providers == ("vastai", "runpod")
    assert r.regions == ("us-east-1",) and r.kinds == ("spot", "on_demand") and r.min_gpu_count == 8
    assert r.basis == "fp8-dense" and r.basis_field == "fp8_dense_tflops" and r.window_s == 86400 and r.for_count == 3
    assert r.rearm == 5 and r.rearm_is_pct and r.margin(40) == 5  # percentage points for drop_pct
    assert rule(rearm="10%").margin(2.0) == pytest.approx(0.2) and rule(rearm=0.3).margin(2.0) == 0.3
    assert rule(kinds="all").kinds == ("on_demand", "spot", "community", "reserved")
    assert rule(below=None, new_low=True).condition == "new_low"
    assert rule(below=None, available_again=True).describe() == "H100 available again"


def test_a_changed_threshold_keeps_the_state_a_changed_gpu_does_not() -> None:
    assert rule().fingerprint() == rule(below=1.5, notify=["console"], rearm=0.1).fingerprint()
    assert rule().fingerprint() != rule(gpu="H100-SXM").fingerprint()
    assert rule().fingerprint() != rule(below=None, above=2.0).fingerprint()


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"name": None}, "alerts: name: required"),
        ({"name": "has space"}, "name: required; letters"),
        ({"gpu": None}, "alert rule 'r': gpu: required"),
        ({"gpu": "NoSuchGPU"}, "alert rule 'r': gpu: 'NoSuchGPU' matches no GPU"),
        ({"above": 3.0}, "exactly one condition is needed, one of below or above or drop_pct or new_low or available_again (got below, above)"),
        ({"below": None}, "exactly one condition is needed"),
        ({"below": "cheap"}, "alert rule 'r': below: must be a number (got 'cheap')"),
        ({"below": None, "drop_pct": 10}, "window: required with drop_pct"),
        ({"window": "1h"}, "window: only applies to drop_pct"),
        ({"below": None, "drop_pct": 10, "window": "soon"}, "window: not a duration"),
        ({"below": None, "new_low": "yes"}, "new_low: must be true"),
        ({"metric": "tflops"}, "metric: must be one of price, cost_per_tflop, breakeven_months"),
        ({"basis": "fp8"}, "basis: only applies to metric cost_per_tflop"),
        ({"metric": "cost_per_tflop", "basis": "fp4"}, "basis: must be one of"),
        ({"aggregate": "mean"}, "aggregate: must be one of min, median, max"),
        ({"for": 0}, "for: must be a whole number"),
        ({"for": 1.5}, "for: must be a whole number"),
        ({"rearm": -1}, "rearm: must be a number >= 0"),
        ({"rearm": "lots"}, "rearm: must be a number >= 0 or a percentage"),
        ({"kinds": ["ondemand", "bid"]}, "kinds: 'bid' is not one of"),
        ({"provider": "vastai"}, "unknown key 'provider' (did you mean 'providers'?)"),
        ({"resolved": "yes"}, "resolved: must be true or false"),
        ({"below": None, "new_low": True, "resolved": True}, "nothing to resolve"),
        ({"below": None, "available_again": True, "metric": "cost_per_tflop"}, "metric, basis and aggregate do not apply"),
        ({"webhook_secret_env": "s3cr3t value"}, "webhook_secret_env: must be the name of an environment variable"),
        ({"notify": []}, "notify: must be a list of channel URLs"),
        ({"notify": ["log", 5]}, "notify[1]: must be a non-empty string"),
        ({"notify": ["env:not a name"]}, "notify[0]: env: must be followed by"),
        ({"notify": ["webhook+ftp://h.example.com/x"]}, "notify[0]: a webhook URL is webhook+https://"),
    ],
)
def test_bad_rules_name_the_rule_and_the_key(kw: dict[str, Any], expected: str) -> None:
    assert expected in error(**kw)


@pytest.mark.parametrize(
    "url",
    [
        "nosuchscheme://tok-SECRET-123/abc",
        "https://hooks.example.com/services/tok-SECRET-123",
        "tok-SECRET-123",
    ],
)
def test_a_bad_notify_url_is_never_echoed(url: str, caplog: pytest.LogCaptureFixture) -> None:
    message = error(notify=["log", url])
    assert "notify[1]" in message and "tok-SECRET-123" not in message
    assert "tok-SECRET-123" not in caplog.text
    if url.startswith("https"):
        assert "webhook+https://" in message  # the hint for a plain JSON webhook


def test_names_are_unique_across_the_config_and_added_rules() -> None:
    with pytest.raises(ConfigError, match="name: used by more than one rule"):
        parse_rules([BASE, BASE])
    with pytest.raises(ConfigError, match="name: used by more than one rule"):
        parse_rules([BASE], taken=["r"])


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("json://127.0.0.1:9999/hook", "json://127.0.0.1:9999/***"),
        ("mailto://user:pass@example.com", "mailto://***@example.com"),
        ("mailtos://user:p%40ss@smtp.example.com:465?to=a@b.example", "mailtos://***@smtp.example.com:465?***"),
        ("tgram://123456789:AAE-bot-token/-100222", "tgram://***/***"),
        ("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ", "slack://***/***"),
        ("ntfy://my-secret-topic", "ntfy://***"),
        ("ntfys://ntfy.example.org/topic", "ntfys://ntfy.example.org/***"),
        ("webhook+https://hooks.example.com/gpu?token=abc123", "webhook+https://hooks.example.com/***?***"),
        ("env:SLACK_URL", "env:SLACK_URL"),
        ("console", "console"),
        ("not a url", "***"),
    ],
)
def test_redaction(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_scrub_removes_secret_parts_but_not_words_that_contain_them() -> None:
    url = "webhook+https://u:pw-123@hooks.example.com/hook/tok-abc?key=k-999"
    text = f"failed to POST {url[8:]} (key k-999, token tok-abc); webhook said no"
    clean = scrub(text, [url])
    for secret in ("pw-123", "tok-abc", "k-999"):
        assert secret not in clean
    assert clean.endswith("; webhook said no")
    assert "tok-abc" in secret_parts(url)


def test_check_config_reports_every_bad_rule() -> None:
    from tracker.alerts import check_config
    from tracker.config.settings import Settings

    settings = Settings(alerts=[BASE, {**BASE, "below": "x"}, BASE, {"gpu": "H100"}])
    errors = check_config(settings)
    assert len(errors) == 3
    assert "below: must be a number" in errors[0] and "used by more than one rule (alerts[0] and alerts[2])" in errors[1]
    assert errors[2].startswith("alerts[3]: name: required")

"""Alert targets never reach this machine, the local network or a metadata service unless the
operator allows the host by name: refused in ``alerts add`` and ``config check`` in every
address spelling, refused again at send time (also when DNS answers an internal address),
and no channel follows a redirect. Every delivery here goes to a receiver on 127.0.0.1 that
the test starts, allowed by name."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from tests.alerts.helpers import Receiver, cli
from tracker.alerts import targets
from tracker.alerts.channels import DeliveryError, Message, check_target, send
from tracker.config.check import check_file
from tracker.errors import ConfigError

#: (URL, what the refusal names) for each address form.
INTERNAL = [
    ("json://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local"),
    ("webhook+http://169.254.169.254/computeMetadata/v1/", "169.254.169.254 is a link-local"),
    ("json://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal is a local or metadata name"),
    ("webhook+https://metadata.google.internal/x", "metadata.google.internal is a local or metadata name"),
    ("json://metadata/x", "metadata is a local or metadata name"),
    ("json://10.0.0.1/hook", "10.0.0.1 is a private"),
    ("json://172.16.5.4/hook", "172.16.5.4 is a private"),
    ("json://192.168.1.10:8080/hook", "192.168.1.10 is a private"),
    ("json://[::1]:9999/hook", "::1 is a loopback"),
    ("webhook+http://[::1]/hook", "::1 is a loopback"),
    ("json://[::ffff:127.0.0.1]/hook", "::ffff:127.0.0.1 is a"),
    ("json://[fe80::1]/hook", "fe80::1 is a link-local"),
    ("json://[fd00::1]/hook", "fd00::1 is a private"),
    ("json://0.0.0.0/hook", "0.0.0.0 is an unspecified"),
    ("json://127.0.0.1:9999/hook", "127.0.0.1 is a loopback"),
    ("json://2130706433/hook", "2130706433 is a loopback"),
    ("json://0x7f000001/hook", "0x7f000001 is a loopback"),
    ("json://0177.0.0.1/hook", "0177.0.0.1 is a loopback"),
    ("json://127.1/hook", "127.1 is a loopback"),
    ("json://user:pass@localhost:8080/hook", "localhost is a local or metadata name"),
    ("json://evil.localhost/hook", "evil.localhost is a local or metadata name"),
    ("jsons://100.100.100.200/latest", "100.100.100.200 is a non-public"),
    ("webhook+http://2852039166/latest/", "2852039166 is a link-local"),  # 169.254.169.254 as an integer
    ("xml://10.1.2.3/x", "10.1.2.3 is a private"),
    ("ntfy://192.168.0.5/topic", "192.168.0.5 is a private"),
]


def message() -> Message:
    return Message(title="t", body="b", payload={"x": 1}, event_id=1, delivery_id=1)


@pytest.mark.parametrize(("url", "needle"), INTERNAL)
def test_every_address_form_is_refused_when_a_rule_is_read(url: str, needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_target(url, "alerts[0].notify[0]")
    text = str(caught.value)
    assert needle in text and "allow_hosts" in text and "\n" not in text, text
    host = url.split("[", 1)[1].split("]", 1)[0] if "[" in url else \
        url.split("://", 1)[1].split("/")[0].rsplit("@", 1)[-1].rsplit(":", 1)[0]
    try:
        check_target(url, "alerts[0].notify[0]", allow_hosts=[host])  # allowed by name
    except ConfigError as exc:
        assert "allow_hosts" not in str(exc)  # Apprise itself may still refuse an odd spelling


@pytest.mark.parametrize("url", ["json://hooks.example.com/hook", "webhook+https://hooks.example.com/x",
                                 "mailto://user:pass@example.com", "slack://T1/B2/C3", "tgram://123456789:AAbc/42",
                                 "ntfy://mytopic", "json://8.8.8.8/hook"])
def test_public_targets_pass(url: str) -> None:
    check_target(url, "alerts[0].notify[0]")


def test_an_address_in_any_spelling_is_allowed_by_its_plain_form() -> None:
    check_target("json://2130706433:9/hook", "x", allow_hosts=["127.0.0.1"])
    check_target("json://[0:0:0:0:0:0:0:1]:9/hook", "x", allow_hosts=["::1"])
    with pytest.raises(ConfigError):
        check_target("json://10.0.0.2/hook", "x", allow_hosts=["10.0.0.1"])


def test_alerts_add_and_config_check_refuse_and_allow_by_name(tmp_path: Path, engine: Engine, db_url: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text("")
    for url, needle in INTERNAL[:18]:
        code, out = cli(db_url, config, "alerts", "add", "r1", "--gpu", "H100", "--below", "2", "--notify", url)
        assert code == 2 and needle in out and "allow_hosts" in out, (url, out)
    code, out = cli(db_url, config, "alerts", "list", "--format", "json")
    assert code == 0 and out.strip() == "[]"  # nothing was stored

    rules = "".join(f'[[alerts]]\nname = "r{i}"\ngpu = "H100"\nbelow = 2.0\nnotify = ["{u}"]\n\n'
                    for i, (u, _n) in enumerate(INTERNAL))
    config.write_text(rules)
    report = check_file(config, environ={})
    assert not report.ok and len(report.errors) == len(INTERNAL)
    for error, (_url, needle) in zip(report.errors, INTERNAL, strict=True):
        assert needle in error and "\n" not in error, error

    config.write_text('[delivery]\nallow_hosts = ["127.0.0.1"]\n\n'
                      '[[alerts]]\nname = "local"\ngpu = "H100"\nbelow = 2.0\nnotify = ["json://127.0.0.1:9/hook"]\n')
    assert check_file(config, environ={}).ok
    code, out = cli(db_url, config, "alerts", "add", "r2", "--gpu", "H100", "--below", "2", "--notify",
                    "webhook+http://127.0.0.1:9/hook")
    assert code == 0, out


def test_nothing_is_sent_to_a_refused_address(receiver: Receiver) -> None:
    """The receiver listens on 127.0.0.1; spellings of that address are refused before sending,
    also through an ``env:`` URL known only at send time."""
    port = receiver.port
    for url in (f"json://2130706433:{port}/hook", f"webhook+http://0x7f000001:{port}/hook",
                f"json://localhost:{port}/hook", f"webhook+http://127.0.0.1:{port}/hook", "env:HOOK"):
        with pytest.raises(DeliveryError, match="allow_hosts"):
            send(url, message(), environ={"HOOK": f"json://127.1:{port}/hook"})
    assert receiver.requests == []
    send(f"webhook+http://127.0.0.1:{port}/hook", message(), allow_hosts=["127.0.0.1"])
    assert [r.path for r in receiver.requests] == ["/hook"]


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> str:
    """A public-looking name whose DNS answer is 127.0.0.1 (as a rebinding attacker's would be)."""
    targets._install()
    real = targets._original
    assert real is not None

    def fake(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("rebind.example.com", b"rebind.example.com"):
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(targets, "_original", fake)
    return "rebind.example.com"


@pytest.mark.parametrize("scheme", ["webhook+http", "json"])
def test_the_resolved_address_is_checked_at_send_time(receiver: Receiver, rebinding: str, scheme: str) -> None:
    url = f"{scheme}://{rebinding}:{receiver.port}/hook"
    check_target(url, "x")  # the name itself looks public
    with pytest.raises(DeliveryError, match="resolves to a loopback address|Connection error"):
        send(url, message())
    assert receiver.requests == []
    send(url, message(), allow_hosts=[rebinding])  # allowed by name: delivered
    assert len(receiver.requests) == 1
    assert socket.getaddrinfo("127.0.0.1", 80)  # outside a send the resolver is untouched


@pytest.mark.parametrize("scheme", ["webhook+http", "json"])
def test_no_channel_follows_a_redirect(receiver: Receiver, scheme: str) -> None:
    receiver.codes = [307]
    receiver.location = receiver.url("http", "elsewhere")
    with pytest.raises(DeliveryError):
        send(receiver.url(scheme, "hook"), message(), allow_hosts=["127.0.0.1"])
    assert [r.path for r in receiver.requests] == ["/hook"]  # the redirect was not followed

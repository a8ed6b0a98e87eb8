"""``gpu-tracker alerts ...`` end to end: add, list, check (dry run and real), test, history, remove."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from db.engine import make_engine
from db.migrate import init_db
from tests.alerts.helpers import Market, Receiver, cli, fast_settings, h100

runner = CliRunner()
TOKEN = "tok-SECRET-4242"


def test_alerts_commands(tmp_path: Path, receiver: Receiver) -> None:
    db = f"sqlite:///{tmp_path / 'tracker.db'}"
    config = tmp_path / "config.toml"
    hook = receiver.url("webhook+http", TOKEN)
    config.write_text('[delivery]\nallow_hosts = ["127.0.0.1"]\n\n'
                      f'[[alerts]]\nname = "from-config"\ngpu = "H100"\nbelow = 2.0\nnotify = ["{hook}"]\n')
    engine = make_engine(db)
    init_db(engine)
    Market(engine, fast_settings()).collect(p1=[h100("a", 1.9)])
    engine.dispose()

    code, out = cli(db, config, "alerts", "add", "added-rule", "--gpu", "H100", "--below", "1.95", "--rearm", "5%",
                    "--for", "1", "--kind", "on-demand", "--notify", hook, "--resolved")
    assert code == 0 and "added alert rule added-rule" in out and "stored in the" in out and TOKEN not in out
    code, out = cli(db, config, "alerts", "add", "from-config", "--gpu", "H100", "--below", "1")
    assert code == 2 and "already defined in the config file" in out
    code, out = cli(db, config, "alerts", "add", "bad", "--gpu", "H100", "--below", "1", "--notify", f"nope://{TOKEN}")
    assert code == 2 and "notify[0]" in out and TOKEN not in out

    code, out = cli(db, config, "alerts", "list", "--format", "json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == {"from-config", "added-rule"}
    assert rows["from-config"]["source"] == "config" and rows["added-rule"]["source"] == "added"
    assert rows["added-rule"]["rearm"] == "5%" and rows["added-rule"]["state"] == "armed"
    assert rows["added-rule"]["notify"] == f"webhook+http://127.0.0.1:{receiver.port}/***"
    code, out = cli(db, config, "alerts", "list")
    assert code == 0 and TOKEN not in out and "alert rules" in out

    code, out = cli(db, config, "alerts", "check", "--dry-run", "--format", "json")
    assert code == 0 and {r["rule"]: r["events"] for r in json.loads(out)} == {"from-config": "fired", "added-rule": "fired"}
    assert receiver.requests == []

    code, out = cli(db, config, "alerts", "check")
    assert code == 0 and "fired" in out and TOKEN not in out
    assert len(receiver.requests) == 2 and {r.path for r in receiver.requests} == {f"/{TOKEN}"}
    code, out = cli(db, config, "alerts", "check", "--format", "json")
    assert {r["note"] for r in json.loads(out)} == {"no new data"} and len(receiver.requests) == 2

    receiver.codes = [500]
    code, out = cli(db, config, "alerts", "test", "from-config")
    assert code == 1 and "HTTP 500" in out and TOKEN not in out
    code, out = cli(db, config, "alerts", "test", "added-rule")
    assert code == 0 and "delivered" in out
    assert [r.json()["kind"] for r in receiver.requests] == ["fired", "fired", "test", "test"]

    code, out = cli(db, config, "alerts", "history", "--format", "json")
    hist = json.loads(out)
    assert code == 0 and [(h["rule"], h["kind"], h["delivered"]) for h in hist] == [
        ("added-rule", "test", "1/1"), ("from-config", "test", "0/1"),
        ("added-rule", "fired", "1/1"), ("from-config", "fired", "1/1")]
    assert hist[1]["deliveries"][0]["status"] == "failed" and TOKEN not in out
    code, out = cli(db, config, "alerts", "history", "--rule", "from-config")
    assert code == 0 and "added-rule" not in out and TOKEN not in out

    code, out = cli(db, config, "alerts", "remove", "from-config")
    assert code == 2 and "defined in the config file" in out
    code, out = cli(db, config, "alerts", "remove", "added-rule")
    assert code == 0
    code, out = cli(db, config, "alerts", "list", "--format", "json")
    assert [r["name"] for r in json.loads(out)] == ["from-config"]

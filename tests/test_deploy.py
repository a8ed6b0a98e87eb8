"""docker-compose.yml and the Dockerfile are kept correct by parsing them (no Docker engine here):
what they copy exists, the commands and options they give are the CLI's own, the variables they
set are ones the application reads, and both health checks are run for real (the collector's
through the CLI on both backends, the dashboard's Python one-liner against a live server)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from tracker.config.settings import Settings, load_settings
from tracker.errors import ConfigError

ROOT = Path(__file__).parent.parent
#: A token as a user would put it in .env (16+ characters); not a real secret.
TOKEN = "compose-test-token-0123456789abcdef"
_VAR = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` against ``env``."""
    def one(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if env.get(name):
            return env[name]
        if op == "?":
            raise ValueError(f"{name}: {arg}")
        return arg if op == "-" else ""
    return _VAR.sub(one, value)


def cli_params(args: list[str]) -> dict[str, Any]:
    """``args`` parsed by the real ``gpu-tracker`` command line (nothing runs)."""
    from tracker.cli import app

    group = typer.main.get_command(app)
    command = group.commands[args[0]]  # type: ignore[attr-defined]
    return dict(command.make_context(args[0], list(args[1:])).params)


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


def test_dockerfile_copies_what_exists_and_installs_the_console_script() -> None:
    instr = dockerfile_instructions()
    ops = [op for op, _ in instr]
    assert ops[0] == "FROM" and re.match(r"python:3\.1[1-9]", instr[0][1])
    for op, rest in instr:
        if op == "COPY":
            *sources, _dest = rest.split()
            for src in sources:
                assert (ROOT / src).exists(), f"Dockerfile copies {src}, which does not exist"
    runs = " ".join(rest for op, rest in instr if op == "RUN")
    assert "pip install '.[postgres]'" in runs
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    entry = dict(instr)["ENTRYPOINT"]
    assert entry == '["gpu-tracker"]' and "gpu-tracker" in scripts
    assert dict(instr)["USER"] != "root"
    # every top-level package the wheel needs is copied
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    copied = {rest.split()[0] for op, rest in instr if op == "COPY"}
    assert {p.rstrip("*") for p in packages} <= copied


def test_compose_services_match_the_application() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    tracker = services["tracker"]
    assert tracker["build"] == "." and tracker["command"] == ["run"]
    env = tracker["environment"]
    assert env["GPU_TRACKER_DB"].startswith("${GPU_TRACKER_DB:-sqlite:////data/")
    # the variables compose sets are ones the application reads
    known = {"GPU_TRACKER_DB", "GPU_TRACKER_CONFIG"}
    from scrapers.registry import all_scrapers

    for cls in all_scrapers().values():
        known |= set(cls.credentials) | set(cls.optional_credentials)
    assert set(env) <= known, f"unknown variables in compose: {set(env) - known}"
    assert "GPU_TRACKER_DB" in Settings.model_fields["database"].validation_alias.choices  # type: ignore[union-attr]
    volumes = {v.split(":")[0] for v in tracker["volumes"]}
    assert "tracker-data" in volumes and "tracker-data" in compose["volumes"]
    pg = services["postgres"]
    assert pg["profiles"] == ["postgres"] and "pg_isready" in " ".join(pg["healthcheck"]["test"])
    for volume in pg["volumes"]:
        assert volume.split(":")[0] in compose["volumes"]


def test_every_required_credential_is_passed_through_compose() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = compose["services"]["tracker"]["environment"]
    from scrapers.registry import all_scrapers

    for name, cls in all_scrapers().items():
        for var in cls.credentials:
            assert var in env, f"{name} needs {var}; docker-compose.yml does not pass it"


# --- the dashboard service and the health checks ------------------------------------------------


def test_web_service_serves_on_all_interfaces_with_the_token_from_the_environment() -> None:
    services = compose()["services"]
    web, tracker = services["web"], services["tracker"]
    assert web["image"] == tracker["image"] and web["build"] == "."
    params = cli_params(web["command"])
    assert params["host"] == "0.0.0.0"
    port = params["port"] or Settings().web.port
    [published] = web["ports"]
    assert interpolate(published, {}) == f"127.0.0.1:8000:{port}"  # published, on loopback unless asked
    assert interpolate(published, {"GPU_TRACKER_WEB_BIND": "0.0.0.0", "GPU_TRACKER_WEB_PORT": "80"}) == f"0.0.0.0:80:{port}"

    env = web["environment"]
    # the token comes from the environment only, and compose refuses to start without it
    assert env["GPU_TRACKER_API_TOKEN"].startswith("${GPU_TRACKER_API_TOKEN:?")
    with pytest.raises(ValueError, match="GPU_TRACKER_API_TOKEN"):
        interpolate(env["GPU_TRACKER_API_TOKEN"], {})
    # the same store and config as the collector
    assert env["GPU_TRACKER_DB"] == tracker["environment"]["GPU_TRACKER_DB"]
    assert env["GPU_TRACKER_CONFIG"] == tracker["environment"]["GPU_TRACKER_CONFIG"]
    assert {v.split(":")[0] for v in web["volumes"]} == {v.split(":")[0] for v in tracker["volumes"]}


def test_web_environment_is_read_by_the_settings_and_the_server_security(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracker.web.security import security_for

    web = compose()["services"]["web"]
    user_env = {"GPU_TRACKER_API_TOKEN": TOKEN, "GPU_TRACKER_ALLOWED_HOSTS": '["gpu.example.com"]'}
    env = {k: interpolate(v, user_env) for k, v in web["environment"].items()}
    assert env["GPU_TRACKER_API_TOKEN"] == TOKEN
    for k, v in env.items():
        if k != "GPU_TRACKER_CONFIG":  # the file is mounted in the container
            monkeypatch.setenv(k, v)
    settings = load_settings()
    assert settings.database == "sqlite:////data/gpu-price-tracker/tracker.db"
    assert settings.web.allowed_hosts == ["gpu.example.com"]
    security = security_for(settings, cli_params(web["command"])["host"], environ=env)
    assert security.token == TOKEN and security.host_ok("gpu.example.com")
    assert not security.host_ok("evil.example.net") and security.host_ok("127.0.0.1:8000")
    # without the token the server refuses to bind to 0.0.0.0: compose has to pass it
    with pytest.raises(ConfigError, match="GPU_TRACKER_API_TOKEN"):
        security_for(settings, "0.0.0.0", environ={})
    monkeypatch.setenv("GPU_TRACKER_WEB__ALLOWED_HOSTS", interpolate(web["environment"]["GPU_TRACKER_WEB__ALLOWED_HOSTS"], {}))
    assert load_settings().web.allowed_hosts == []


def test_depends_on_waits_for_healthy_services() -> None:
    services = compose()["services"]
    assert services["web"]["depends_on"] == {"tracker": {"condition": "service_healthy"}}
    pg = services["tracker"]["depends_on"]["postgres"]
    assert pg == {"condition": "service_healthy", "required": False}  # postgres is in a profile
    for name, svc in services.items():
        for target, how in svc.get("depends_on", {}).items():
            assert target in services, f"{name} depends on unknown {target}"
            if how["condition"] == "service_healthy":
                assert "healthcheck" in services[target], f"{name} waits for {target}, which has no healthcheck"
    for name in ("tracker", "web", "postgres"):
        check = services[name]["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL") and check["retries"] >= 1, name


def test_collector_healthcheck_is_healthy_only_while_a_scheduler_is_active(engine: Engine, db_url: str) -> None:
    from tracker.cli import app
    from tracker.service import leader

    test = compose()["services"]["tracker"]["healthcheck"]["test"]
    assert test[:2] == ["CMD", "gpu-tracker"]
    runner = CliRunner()
    down = runner.invoke(app, ["--db", db_url, *test[2:]])
    assert down.exit_code == 1 and "scheduler: not active" in down.output
    leader.record_leader(engine, heartbeat_every_s=30)
    up = runner.invoke(app, ["--db", db_url, *test[2:]])
    assert up.exit_code == 0 and "scheduler: active" in up.output, up.output
    # the image's own health check is the same command
    health = dict(dockerfile_instructions())["HEALTHCHECK"]
    assert health.endswith(f"CMD {test[1:]}".replace("'", '"'))


def test_web_healthcheck_passes_against_a_token_protected_server(tmp_path: Path) -> None:
    from db.engine import make_engine
    from db.migrate import init_db
    from tests.web.conftest import free_port, serving
    from tracker.web import create_app
    from tracker.web.security import security_for

    test = compose()["services"]["web"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]  # python:3.x-slim has python, not curl
    assert re.match(r"python:3\.1[1-9]", dict(dockerfile_instructions())["FROM"].split()[0])
    script = test[3]
    assert "http://127.0.0.1:8000/healthz" in script

    url = f"sqlite:///{tmp_path / 'tracker.db'}"
    engine = make_engine(url)
    init_db(engine)
    settings = Settings(database=url)
    app = create_app(settings, engine, security_for(settings, "0.0.0.0", environ={"GPU_TRACKER_API_TOKEN": TOKEN}))
    with serving(app) as base:
        probe = script.replace("http://127.0.0.1:8000", base)
        ok = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=False)
        assert ok.returncode == 0, ok.stderr[-1000:]
        # and the token is really required elsewhere
        api = subprocess.run([sys.executable, "-c", probe.replace("/healthz", "/api/prices")],
                             capture_output=True, text=True, timeout=30, check=False)
        assert api.returncode != 0 and "401" in api.stderr
    refused = subprocess.run([sys.executable, "-c", script.replace("8000", str(free_port()))],
                             capture_output=True, text=True, timeout=30, check=False)
    assert refused.returncode != 0
    engine.dispose()

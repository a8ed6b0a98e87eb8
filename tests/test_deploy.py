"""docker-compose.yml and the Dockerfile are kept correct by parsing them (no Docker engine here)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from tracker.config.settings import Settings

ROOT = Path(__file__).parent.parent


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

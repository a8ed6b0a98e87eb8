"""Configuration: the example round-trips, `config check` names key and value but never a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scrapers.base import Scraper
from scrapers.registry import all_scrapers
from tracker.cli import app
from tracker.config.example import example_config
from tracker.config.settings import Settings, load_settings
from tracker.errors import ConfigError
from tracker.service.scheduler import plan_providers, provider_interval

runner = CliRunner()
SECRET = "s3cr3t-Value-9f8e7d"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No GPU_TRACKER_* from the developer's shell, and no default config file."""
    import os

    for key in list(os.environ):
        if key.startswith("GPU_TRACKER_"):
            monkeypatch.delenv(key)
    monkeypatch.setattr("tracker.config.settings.default_config_path", lambda: tmp_path / "absent" / "config.toml")


def write(tmp_path: Path, text: str, name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def check(path: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, ["config", "check", str(path)], env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_example_round_trips_to_the_defaults(tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "init"])
    assert result.exit_code == 0
    assert result.output == example_config()
    path = write(tmp_path, result.output)
    loaded = load_settings(path)
    defaults = Settings()
    assert loaded.model_dump() == defaults.model_dump()
    assert loaded.source_path == path
    # every registered provider is listed with the variables it reads
    for name, cls in all_scrapers().items():
        assert f"#   {name} " in result.output
        for env in cls.credentials:
            assert env in result.output
    code, out = check(path)
    assert code == 0, out
    assert "\nok: " in "\n" + out


def test_commented_examples_in_the_example_are_valid_too(tmp_path: Path) -> None:
    """Uncommenting the example lines gives a file that still loads."""
    lines = []
    for line in example_config().splitlines():
        stripped = line[2:] if line.startswith("# ") else line
        if stripped.startswith(("[providers.", "enabled =", "interval =", "api_key_env =", "jitter =",
                                "misfire_grace =", "heartbeat =", "[currency_rates]", "EUR =", "base_url =",
                                "[[alerts]]", "name =", "gpu =", "below =", "notify =", "[[digests]]",
                                "every =", "at =", "gpus =")):
            lines.append(stripped)
        else:
            lines.append(line)
    settings = load_settings(write(tmp_path, "\n".join(lines)))
    assert settings.providers["aws"].enabled is False
    assert settings.interval_for("runpod") == 1800
    assert settings.scheduler.jitter == 360 and settings.scheduler.misfire_grace == 3600
    assert settings.currency_rates == {"EUR": 1.08}
    assert [a["name"] for a in settings.alerts] == ["h100-under-2"]
    assert [d["name"] for d in settings.digests] == ["morning"]
    from tracker.config.check import semantic_errors

    assert semantic_errors(settings) == []


def test_init_writes_a_file_and_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "config.toml"
    assert runner.invoke(app, ["config", "init", str(target)]).exit_code == 0
    assert target.read_text() == example_config()
    again = runner.invoke(app, ["config", "init", str(target)])
    assert again.exit_code != 0 and isinstance(again.exception, ConfigError)
    assert "--force" in str(again.exception)
    assert runner.invoke(app, ["config", "init", str(target), "--force"]).exit_code == 0


def test_check_names_the_key_and_the_bad_value(tmp_path: Path) -> None:
    path = write(tmp_path, '[providers.lambda]\ninterval = "soon"\n[http]\nretries = 99\n')
    code, out = check(path)
    assert code == 1
    assert "providers.lambda.interval" in out and "'soon'" in out
    assert "http.retries" in out and "99" in out
    assert "2 error(s)" in out


def test_check_flags_unknown_keys_and_providers(tmp_path: Path) -> None:
    path = write(tmp_path, '[providers.vastaii]\ninterval = "1h"\n[htpp]\ntimeout_s = 3\n')
    code, out = check(path)
    assert code == 1
    assert "htpp" in out
    path = write(tmp_path, '[providers.vastaii]\ninterval = "1h"\n', "p.toml")
    code, out = check(path)
    assert code == 1
    assert "providers.vastaii: unknown provider 'vastaii' (did you mean 'vastai'?)" in out


def test_check_never_shows_a_secret(tmp_path: Path) -> None:
    path = write(tmp_path, (
        f'database = "postgresql://tracker:{SECRET}@db.example.com/gpu"\n'
        f'[providers.runpod]\napi_key_env = "{SECRET}"\n'
        f'[providers.gcp]\ncredentials_env = {{ GCP_API_KEY = "{SECRET}" }}\n'
        f'[[alerts]]\nname = "x"\ngpu = "H100"\nbelow = 2.0\nnotify = ["tgram://{SECRET}/123"]\n'
    ))
    code, out = check(path, env={"RUNPOD_API_KEY": SECRET})
    assert code == 1
    assert SECRET not in out
    assert "providers.runpod.api_key_env: must be the NAME of an environment variable" in out
    assert "providers.gcp.credentials_env.GCP_API_KEY: must be the NAME" in out
    # a bad type on a secret-looking key is named without its value
    path = write(tmp_path, f'database = "postgresql://u:{SECRET}@h/db"\n[web]\nbase_url = 5\n'
                           f'[providers.runpod]\napi_key_env = ["{SECRET}"]\n', "t.toml")
    code, out = check(path)
    assert code == 1 and SECRET not in out
    assert "providers.runpod.api_key_env" in out


def test_check_of_a_missing_named_file_fails(tmp_path: Path) -> None:
    code, out = check(tmp_path / "nope.toml")
    assert code == 1 and "does not exist" in out


def test_check_warns_about_unset_keys_without_failing(tmp_path: Path) -> None:
    path = write(tmp_path, '[providers.gcp]\nenabled = true\n')
    code, out = check(path, env={"GCP_API_KEY": ""})
    assert code == 0
    assert "warning: gcp: GCP_API_KEY not set: it will be skipped" in out


def test_show_masks_the_database_password(tmp_path: Path) -> None:
    path = write(tmp_path, f'database = "postgresql://tracker:{SECRET}@db.example.com/gpu"\n'
                           f'[[alerts]]\nname = "x"\nnotify = ["tgram://{SECRET}/123"]\n')
    result = runner.invoke(app, ["--config", str(path), "config", "show"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert SECRET not in result.output
    assert data["database"] == "postgresql://tracker:***@db.example.com/gpu"
    assert data["config_file"] == str(path)


def test_env_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, '[scheduler]\nshutdown_grace = "10s"\n')
    monkeypatch.setenv("GPU_TRACKER_SCHEDULER__SHUTDOWN_GRACE", "2m")
    monkeypatch.setenv("GPU_TRACKER_DEFAULT_INTERVAL", "30m")
    settings = load_settings(path)
    assert settings.scheduler.shutdown_grace == 120
    assert settings.default_interval == 1800


def test_interval_precedence(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, 'default_interval = "2h"\n[providers.lambda]\nenabled = true\n'
                                             '[providers.vastai]\ninterval = "15m"\n[providers.aws]\ninterval = "6h"\n'))
    scrapers = all_scrapers()
    # a section without interval takes default_interval, not the model's 1h
    assert settings.provider("lambda").interval == 7200
    assert provider_interval(settings, scrapers["lambda"]) == 7200
    assert provider_interval(settings, scrapers["vastai"]) == 900
    assert provider_interval(settings, scrapers["aws"]) == 6 * 3600  # config beats the scraper's own default
    plain = load_settings(write(tmp_path, "", "empty.toml"))
    assert scrapers["aws"].default_interval_s != Scraper.default_interval_s
    assert provider_interval(plain, scrapers["aws"]) == scrapers["aws"].default_interval_s
    assert provider_interval(plain, scrapers["modal"]) == 3600


def test_scheduler_defaults_follow_the_interval(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, '[providers.lambda]\ninterval = "10m"\n'))
    [plan] = plan_providers(settings, ["lambda"])
    assert (plan.interval, plan.jitter, plan.misfire_grace) == (600, 60, 660)
    settings = load_settings(write(tmp_path, '[providers.lambda]\ninterval = "1d"\n[scheduler]\njitter = "5s"\n'
                                             'misfire_grace = "90s"\n', "b.toml"))
    [plan] = plan_providers(settings, ["lambda"])
    assert (plan.interval, plan.jitter, plan.misfire_grace) == (86400, 5, 90)
    assert plan_providers(load_settings(write(tmp_path, "", "c.toml")), ["aws"])[0].jitter == 300


def test_disabled_providers_are_not_planned(tmp_path: Path) -> None:
    body = "\n".join(f"[providers.{n}]\nenabled = false" for n in all_scrapers() if n != "lambda")
    settings = load_settings(write(tmp_path, body))
    assert [p.name for p in plan_providers(settings)] == ["lambda"]
    # an explicit --provider runs even a disabled one
    assert [p.name for p in plan_providers(settings, ["vastai"])] == ["vastai"]
    everything_off = load_settings(write(tmp_path, body + "\n[providers.lambda]\nenabled = false\n", "off.toml"))
    with pytest.raises(ConfigError, match="disabled"):
        plan_providers(everything_off)


def test_api_key_env_feeds_the_scrapers_credential(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, '[providers.gcp]\napi_key_env = "MY_GCP"\n'
                                             '[providers.verda]\ncredentials_env = { VERDA_CLIENT_ID = "MY_ID" }\n'))
    assert settings.provider_env("gcp", {"MY_GCP": "k1"})["GCP_API_KEY"] == "k1"
    assert settings.provider_env("verda", {"MY_ID": "i"})["VERDA_CLIENT_ID"] == "i"
    assert "GCP_API_KEY" not in settings.provider_env("gcp", {})


def test_settings_without_sources_are_those_read_through_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no config file and no variable to read, ``load_settings`` validates the explicit
    arguments with the model alone (no pydantic-settings); through the sources the same
    arguments give the same settings."""
    from tracker.config.settings import _environment_may_set, _from_sources

    assert not _environment_may_set()
    plain = load_settings(database="sqlite:///x.db")
    assert type(plain) is Settings
    read = _from_sources()(database="sqlite:///x.db")
    assert isinstance(read, Settings) and read.model_dump() == plain.model_dump()
    assert read.model_fields_set == plain.model_fields_set == {"database"}


@pytest.mark.parametrize("name", ["GPU_TRACKER_DEFAULT_INTERVAL", "gpu_tracker_default_interval"])
def test_a_settings_variable_is_read_whatever_its_case(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "30m")
    assert load_settings().default_interval == 1800


@pytest.mark.parametrize("name", ["GPU_TRACKER_DB", "DATABASE", "database"])
def test_every_name_the_database_is_read_by_is_still_read(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The field's aliases are environment names too (pydantic-settings reads them unprefixed)."""
    monkeypatch.delenv("DATABASE", raising=False)
    monkeypatch.setenv(name, "sqlite:////tmp/from-env.db")
    assert load_settings().database == "sqlite:////tmp/from-env.db"


def test_an_invalid_variable_is_the_same_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_TRACKER_DEFAULT_INTERVAL", "0.01")
    with pytest.raises(ConfigError, match=r"^default_interval: must be at least 1s"):
        load_settings()


def test_a_reading_command_with_nothing_to_read_loads_no_pydantic_settings(tmp_path: Path) -> None:
    """``prices`` on a store, with no config file and no settings variable: the settings are
    validated by the model alone; pydantic-settings (asyncio, its cloud and dotenv sources) is
    not imported. With a variable to read, it is, and the variable counts."""
    import os
    import subprocess
    import sys

    store = f"sqlite:///{tmp_path / 'empty.db'}"
    probe = ("import contextlib, io, sys\nfrom tracker.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
             f"    main(['--db', {store!r}, 'prices', '--format', 'json'])\n"
             "print('pydantic_settings' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("GPU_TRACKER_") and k.upper() != "DATABASE"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # no default config file
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-1] == "False", out.stderr
    env["GPU_TRACKER_DEFAULT_INTERVAL"] = "30m"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-1] == "True", out.stderr

"""Careless or hostile input is a clear one-line error, never ``unexpected error``: a 20-digit
``--limit``, deeply nested TOML, a 10 MB CSV field, a store written by a newer version, absurd
``--rearm`` and ``tco --years``; a zero price is quarantined with its reason; a printed minus
sign is kept; a literal secret in the config file is warned about; a stuck provider is cut at a
default real providers never reach; a damaged SQLite store is reported by the dashboard."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db import reads
from db.models import Quarantine
from db.reader import in_transaction
from tests.fakes import make_fake, routing_transport
from tests.reliability.service_procs import isolate_config, one_line, run_main
from tracker.config.settings import Settings, load_settings
from tracker.errors import ConfigError
from tracker.pipeline.collect import collect

SECRET = "hunter2-Pa55word-0451"


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_config(monkeypatch, tmp_path)


def test_a_20_digit_limit_is_a_usage_error(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "--db", db_url, "alerts", "history", "-n", "9" * 20)
    assert code == 2 and "--limit" in err and "unexpected" not in err, err


@pytest.mark.parametrize("depth", [900, 100_000])
def test_deeply_nested_toml_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_settings(path)
    code, out, err = run_main(capsys, "--config", str(path), "config", "check")
    assert code != 0 and "nested too deeply" in out + err and "unexpected" not in out + err


def test_a_huge_config_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_text("# " + "x" * (2 << 20) + "\n")
    with pytest.raises(ConfigError, match="larger than 1024 KiB"):
        load_settings(path)


def test_a_10_mb_csv_field_is_one_line_and_imports_nothing(engine: Engine, db_url: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("provider,sku,kind,gpu_raw,gpu_count,price_per_hour,currency,observed_at\n"
                    "runpod,a1,on_demand,H100 SXM,1,2.5,USD,2025-06-01T12:00:00+00:00\n"
                    f"runpod,{'x' * (10 << 20)},on_demand,H100 SXM,1,2.5,USD,2025-06-01T12:00:00+00:00\n")
    code, out, err = run_main(capsys, "--db", db_url, "import", str(path))
    line = one_line(err)
    assert code == 2 and "prices.csv" in line and "longer than 128 KiB" in line and "after line 2" in line, line
    code, out, _ = run_main(capsys, "--db", db_url, "prices", "--format", "json")
    assert code == 0 and out.strip() == "[]"


def test_a_store_from_a_newer_version_is_named(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    [res] = collect(engine, Settings(database=db_url), ["lambda"], replay=True)
    assert res.status == "ok"
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'ffff9999newer'"))
    for command in (["prices"], ["alerts", "list"], ["providers"], ["history", "--gpu", "H100"]):
        code, out, err = run_main(capsys, "--db", db_url, *command)
        line = one_line(err)
        assert code == 2 and "'ffff9999newer'" in line and "newer version" in line, (command, line)


def test_absurd_rearm_and_years_are_refused(engine: Engine, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    for rearm in ("1e308", "1e7", "250%", "nan"):
        code, out, err = run_main(capsys, "--db", db_url, "alerts", "add", "r", "--gpu", "H100", "--below", "2",
                                  "--rearm", rearm)
        assert code == 2 and "rearm" in one_line(err), (rearm, err)
    code, out, err = run_main(capsys, "--db", db_url, "alerts", "add", "r", "--gpu", "H100", "--below", "2",
                              "--rearm", "5%")
    assert code == 0, err
    for option, value in (("--years", "1e308"), ("--purchase", "1e308"), ("--rent", "1e308"), ("--kwh", "1e308")):
        code, out, err = run_main(capsys, "--db", db_url, "tco", "--gpu", "H100-SXM", "--rent", "2", option, value)
        line = one_line(err)
        assert code == 2 and option in line and "Infinity" not in out, (option, line)


def test_zero_prices_are_quarantined_with_a_reason(engine: Engine) -> None:
    """RunPod: a cloud that offers the GPU at 0; Jarvislabs: an on-demand price of 0."""
    from scrapers.jarvislabs import JarvislabsScraper
    from scrapers.runpod import RunpodScraper

    runpod = {"data": {"gpuTypes": [
        {"id": "NVIDIA H100 80GB HBM3", "displayName": "H100 SXM", "memoryInGb": 80, "secureCloud": True,
         "communityCloud": True, "securePrice": 0, "communityPrice": 2.2},
    ]}}
    jarvis = {"server_meta": [
        {"gpu_type": "H100", "region": "india-01", "price_per_hour": 0, "spot_price": 0, "num_gpus": 8},
        {"gpu_type": "A100", "region": "india-01", "price_per_hour": 1.29, "spot_price": 0, "num_gpus": 8},
    ]}

    class Runpod(RunpodScraper):
        async def fetch(self, http):  # type: ignore[no-untyped-def]
            return runpod

    class Jarvis(JarvislabsScraper):
        credentials = ()

        async def fetch(self, http):  # type: ignore[no-untyped-def]
            return jarvis

    results = collect(engine, Settings(), classes=[Runpod, Jarvis],
                      transport_factory=routing_transport({"runpod": {}, "jarvislabs": {}}))
    assert {r.provider: r.status for r in results} == {"runpod": "ok", "jarvislabs": "ok"}
    with Session(engine) as s:
        reasons = {(q.provider, q.sku): q.reason for q in s.exec(select(Quarantine)).all()}
    assert set(reasons) == {("runpod", "NVIDIA H100 80GB HBM3:secure"), ("jarvislabs", "H100")}
    assert all("not a positive number" in r for r in reasons.values()), reasons


@pytest.mark.parametrize(("printed", "amount"), [
    ("-$2.50", -2.5), ("$-2.50", -2.5), ("$ -2.50", -2.5), ("-2.50", -2.5), ("\u2212$1.20", -1.2), ("USD -3", -3.0),
    ("(-$2.00)", -2.0), ("$2.50", 2.5), ("$1.99 - 2.49/hr", 1.99), ("A100-$2", 2.0),
])
def test_parse_money_keeps_a_minus_sign(printed: str, amount: float) -> None:
    from scrapers.html import parse_money, read_money

    money = parse_money(printed)
    assert money is not None and money.amount == amount
    _, bad = read_money(printed, "'price' of 'row'")
    assert bool(bad) == (amount < 0)


def test_config_check_warns_about_a_literal_secret_in_the_file(tmp_path: Path) -> None:
    from tracker.config.check import check_file

    path = tmp_path / "config.toml"
    path.write_text('[[alerts]]\nname = "a"\ngpu = "H100"\nbelow = 2.0\n'
                    f'notify = ["mailto://alerts:{SECRET}@example.com", "env:ALERT_HOOK"]\n')
    report = check_file(path, environ={})
    [warning] = [w for w in report.warnings if "literal secret" in w]
    assert report.ok and "alerts[0] (a): notify[0]" in warning and "env:VAR" in warning and SECRET not in warning


def test_the_fetch_limit_is_one_real_providers_never_reach(sqlite_engine: Engine) -> None:
    import asyncio

    settings = Settings()
    assert settings.http.provider_timeout_s == 180
    assert settings.fetch_timeout_s("runpod", 1 << 30) == 180
    assert settings.fetch_timeout_s("aws", 6 << 30) == 384  # a 6 GiB offer file at 16 MiB/s

    class Stuck(make_fake("loris")):  # type: ignore[misc]
        async def fetch(self, http):  # type: ignore[no-untyped-def]
            await asyncio.sleep(30)

    own = Settings(providers={"loris": {"timeout_s": 1}})
    assert own.fetch_timeout_s("loris", 1 << 20) == 1
    [result] = collect(sqlite_engine, own, classes=[Stuck], transport_factory=routing_transport({"loris": {}}))
    assert result.status == "failed" and "longer than 1s" in (result.error_message or "")
    assert "providers.loris.timeout_s" in (result.error_message or "")


def test_the_dashboard_reports_a_damaged_sqlite_store(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tests.reliability.test_service_store import corrupt, filled_sqlite
    from tracker.web import create_app

    db = filled_sqlite(tmp_path / "tracker.db")
    url = f"sqlite:///{db}"
    from db.engine import make_engine

    sound = make_engine(url)
    with TestClient(create_app(Settings(database=url), sound), base_url="http://127.0.0.1") as client:
        assert client.get("/healthz").status_code == 200
    sound.dispose()
    corrupt(db)
    engine = make_engine(url)
    with caplog.at_level(logging.WARNING, logger="tracker.web"):
        app = create_app(Settings(database=url), engine)
    assert any("integrity quick check" in r.getMessage() and "db check" in r.getMessage() for r in caplog.records)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        r = client.get("/healthz")
    engine.dispose()
    assert r.status_code == 503 and "damaged" in r.json()["database"]


def test_a_huge_jsonl_line_is_refused_by_number_without_reading_it_whole(engine: Engine, tmp_path: Path) -> None:
    """A tugot17 summary file whose third line is 20 MB: refused naming the line after reading
    1 MiB of it, nothing imported."""
    import resource

    from tracker.pipeline.imports import import_files

    good = ('{"timestamp": "2025-06-01T12:00:00Z", "gpu_type": "H100_80GB", "socket_type": "SXM5", '
            '"by_provider": {"lambda": {"min": 2.49}}}\n')
    path = tmp_path / "summary.jsonl"
    with path.open("w") as fh:
        fh.write(good * 2)
        fh.write('{"gpu_type": "' + "x" * (20 << 20) + '", "by_provider": {}}\n')
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ConfigError, match=r"summary.jsonl line 3: longer than 1024 KiB"):
        import_files(engine, [path], fmt="tugot17")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 40 * 1024  # KiB: not the 20 MB line x copies
    with Session(engine) as s:
        assert s.exec(select(Quarantine)).all() == []

    with Session(engine) as s:
        assert reads.latest_prices(in_transaction(s.connection())) == []

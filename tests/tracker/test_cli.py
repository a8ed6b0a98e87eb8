"""The CLI end to end: replay scrape, prices, providers, info, errors, help on every command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from scrapers.registry import get_scraper
from tracker.catalog.specs import family_of
from tracker.cli import app, expand_replay_dir
from tracker.pipeline.replay import BUNDLED_RECORDINGS

runner = CliRunner()
ROOT = Path(__file__).parent.parent.parent


def cli(db: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, ["--db", db, *expand_replay_dir(list(args))], env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout  # stderr (log lines) is kept apart from the data


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store filled once from every bundled recording (real ones and handmade samples)."""
    db = f"sqlite:///{tmp_path_factory.mktemp('cli') / 'tracker.db'}"
    code, out = cli(db, "scrape", "--replay", "--format", "json")
    summary = json.loads(out)
    assert code == 0, summary
    assert {r["status"] for r in summary} == {"ok"}, summary
    return db


def test_replay_fills_the_store_and_prices_lists_h100s(replayed: str) -> None:
    code, out = cli(replayed, "prices", "--gpu", "H100", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert {"provider", "gpu", "gpu_raw", "gpu_count", "kind", "region", "price_per_hour", "price_per_gpu_hour",
            "observed_at"} <= set(rows[0])
    assert len({r["provider"] for r in rows}) >= 3
    assert {family_of(r["gpu"]) for r in rows} == {"H100"}
    per_gpu = [r["price_per_gpu_hour"] for r in rows]
    assert per_gpu == sorted(per_gpu)
    for r in rows:
        assert r["price_per_gpu_hour"] == pytest.approx(r["price_per_hour"] / r["gpu_count"], rel=1e-6)


def test_exact_canonical_id_and_kind_filters(replayed: str) -> None:
    _, out = cli(replayed, "prices", "--gpu", "H100-SXM", "--kind", "on-demand", "--format", "json")
    rows = json.loads(out)
    assert rows and {r["gpu"] for r in rows} == {"H100-SXM"} and {r["kind"] for r in rows} == {"on_demand"}


def test_csv_output_has_a_header(replayed: str) -> None:
    _, out = cli(replayed, "prices", "--limit", "3", "--format", "csv")
    lines = out.strip().splitlines()
    assert lines[0].startswith("provider,gpu,gpu_raw,gpu_count") and len(lines) == 4


def test_second_replay_changes_nothing(replayed: str) -> None:
    code, out = cli(replayed, "scrape", "--replay", "--format", "json")
    assert code == 0
    assert all(r["changed"] == 0 and r["new_offers"] == 0 for r in json.loads(out)), [r for r in json.loads(out) if r["changed"] or r["new_offers"]]


def test_replay_from_a_user_directory(tmp_path: Path) -> None:
    provider = sorted(p.name for p in BUNDLED_RECORDINGS.iterdir() if (p / "manifest.json").exists())[0]
    shutil.copytree(BUNDLED_RECORDINGS / provider, tmp_path / "rec" / provider)
    code, out = cli(f"sqlite:///{tmp_path / 'u.db'}", "scrape", "--replay", str(tmp_path / "rec"), "--format", "json")
    assert code == 0 and [r["provider"] for r in json.loads(out)] == [provider]


def test_providers_says_which_credentials_are_missing(tmp_path: Path) -> None:
    code, out = cli(f"sqlite:///{tmp_path / 'p.db'}", "providers", "--format", "json", env={"GCP_API_KEY": ""})
    rows = {r["provider"]: r for r in json.loads(out)}
    assert code == 0
    assert rows["gcp"]["note"] == "set GCP_API_KEY to enable" and rows["gcp"]["credentials_missing"] is True


def test_info_shows_the_database_and_counts(replayed: str) -> None:
    _, out = cli(replayed, "info", "--format", "json")
    [data] = json.loads(out)
    assert data["database"] == replayed and data["rows_offer"] > 0 and data["rows_scrape_run"] > 0


def test_errors_are_one_line_with_a_nonzero_exit(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tracker", "--db", f"sqlite:///{tmp_path / 'e.db'}", "prices", "--gpu", "NoSuchGPU"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: --gpu: 'NoSuchGPU' matches no GPU")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def all_commands() -> list[tuple[str, ...]]:
    root = typer.main.get_command(app)

    def walk(cmd: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        out = [path] if path else []
        if hasattr(cmd, "commands"):  # a group (Typer vendors its own click)
            for name, sub in cmd.commands.items():
                out += walk(sub, (*path, name))
        return out

    return walk(root, ())


@pytest.mark.parametrize("path", all_commands(), ids=lambda p: " ".join(p))
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    assert (cmd.help or "").strip(), f"`{' '.join(path)}` has no help text"


@pytest.mark.parametrize("path", all_commands(), ids=lambda p: " ".join(p))
def test_every_command_is_documented_in_the_readme(path: tuple[str, ...]) -> None:
    readme = (ROOT / "README.md").read_text()
    assert f"gpu-tracker {' '.join(path)}" in readme, f"README.md does not mention `gpu-tracker {' '.join(path)}`"


def test_replayed_h100s_come_from_the_api_providers(replayed: str) -> None:
    """Issue 4: H100 offers from the API providers' real recordings (AWS has no real p5 recording yet)."""
    _, out = cli(replayed, "prices", "--gpu", "H100", "--format", "json")
    providers = {r["provider"] for r in json.loads(out)}
    assert {"vastai", "runpod", "azure", "gcp", "oci"} <= providers


#: The page providers still collected (a retired one is never replayed).
PAGE_PROVIDERS = tuple(p for p in ("lambda", "modal", "datacrunch", "coreweave", "nebius", "crusoe", "paperspace")
                       if get_scraper(p).retired is None)


def test_a_layout_changed_page_fails_alone(tmp_path: Path) -> None:
    """Issue 5: a page whose price table is gone fails that provider's run with a clear
    reason, stores nothing for it, and the other page providers' runs succeed."""
    from bs4 import BeautifulSoup

    rec = tmp_path / "rec"
    for name in PAGE_PROVIDERS:
        shutil.copytree(BUNDLED_RECORDINGS / name, rec / name)
    (page,) = (rec / "nebius").glob("*.html")  # the replayed price page, whatever its file is named
    soup = BeautifulSoup(page.read_text(), "lxml")
    tables = soup.select("div.pc-highlight-table-block__table")  # the price grid (Nebius draws it with divs)
    assert tables
    for table in tables:
        table.decompose()
    page.write_text(str(soup))
    db = f"sqlite:///{tmp_path / 'l.db'}"
    code, out = cli(db, "scrape", "--replay", str(rec), "--format", "json")
    by = {r["provider"]: r for r in json.loads(out)}
    assert code == 1
    assert by["nebius"]["status"] == "failed"
    assert by["nebius"]["error"].startswith("ParseError: nebius: layout changed")
    assert all(by[p]["status"] == "ok" and by[p]["offers"] > 0 for p in PAGE_PROVIDERS if p != "nebius")
    _, prices_out = cli(db, "prices", "--provider", "nebius", "--format", "json")
    assert json.loads(prices_out) == []


def test_prices_say_which_rows_are_replayed_and_from_when(replayed: str) -> None:
    _, out = cli(replayed, "prices", "--provider", "oci", "--format", "json")
    rows = json.loads(out)
    assert rows and all((r["replay"], r["recorded"], r["fixture"]) == (True, "2026-10-01", "recording") for r in rows)
    assert all(r["observed_at"].startswith("2026-10-01T00:00:00") for r in rows)  # the recording's date, not now
    from tests.tracker.test_replay import handmade_provider

    _, table = cli(replayed, "prices", "--provider", "oci", "--provider", handmade_provider(), env={"COLUMNS": "250"})
    assert "replay 2026-10-01" in table and "replay (handmade)" in table

"""``import skypilot-git``: a small git repository built here from real vms.csv rows
(tests/fixtures/skypilot), one commit per snapshot, read back commit by commit."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from db.models import ScrapeRun
from db.spans import epoch
from tests.conftest import fixture_path
from tracker.cli import app
from tracker.errors import ConfigError
from tracker.pipeline.imports import import_files

LAMBDA = fixture_path("skypilot/lambda_vms_v7_11580132_excerpt.csv").read_text().splitlines()
AWS = fixture_path("skypilot/aws_vms_v7_001367d2_excerpt.csv").read_text()
C1, C2, C3, C_AWS = (datetime(2025, 1, d, 12, tzinfo=UTC) for d in (1, 2, 5, 3))


def lambda_rows(*types: str) -> str:
    return "\n".join([LAMBDA[0], *(r for r in LAMBDA[1:] if r.split(",")[0] in types)]) + "\n"


def commit(repo: Path, when: datetime, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    env = {**os.environ, "GIT_AUTHOR_DATE": when.isoformat(), "GIT_COMMITTER_DATE": when.isoformat(),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", f"catalog {when:%F}"], check=True, env=env)


@pytest.fixture
def catalog_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "skypilot-catalog"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    lam = "catalogs/v7/lambda/vms.csv"
    commit(repo, C1, {lam: lambda_rows("cpu_4x_general", "gpu_8x_v100", "gpu_1x_a10", "gpu_1x_h100_pcie")})
    commit(repo, C2, {lam: lambda_rows("cpu_4x_general", "gpu_8x_v100", "gpu_1x_h100_pcie")})
    commit(repo, C_AWS, {"catalogs/v7/aws/vms.csv": AWS, "README.md": "not a catalog\n"})
    commit(repo, C3, {lam: lambda_rows("cpu_4x_general", "gpu_8x_v100", "gpu_1x_a10", "gpu_1x_h100_pcie",
                                       "gpu_1x_h100_sxm5")})
    return repo


def intervals(engine: Engine, provider: str) -> list[tuple[str, str, float, int, int, int | None]]:
    with Session(engine) as s:
        rows = s.connection().execute(text(
            "SELECT o.sku, o.region, i.price_per_hour, i.first_seen, i.last_seen, i.ends_at "
            "FROM price_interval i "
            "JOIN offer o ON o.id = i.offer_id WHERE o.provider = :p AND o.kind = 'on_demand'"), {"p": provider}).all()
    return sorted((r[0], r[1], float(r[2]), int(r[3]), int(r[4]), None if r[5] is None else int(r[5])) for r in rows)


def test_every_commit_is_a_snapshot_at_its_time(engine: Engine, catalog_repo: Path) -> None:
    result = import_files(engine, [catalog_repo], fmt="skypilot-git", clouds=["lambda", "aws"])
    assert result.format == "skypilot-git" and not result.bad_rows and result.providers == ["aws", "lambda"]
    c1, c2, c3 = epoch(C1), epoch(C2), epoch(C3)
    lam = intervals(engine, "lambda")
    # V100 and the PCIe H100 are in every commit: one interval each from the first commit to the last
    assert ("gpu_8x_v100", "us-east-1", 4.4, c1, c3, None) in lam
    assert ("gpu_1x_h100_pcie", "us-east-1", 2.49, c1, c3, None) in lam
    # the A10 left with the second commit (its interval ends there) and came back with the third
    assert [r for r in lam if r[0] == "gpu_1x_a10"] == [("gpu_1x_a10", "us-east-1", 0.75, c1, c1, c2),
                                                          ("gpu_1x_a10", "us-east-1", 0.75, c3, c3, None)]
    assert {r[1] for r in lam if r[0] == "gpu_1x_h100_sxm5"} == {"us-east-1", "us-west-1"}
    with Session(engine) as s:
        run = s.exec(select(ScrapeRun).where(ScrapeRun.provider == "lambda")).one()
    # new: V100, A10, H100 PCIe, then the two SXM5 regions; the A10 returned; nothing changed price
    assert (run.new_offers, run.returned_offers, run.prices_changed) == (5, 1, 0)
    aws = intervals(engine, "aws")
    assert aws and {r[3] for r in aws} == {epoch(C_AWS)}
    # p3.2xlarge in us-east-1: the cheapest of its zones' on-demand rows, read from the file
    expected = min(float(r.split(",")[-4]) for r in AWS.splitlines()
                   if r.startswith("p3.2xlarge,") and ",us-east-1," in r)
    assert [r[2] for r in aws if r[:2] == ("p3.2xlarge", "us-east-1")] == [expected]


def test_importing_the_history_again_changes_nothing(engine: Engine, catalog_repo: Path) -> None:
    import_files(engine, [catalog_repo], fmt="skypilot-git", clouds=["lambda"])
    before = intervals(engine, "lambda")
    again = import_files(engine, [catalog_repo], fmt="skypilot-git", clouds=["lambda"])
    assert again.stored == 0 and intervals(engine, "lambda") == before


def test_a_commit_dated_in_the_future_is_refused(engine: Engine, catalog_repo: Path) -> None:
    commit(catalog_repo, datetime(2099, 1, 1, tzinfo=UTC), {"catalogs/v7/lambda/vms.csv": lambda_rows("gpu_1x_a10")})
    result = import_files(engine, [catalog_repo], fmt="skypilot-git", clouds=["lambda"])
    assert len(result.bad_rows) == 1 and "in the future" in result.bad_rows[0].reason
    assert max(r[4] for r in intervals(engine, "lambda")) == epoch(C3)


def test_clear_errors(engine: Engine, catalog_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--cloud"):
        import_files(engine, [catalog_repo], fmt="skypilot-git")
    with pytest.raises(ConfigError, match="no commit"):
        import_files(engine, [catalog_repo], fmt="skypilot-git", clouds=["nosuchcloud"])
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ConfigError, match="not a git clone"):
        import_files(engine, [plain], fmt="skypilot-git", clouds=["lambda"])


def test_the_command(sqlite_engine: Engine, catalog_repo: Path) -> None:
    url = sqlite_engine.url.render_as_string(hide_password=False)
    res = CliRunner().invoke(app, ["--db", url, "import", "skypilot-git", str(catalog_repo), "--cloud", "lambda,aws",
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    assert '"format": "skypilot-git"' in res.stdout and '"providers": "aws, lambda"' in res.stdout

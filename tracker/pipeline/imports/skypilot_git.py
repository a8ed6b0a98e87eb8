"""Years of history from a local clone of skypilot-org/skypilot-catalog.

Every commit that changed ``catalogs/<version>/<cloud>/vms.csv`` is one snapshot of that
cloud at the commit's time (committer date, UTC): the file is read as it was in that commit
with the SkyPilot ``vms.csv`` reader (``own_csv``: CPU rows and TPUs skipped, zones merged
into the cheapest, form factors taken from the instance type). The series is the cloud's
catalog: an instance type missing from a commit's file is no longer listed. A commit is made
when the catalog changes, so a file stands until the next commit that touches it: by default
no gap is assumed between commits (``--max-gap`` sets one). Cloud names go through the alias
table (``lambda``, ``runpod``, ``aws``, ``do`` -> ``digitalocean`` ...). Git is run as a
subprocess (read-only: ``git log`` and ``git show``), each call with a time limit.
"""

from __future__ import annotations

import csv
import io
import subprocess
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tracker.errors import ConfigError
from tracker.pipeline.imports import SKYPILOT_GIT
from tracker.pipeline.imports.aliases import provider_name
from tracker.pipeline.imports.base import (
    BadRow,
    ImportResult,
    Progress,
    Snapshot,
    check_future,
    collection,
)
from tracker.pipeline.imports.own_csv import SKYPILOT_REQUIRED, read_skypilot_rows

NAME = SKYPILOT_GIT
DESCRIPTION = "a local git clone of skypilot-org/skypilot-catalog: every commit of catalogs/<version>/<cloud>/vms.csv"
CADENCE = timedelta(days=1)
MAX_GAP: timedelta | None = None
GIT_TIMEOUT_S = 120


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise ConfigError("import skypilot-git: git is not installed") from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"import skypilot-git: git {args[0]} took longer than {GIT_TIMEOUT_S}s") from None
    if done.returncode != 0:
        first = (done.stderr or done.stdout).strip().splitlines()
        raise ConfigError(f"import skypilot-git: {repo} is not a readable git repository"
                          f" ({first[0] if first else 'git failed'})")
    return done.stdout


def versions(repo: Path) -> list[str]:
    """Catalog versions present at HEAD (``v5``, ``v6``, ``v7`` ...), oldest first."""
    out = _git(repo, "ls-tree", "--name-only", "HEAD", "catalogs/")
    names = [line.split("/")[-1] for line in out.splitlines() if line.strip()]
    return sorted((n for n in names if n.startswith("v") and n[1:].isdigit()), key=lambda n: int(n[1:]))


def commits(repo: Path, path: str) -> list[tuple[str, datetime]]:
    """(sha, commit time) of every commit that changed ``path``, oldest first."""
    out = _git(repo, "log", "--format=%H %ct", "--reverse", "--", path)
    rows = []
    for line in out.splitlines():
        sha, _, ts = line.strip().partition(" ")
        if sha and ts.isdigit():
            rows.append((sha, datetime.fromtimestamp(int(ts), UTC)))
    return rows


def read(repo: Path, result: ImportResult, *, clouds: Sequence[str], version: str | None = None,
         progress: Progress | None = None) -> Iterator[Snapshot]:
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        raise ConfigError(f"import skypilot-git: {repo} is not a git clone (no .git)")
    if not clouds:
        raise ConfigError("import skypilot-git: say which clouds to read with --cloud (e.g. --cloud lambda,runpod,aws)")
    if version is None:
        found = versions(repo)
        if not found:
            raise ConfigError(f"import skypilot-git: {repo} has no catalogs/v<N>/ folder at HEAD")
        version = found[-1]
    plan = [(cloud, f"catalogs/{version}/{cloud}/vms.csv") for cloud in clouds]
    history = [(cloud, path, commits(repo, path)) for cloud, path in plan]
    missing = [path for _c, path, found in history if not found]
    if len(missing) == len(history):
        raise ConfigError(f"import skypilot-git: no commit of {', '.join(missing)} in {repo}")
    for path in missing:
        result.bad(BadRow(0, "no commit touches this file", path))
    total = sum(len(found) for _c, _p, found in history)
    done = 0
    for cloud, path, found in history:
        provider = provider_name(cloud)
        series = f"skypilot:{provider}"
        for sha, at in found:
            done += 1
            if progress is not None:
                progress(done, total)
            where = f"{sha[:10]}:{path}"
            try:
                check_future(at, "commit time")
            except ValueError as exc:
                result.bad(BadRow(0, str(exc), where))
                continue
            try:
                text = _git(repo, "show", f"{sha}:{path}")
            except ConfigError:
                # the commit deleted the file: the cloud's catalog is empty at that time
                yield Snapshot("", series, at, [], 0, where)
                continue
            reader = csv.DictReader(io.StringIO(text))
            header = [h.strip() for h in (reader.fieldnames or [])]
            reader.fieldnames = header
            lacking = [c for c in sorted(SKYPILOT_REQUIRED) if c not in header]
            if lacking:
                result.bad(BadRow(1, f"header has no {', '.join(lacking)} column", where))
                continue
            yield from collection(series, at, read_skypilot_rows(reader, result, provider, where), 0, where)

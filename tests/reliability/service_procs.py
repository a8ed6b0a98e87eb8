"""Real ``gpu-tracker`` processes for the service tests: start, read their output, wait, stop.

``Proc`` and ``wait_for`` are the scheduler process tests' own; this adds a CLI runner, a
free loopback port and a server that is up once ``/healthz`` answers.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import run_main
from tests.tracker.test_run_process import ROOT, Proc, wait_for

__all__ = ["ROOT", "Proc", "cli", "cli_env", "free_port", "run_main", "serve", "start_cli", "wait_for"]


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without any ``GPU_TRACKER_*`` setting, the repo importable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TRACKER_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra or {})
    return env


def cli(*args: str, env: Mapping[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``gpu-tracker ARGS`` to completion, output captured."""
    return subprocess.run([sys.executable, "-m", "tracker", *args], cwd=ROOT, env=cli_env(env), capture_output=True,
                          text=True, timeout=timeout, check=False)


def start_cli(log: Path, *args: str, env: Mapping[str, str] | None = None) -> Proc:
    """``gpu-tracker ARGS`` in the background, stdout and stderr into ``log``."""
    handle = log.open("wb")
    popen = subprocess.Popen([sys.executable, "-m", "tracker", *args], cwd=ROOT, env=cli_env(env), stdout=handle,
                             stderr=subprocess.STDOUT)
    return Proc(popen, log, handle)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(tmp_path: Path, db_url: str, *args: str, env: Mapping[str, str] | None = None,
          name: str = "serve") -> Iterator[tuple[str, Proc]]:
    """``gpu-tracker serve`` on a free loopback port; yields its base URL once /healthz answers."""
    port = free_port()
    proc = start_cli(tmp_path / f"{name}.log", "--db", db_url, "serve", "--port", str(port), *args, env=env)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, 30, "the server to answer /healthz", (proc,))
        yield base, proc
    finally:
        if proc.popen.poll() is None:
            proc.popen.terminate()
            try:
                proc.popen.wait(10)
            except subprocess.TimeoutExpired:
                pass
        proc.close()


def isolate_config(monkeypatch: Any, tmp_path: Path) -> None:
    """No ``GPU_TRACKER_*`` database or config from the developer's shell, and no default config file."""
    for key in ("GPU_TRACKER_CONFIG", "GPU_TRACKER_DB", "GPU_TRACKER_DEFAULT_INTERVAL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr("tracker.config.settings.default_config_path", lambda: tmp_path / "absent.toml")


def one_line(err: str) -> str:
    """The one line an error printed (fails when there are more, or a traceback)."""
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]

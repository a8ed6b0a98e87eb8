"""What the API benchmarks share to start a real ``gpu-tracker serve`` on 127.0.0.1: a free
port, the environment (no outside ``GPU_TRACKER_`` settings, a bench-only API token)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A token for the bench's own server only (the dashboard asks for one beyond loopback).
TOKEN = "bench-api-token-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TRACKER_")}
    e["PYTHONPATH"] = str(ROOT)
    e["GPU_TRACKER_API_TOKEN"] = TOKEN
    return e

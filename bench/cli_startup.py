"""Benchmark: how long `gpu-tracker` takes as a whole process, against `python -c pass`.

Fills a temporary SQLite store from the bundled real recordings (`scrape --replay`), then
times, as separate processes and each several times, `python -c pass` (the baseline: the
interpreter alone), `gpu-tracker --help`, `gpu-tracker prices --gpu H100 --limit 5` and the
other reading commands that start without SQLAlchemy or pandas (`providers`, `value`, `trends`,
`alerts list`). Prints the median and fastest seconds and the ratio to the baseline, and merges
the medians into ``bench/results.json`` as ``cli_help_s``, ``cli_prices_s``, ``cli_providers_s``,
``cli_value_s``, ``cli_trends_s`` and ``cli_alerts_list_s`` (with ``cli_pass_s`` and the
ratios). Targets on an idle machine: --help <= 0.3 s, each reading command <= 0.6 s; on a busy
one, read the ratios (the baseline slows down alike).

    python bench/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _results import record  # noqa: E402


def command() -> list[str]:
    """The installed console script when there is one (what users run), else ``python -m tracker``."""
    script = Path(sys.executable).parent / "gpu-tracker"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "tracker"]


def timed(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="processes per command (median reported)")
    args = ap.parse_args()
    cli = command()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TRACKER_")}
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'replay.db'}"
        subprocess.run([*cli, "--db", db, "scrape", "--replay", "--format", "json"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        cases = {
            "pass": [sys.executable, "-c", "pass"],
            "help": [*cli, "--help"],
            "prices": [*cli, "--db", db, "prices", "--gpu", "H100", "--limit", "5"],
            "providers": [*cli, "--db", db, "providers"],
            "value": [*cli, "--db", db, "value"],
            "trends": [*cli, "--db", db, "trends"],
            "alerts_list": [*cli, "--db", db, "alerts", "list"],
        }
        timed(cases["prices"], 1, env)  # warm the file cache and the bytecode
        times = {name: timed(argv, args.runs, env) for name, argv in cases.items()}
    medians = {name: statistics.median(t) for name, t in times.items()}
    base = medians["pass"]
    for name, t in times.items():
        print(f"{name:11s} median {medians[name]:.3f} s  fastest {min(t):.3f} s  x{medians[name] / base:.1f} of python -c pass")
    figures = {"cli_pass_s": round(base, 4)}
    for name in cases:
        if name != "pass":
            figures[f"cli_{name}_s"] = round(medians[name], 4)
            figures[f"cli_{name}_ratio"] = round(medians[name] / base, 2)
    figures["cli_load_average_1m"] = round(os.getloadavg()[0], 2)
    figures["cli_cores"] = os.cpu_count() or 0
    record(figures)
    print("recorded in bench/results.json:", figures)


if __name__ == "__main__":
    main()

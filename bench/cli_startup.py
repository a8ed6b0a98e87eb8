"""Benchmark: how long `gpu-tracker` takes as a whole process, against `python -c pass`.

Fills a temporary SQLite store from the bundled real recordings (`scrape --replay`), then
times, as separate processes and each several times, `python -c pass` (the baseline: the
interpreter alone), `gpu-tracker --help`, `gpu-tracker prices --gpu H100 --limit 5` and the
other reading commands that start without SQLAlchemy or pandas (`providers`, `value`, `trends`,
`alerts list`). Prints the median and fastest seconds and the ratio to the baseline, and merges
the medians into ``bench/results.json`` as ``cli_help_s``, ``cli_prices_s``, ``cli_providers_s``,
``cli_value_s``, ``trends_cli_s`` and ``cli_alerts_list_s`` (with ``cli_pass_s`` and the
ratios). With ``TRACKER_BENCH_DATABASE_URL`` (PostgreSQL) the reading commands are timed again on
a store replayed into a database of the bench's own there (the same keys ending ``_postgres``);
without it they are skipped, and the output says so. Targets on an idle machine: --help <= 0.3 s,
each reading command <= 0.6 s; on a busy
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
from _results import machine, record  # noqa: E402
from synthetic_year import postgres_db, postgres_url  # noqa: E402


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


#: The reading commands timed on a store (``--db`` is put before each).
READS = {
    "prices": ["prices", "--gpu", "H100", "--limit", "5"],
    "providers": ["providers"],
    "value": ["value"],
    "trends": ["trends"],
    "alerts_list": ["alerts", "list"],
}


def key(name: str) -> str:
    """The results key of a command's median: ``cli_<name>_s``, but ``trends_cli_s`` beside
    ``history_cli_s`` (``history_year.py``), the names the targets use."""
    return "trends_cli_s" if name == "trends" else f"cli_{name}_s"


def reads(cli: list[str], db: str, runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    """Each reading command's seconds on the store at ``db``, filled first by ``scrape --replay``."""
    subprocess.run([*cli, "--db", db, "scrape", "--replay", "--format", "json"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    timed([*cli, "--db", db, *READS["prices"]], 1, env)  # warm the file cache and the bytecode
    return {name: timed([*cli, "--db", db, *argv], runs, env) for name, argv in READS.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="processes per command (median reported)")
    args = ap.parse_args()
    cli = command()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TRACKER_")}
    times = {"pass": timed([sys.executable, "-c", "pass"], args.runs, env), "help": timed([*cli, "--help"], args.runs, env)}
    with tempfile.TemporaryDirectory() as tmp:
        times |= reads(cli, f"sqlite:///{Path(tmp) / 'replay.db'}", args.runs, env)
    medians = {name: statistics.median(t) for name, t in times.items()}
    base = medians["pass"]
    for name, t in times.items():
        print(f"{name:11s} median {medians[name]:.3f} s  fastest {min(t):.3f} s  x{medians[name] / base:.1f} of python -c pass")
    figures: dict[str, object] = {"cli_pass_s": round(base, 4)}
    for name, median in medians.items():
        if name != "pass":
            figures[key(name)] = round(median, 4)
            figures[key(name).removesuffix("_s") + "_ratio"] = round(median / base, 2)
    pg = postgres_url("the reading commands on PostgreSQL (cli_*_s_postgres, trends_cli_s_postgres)")
    if pg:
        with postgres_db(pg, "cli") as url:
            pg_times = reads(cli, url, args.runs, env)
        for name, t in pg_times.items():
            median = statistics.median(t)
            print(f"{name:11s} median {median:.3f} s  fastest {min(t):.3f} s  on PostgreSQL")
            figures[key(name) + "_postgres"] = round(median, 4)
    figures |= machine("cli")
    record(figures)
    print("recorded in bench/results.json:", figures)


if __name__ == "__main__":
    main()

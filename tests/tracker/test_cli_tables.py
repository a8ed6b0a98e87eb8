"""Tables never cut a number: 80-column terminals, piped output, --wide, --columns, --format tsv."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tracker.cli import app, main
from tracker.cli.render import (
    Column,
    column_texts,
    pick_columns,
    plain_table,
    print_table,
)

runner = CliRunner()
TERMINAL_80 = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def cli(db: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--db", db, *args], env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, _ANSI.sub("", result.stdout), result.stderr


def shown(rows: list[dict[str, Any]], key: str) -> list[str]:
    """The column ``key`` of ``rows`` as a table writes it (one number format per column)."""
    return column_texts(Column(key, key), rows)


def json_rows(db: str, *args: str) -> list[dict[str, Any]]:
    code, out, _ = cli(db, *args, "--format", "json")
    assert code == 0
    return json.loads(out)


def test_80_column_terminal_shows_every_price_whole(replay_store: str) -> None:
    rows = json_rows(replay_store, "prices", "--gpu", "H100", "--limit", "40")
    code, out, err = cli(replay_store, "prices", "--gpu", "H100", "--limit", "40", env=TERMINAL_80)
    assert code == 0
    assert "┃" in out, "a terminal gets the Rich table"
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    for text in shown(rows, "price_per_gpu_hour"):
        assert text in out
    header = out.splitlines()[2]
    for name in ("gpu", "provider", "kind", "$/GPU-h", "region"):
        assert name in header
    assert "--wide" in err, "the hidden columns are named on stderr"


def test_80_column_terminal_keeps_values_of_every_command(replay_store: str) -> None:
    rows = json_rows(replay_store, "value")
    code, out, _ = cli(replay_store, "value", env=TERMINAL_80)
    assert code == 0 and "…" not in out
    for key in ("price_per_gpu_hour", "cost_per_tflop_hour"):
        for text in shown(rows, key):
            assert text in out


def test_piped_output_is_a_plain_full_width_table(replay_store: str) -> None:
    rows = json_rows(replay_store, "prices", "--gpu", "H100")
    code, out, _ = cli(replay_store, "prices", "--gpu", "H100", env={"COLUMNS": "80"})
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "latest prices for H100: on-demand, community"
    assert lines[1].split() == ["gpu", "provider", "kind", "$/GPU-h", "region", "source", "age", "GPUs", "per", "hour",
                                "vCPU", "RAM", "GB", "cur", "raw", "name", "observed", "available"]
    assert not any(ch in out for ch in "┃│…")
    assert len(lines) == 3 + len(rows)
    prices, totals = shown(rows, "price_per_gpu_hour"), shown(rows, "price_per_hour")
    for line, r, price, total in zip(lines[3:], rows, prices, totals, strict=True):
        assert line.startswith(r["gpu"])
        assert price in line.split()
        assert total in line.split()
        assert r["gpu_raw"] in line
        # a replayed price says so, with its recording's date (a reference fixture has none: its kind)
        assert (f"replay {r['recorded']}" if r["recorded"] else f"replay ({r['fixture']})") in line


def test_piped_through_a_real_pipe(replay_store: str) -> None:
    """A real process writing into a pipe (not a test runner's buffer) gets complete numbers."""
    proc = subprocess.run([sys.executable, "-m", "tracker", "--db", replay_store, "prices", "--gpu", "H100-SXM",
                           "--kind", "on-demand"], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "40"})
    assert proc.returncode == 0, proc.stderr
    rows = json_rows(replay_store, "prices", "--gpu", "H100-SXM", "--kind", "on-demand")
    assert rows and "…" not in proc.stdout
    for text in shown(rows, "price_per_gpu_hour"):
        assert text in proc.stdout


def test_tsv_is_the_table_columns_with_raw_values(replay_store: str) -> None:
    rows = json_rows(replay_store, "prices", "--gpu", "H100", "--limit", "10")
    code, out, _ = cli(replay_store, "prices", "--gpu", "H100", "--limit", "10", "--format", "tsv")
    assert code == 0
    read = list(csv.DictReader(io.StringIO(out), delimiter="\t"))
    assert list(read[0])[:5] == ["gpu", "provider", "kind", "price_per_gpu_hour", "region"]
    assert len(read) == len(rows)
    for got, want in zip(read, rows, strict=True):
        assert float(got["price_per_gpu_hour"]) == pytest.approx(want["price_per_gpu_hour"], rel=1e-9)
        assert got["observed_at"] == want["observed_at"]


def test_wide_and_columns(replay_store: str) -> None:
    rows = json_rows(replay_store, "prices", "--gpu", "H100", "--limit", "3")
    _, out, _ = cli(replay_store, "prices", "--gpu", "H100", "--limit", "3", "--wide", "--format", "tsv")
    shown = ["gpu", "provider", "kind", "price_per_gpu_hour", "region", "source", "age", "gpu_count",
             "price_per_hour", "vcpus", "ram_gb", "currency", "gpu_raw", "observed_at", "stock"]
    assert out.splitlines()[0].split("\t") == [*shown, *[k for k in rows[0] if k not in shown]]
    code, out, _ = cli(replay_store, "prices", "--gpu", "H100", "--limit", "3", "--columns", "provider,price_per_hour")
    assert code == 0
    assert out.splitlines()[1].split() == ["provider", "per", "hour"]


def test_unknown_column_is_an_error_with_a_suggestion(replay_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--db", replay_store, "prices", "--columns", "provider,prise_per_hour"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --columns: no column 'prise_per_hour' (did you mean 'price_per_hour'?)")
    assert len(err.splitlines()) == 1


def test_narrow_terminal_keeps_the_essential_columns() -> None:
    """Handmade rows: at 40 columns the essential ones stay and the rest are hidden."""
    columns = [Column("gpu", "gpu", 0), Column("provider", "provider", 0), Column("price_per_gpu_hour", "$/GPU-h", 0),
               Column("gpu_raw", "raw name"), Column("observed_at", "observed")]
    rows = [{"gpu": "H100-SXM", "provider": "runpod", "price_per_gpu_hour": 12345.678, "gpu_raw": "x" * 30,
             "observed_at": None}]
    shown, hidden = pick_columns(columns, rows, width=40)
    assert [c.key for c in shown] == ["gpu", "provider", "price_per_gpu_hour"]
    assert [c.key for c in hidden] == ["gpu_raw", "observed_at"]
    buf = io.StringIO()
    print_table(rows, columns, console=Console(file=buf, width=20, force_terminal=True, color_system=None),
                notes=io.StringIO())
    assert "12,345.68" in buf.getvalue(), "a number wider than the terminal still prints whole"
    assert plain_table(rows, shown).splitlines()[2].split() == ["H100-SXM", "runpod", "12,345.68"]


def test_one_number_format_per_column() -> None:
    def texts(*values: object) -> list[str]:
        return column_texts(Column("v", "v"), [{"v": v} for v in values])

    assert texts(1.0, 2.12, 1978.9) == ["1.00", "2.12", "1,978.90"], "never 1, 2.1200 and 1,978.90 in one column"
    assert texts(0.0015, 30000.0, None) == ["0.0015", "30,000.0000", "-"]
    assert texts(12345.678, 20.5) == ["12,345.68", "20.50"]
    assert texts(80.0, 192.0) == ["80", "192"], "whole numbers stay whole"
    assert texts(2024, 8) == ["2024", "8"], "integers (years, counts) as written"


def test_text_wraps_to_its_longest_word_before_a_column_moves_out() -> None:
    from tracker.cli.render import fit_widths

    columns = [Column("gpu", "gpu", 0), Column("price", "$/GPU-h", 0), Column("where", "provider · region", 0)]
    rows = [{"gpu": "H100-SXM", "price": 2.49, "where": "thundercompute Central Bohemia, CZ"},
            {"gpu": "A100-SXM-80GB", "price": 12.5, "where": "aws us-east-1"}]
    widths = fit_widths(columns, rows, 50)
    assert widths[1] == len("$/GPU-h"), "a number column keeps its width"
    assert widths[2] < len("thundercompute Central Bohemia, CZ") and widths[2] >= len("thundercompute")
    assert 1 + sum(w + 3 for w in widths) <= 50
    shown, hidden = pick_columns(columns, rows, width=34)
    assert [c.key for c in shown] == ["gpu", "price"] and [c.key for c in hidden] == ["where"], \
        "too narrow even wrapped: the text moves out, the number stays"


def test_the_hidden_columns_hint_wraps_between_names() -> None:
    keys = [f"a_rather_long_column_name_{i}" for i in range(6)]
    columns = [Column("gpu", "gpu"), Column("price", "price")] + [Column(k, k) for k in keys]
    rows = [{"gpu": "H100-SXM", "price": 2.5, **{k: "x" * 30 for k in keys}}]
    notes = io.StringIO()
    print_table(rows, columns, console=Console(file=io.StringIO(), width=50, force_terminal=True, color_system=None),
                notes=notes)
    lines = notes.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 50 for line in lines)
    named = [w.strip(",") for line in lines for w in line.split() if w.startswith("a_rather")]
    assert named and set(named) <= set(keys), "every hidden column is named whole"

"""Charts of a ``History``: a PNG with matplotlib (Agg, no display needed) or a self-contained
HTML page with plotly (the plotly.js library is embedded, so the page needs no CDN and works
offline).

Each GPU gets its own panel with one thin line per provider, the market minimum (thick) and
median (dashed), and the all-time low: a dotted horizontal line, plus a star where it
happened when that moment is inside the plotted range. Lines are steps (a bucket's value is
drawn across the whole bucket), the x axis spans the whole requested range, and gaps in the
data are gaps in the lines (NaN breaks a line; nothing is interpolated or carried over).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from db.spans import epoch, from_epoch
from tracker.analysis.history import History, convert_price
from tracker.analysis.specs import Catalog
from tracker.errors import ConfigError

MAX_PANELS = 6


@dataclass(frozen=True, slots=True)
class Low:
    """An all-time low in the plotted metric's unit."""

    value: float
    at: datetime
    provider: str | None = None


def lows_for(table: Iterable[Mapping[str, Any]], metric: str, basis: str | None = None,
             catalog: Catalog | None = None) -> dict[str, Low]:
    """``trends.all_time_lows`` rows -> markers in ``metric``'s unit (break-even has none:
    its extreme is the all-time *high* of months)."""
    out: dict[str, Low] = {}
    if metric == "breakeven-months":
        return out
    for row in table:
        value = convert_price(metric, row["gpu"], float(row["all_time_low"]), basis=basis, catalog=catalog)
        if value is not None:
            out[row["gpu"]] = Low(value, row["all_time_low_at"], row["all_time_low_provider"])
    return out


def _naive(t: datetime) -> datetime:
    """UTC without a zone, as both libraries draw it."""
    return t.astimezone(UTC).replace(tzinfo=None)


def _low_label(low: Low) -> str:
    shown = f"{low.value:.2f}" if abs(low.value) >= 0.1 else f"{low.value:.4g}"
    by = f", {low.provider}" if low.provider else ""
    return f"all-time low {shown} ({_naive(low.at):%Y-%m-%d %H:%M} UTC{by})"


def _title(h: History, gpu: str) -> str:
    kinds = ", ".join(h.kinds) if h.kinds else "all kinds"
    return f"{gpu}: {h.metric} ({h.unit}), {kinds}, per {h.resolution.value}"


def _sparse_notes(h: History, gpu: str) -> list[str]:
    """The history's notes about an empty or one-point result for ``gpu``, written on its chart."""
    return [n for n in h.notes if "one point of history" in n and gpu in n.split(":", 1)[0].split(", ")
            or n.startswith("no stored prices")]


def _panels(h: History) -> list[str]:
    if not h.gpus:
        raise ConfigError("plot: no data in the selected range (scrape or import some prices first)")
    return h.gpus[:MAX_PANELS]


def _extent(h: History) -> tuple[datetime, datetime]:
    """From the start of the first bucket to the end of the last: the whole range, gaps included."""
    res = h.resolution
    first, last = (from_epoch(res.floor_s(epoch(t))) for t in (h.since, h.until))
    return _naive(first), _naive(last) + timedelta(seconds=res.seconds)


def _in_range(h: History, at: datetime) -> bool:
    start, end = _extent(h)
    return start <= _naive(at) <= end


Series = dict[str, list[float | None]]


def _steps(h: History, gpu: str) -> tuple[list[datetime], Series, Series]:
    """x = every bucket start plus the end of the last bucket; y of the market (``min``,
    ``median``) and of each provider (``None``: no value) with its last value repeated, so a step
    plot draws each bucket (even a lone one) as a segment across it."""
    market = [m for m in h.market_rows if m["gpu"] == gpu]
    x = [_naive(m["time"]) for m in market]
    x.append(x[-1] + timedelta(seconds=h.resolution.seconds))

    def ys(values: list[float | None]) -> list[float | None]:
        out = [None if v is None or v != v else float(v) for v in values]
        return out + out[-1:]

    columns = h.provider_columns(gpu).get(gpu, {})
    return (x, {"min": ys([m["min"] for m in market]), "median": ys([m["median"] for m in market])},
            {p: ys(v) for p, v in sorted(columns.items()) if any(c is not None for c in v)})


def plot_png(h: History, path: str | Path, lows: Mapping[str, Low] | None = None) -> Path:
    from matplotlib.figure import Figure

    gpus = _panels(h)
    fig = Figure(figsize=(11, 3.6 * len(gpus)), layout="constrained")
    axes = fig.subplots(len(gpus), 1, squeeze=False)[:, 0]
    for ax, gpu in zip(axes, gpus, strict=True):
        x, series, providers = _steps(h, gpu)
        for provider, ys in providers.items():
            ax.plot(x, ys, lw=1, alpha=0.7, label=provider, drawstyle="steps-post")
        ax.plot(x, series["min"], color="black", lw=2.2, label="market min", drawstyle="steps-post")
        ax.plot(x, series["median"], color="grey", lw=1.6, ls="--", label="market median", drawstyle="steps-post")
        low = (lows or {}).get(gpu)
        if low is not None:
            ax.axhline(low.value, color="crimson", ls=":", lw=1.2, label=_low_label(low))
            if _in_range(h, low.at):
                ax.plot([_naive(low.at)], [low.value], marker="*", ms=14, color="crimson", ls="none")
        ax.set_xlim(*_extent(h))
        ax.set_title(_title(h, gpu), fontsize=10)
        for note in _sparse_notes(h, gpu):
            ax.text(0.5, 0.5, textwrap.fill(note, 70), transform=ax.transAxes, ha="center", va="center", fontsize=9,
                    bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "grey"})
        ax.set_ylabel(h.unit)
        ax.set_xlabel("time (UTC)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    out = Path(path)
    fig.savefig(out, format="png", dpi=110)
    return out


def plot_html(h: History, path: str | Path, lows: Mapping[str, Low] | None = None) -> Path:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    gpus = _panels(h)
    fig = make_subplots(rows=len(gpus), cols=1, subplot_titles=[_title(h, g) for g in gpus], shared_xaxes=False)
    for row, gpu in enumerate(gpus, start=1):
        times, series, providers = _steps(h, gpu)
        x = [t.isoformat() for t in times]
        suffix = f" ({gpu})" if len(gpus) > 1 else ""
        for provider, ys in providers.items():
            fig.add_trace(go.Scatter(x=x, y=ys, mode="lines", name=provider + suffix, line={"width": 1, "shape": "hv"},
                                     opacity=0.75, connectgaps=False), row=row, col=1)
        for col, style, name in (("min", {"width": 3, "color": "black", "shape": "hv"}, "market min"),
                                 ("median", {"width": 2, "color": "grey", "dash": "dash", "shape": "hv"}, "market median")):
            fig.add_trace(go.Scatter(x=x, y=series[col], mode="lines", name=name + suffix, line=style,
                                     connectgaps=False), row=row, col=1)
        low = (lows or {}).get(gpu)
        if low is not None:
            fig.add_hline(y=low.value, line={"color": "crimson", "dash": "dot", "width": 1}, row=row, col=1,
                          annotation_text=_low_label(low))
            if _in_range(h, low.at):
                fig.add_trace(go.Scatter(x=[_naive(low.at).isoformat()], y=[low.value], mode="markers",
                                         name="all-time low" + suffix,
                                         marker={"symbol": "star", "size": 14, "color": "crimson"}), row=row, col=1)
        for note in _sparse_notes(h, gpu):
            axis = "" if row == 1 else str(row)
            fig.add_annotation(text="<br>".join(textwrap.wrap(note, 70)), xref=f"x{axis} domain", yref=f"y{axis} domain", x=0.5, y=0.5,
                               showarrow=False, bgcolor="rgba(255,255,255,0.85)", bordercolor="grey")
        fig.update_yaxes(title_text=h.unit, row=row, col=1)
    fig.update_xaxes(title_text="time (UTC)", range=[t.isoformat() for t in _extent(h)])
    fig.update_layout(height=380 * len(gpus), template="plotly_white", legend={"font": {"size": 10}})
    out = Path(path)
    fig.write_html(str(out), include_plotlyjs=True, full_html=True)
    return out


def plot(h: History, path: str | Path, lows: Mapping[str, Low] | None = None) -> Path:
    """Write ``path`` as PNG (``.png``) or self-contained HTML (``.html``/``.htm``)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".png":
        return plot_png(h, path, lows)
    if suffix in (".html", ".htm"):
        return plot_html(h, path, lows)
    raise ConfigError(f"-o: {path} must end in .png or .html")

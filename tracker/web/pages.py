"""The HTML dashboard: overview, one page per GPU (or family), providers, alerts.

Server-rendered Jinja2 templates; the only script is the price-history chart (plotly.js,
served by this app from the installed ``plotly`` package, never from a CDN).
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from tracker import __version__
from tracker.errors import ConfigError
from tracker.reads import data
from tracker.web import views
from tracker.web.cache import cached
from tracker.web.context import WebContext

TEMPLATES_DIR = Path(__file__).parent / "templates"
KIND_LABELS = {"on_demand": "on-demand", "spot": "spot", "community": "community", "reserved": "reserved"}
#: Kinds choices on the GPU page: label -> query value.
KIND_CHOICES = {"on-demand + community": "", "spot": "spot", "reserved": "reserved", "all kinds": "all"}


def money(v: Any, currency: str = "USD") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    sign = "$" if currency == "USD" else ""
    suffix = "" if currency == "USD" else f" {currency}"
    places = 2 if abs(v) >= 10 else 3 if abs(v) >= 0.1 else 4
    return f"{sign}{v:,.{places}f}{suffix}"


def num(v: Any, places: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float) and v.is_integer():
        return f"{int(v):,}"
    return f"{v:,.{places}f}" if isinstance(v, float) else f"{v:,}"


def pct(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:+.1f}%"


def when(v: datetime | None) -> str:
    return v.strftime("%Y-%m-%d %H:%M") if v else "–"


def stamp(v: datetime | None) -> Markup:
    """A time for a table cell: it breaks between date and time only, and phones drop the year."""
    if v is None:
        return Markup("–")
    return Markup('<time datetime="{}"><span class="yr">{}-</span><span class="keep">{}</span> '
                  '<span class="keep">{}</span></time>').format(
        v.isoformat(), v.strftime("%Y"), v.strftime("%m-%d"), v.strftime("%H:%M"))


def ago(v: datetime | None) -> str:
    return data.age(v) or "–"


def kind_label(kind: str, term_months: int = 0) -> str:
    label = KIND_LABELS.get(kind, kind)
    return f"{label} {term_months} mo" if kind == "reserved" and term_months else label


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES_DIR), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(money=money, num=num, pct=pct, when=when, stamp=stamp, ago=ago, kind=kind_label)
    env.globals.update(version=__version__)
    return env


templates = Jinja2Templates(env=_env())
router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)


def _ctx(request: Request) -> WebContext:
    ctx: WebContext = request.app.state.web
    return ctx


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
    context.setdefault("root", request.scope.get("root_path", ""))
    return templates.TemplateResponse(request, name, context, status_code=status_code)


@router.get("/")
def overview(request: Request) -> Response:
    return render(request, "overview.html", page="overview", **views.overview(_ctx(request)))


@router.get("/gpu")
def gpu_search(request: Request, q: str = "") -> Response:
    """The search box's answer: a redirect to the GPU's page. The text is one path segment,
    percent-encoded whole (a slash or ``..`` in it stays inside the segment), so any text
    lands on the GPU page, which says when no GPU matches."""
    text = q.strip()
    if not text:
        return RedirectResponse(str(request.url_for("overview")), status_code=303)
    base = str(request.url_for("gpu", query="_"))[:-1]
    return RedirectResponse(base + quote(text, safe=""), status_code=303)


@router.get("/gpu/{query:path}")
async def gpu(
    request: Request,
    query: str,
    since: str = "90d",
    every: str = "auto",
    kind: Annotated[list[str] | None, Query()] = None,
) -> Response:
    """A GPU's (or family's) page: offers, trends and the history chart. At most ``web.cache_s``
    behind the store: one rendering serves every client meanwhile (``tracker.web.cache``)."""
    ctx = _ctx(request)
    if not query.strip():  # ``/gpu/`` or blanks: the search box with nothing in it
        return RedirectResponse(str(request.url_for("overview")), status_code=303)
    try:
        data.resolve_gpus(ctx, query)
    except ConfigError:
        return render(request, "error.html", status_code=404, title="Unknown GPU",
                      message=f"No GPU in the catalog matches “{query}”.",
                      hint="Try a family such as H100 or A100, or a canonical id such as H100-SXM.",
                      families=sorted({s.family for s in ctx.catalog.values()}))
    kinds = [k for k in (kind or []) if k]

    def page() -> bytes:
        view = views.gpu_page(ctx, query, since=since, every=every, kinds=kinds or None)
        return bytes(render(request, "gpu.html", page="gpu", ranges=views.RANGES, kind_choices=KIND_CHOICES,
                            kind_value=",".join(kinds), **view).body)

    key = ("gpu_page", request.scope.get("root_path", ""), query, since, every, tuple(kinds))
    return await cached(ctx.bodies, request, key, page, media_type="text/html; charset=utf-8")


@router.get("/providers")
def providers(request: Request) -> Response:
    ctx = _ctx(request)
    return render(request, "providers.html", page="providers", providers=data.providers(ctx),
                  runs=data.runs(ctx, limit=60))


@router.get("/alerts")
def alerts(request: Request) -> Response:
    return render(request, "alerts.html", page="alerts", **views.alerts_page(_ctx(request)))

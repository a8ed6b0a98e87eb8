"""The GPU spec catalog: sourced figures per canonical GPU id, and resolving a provider's name to one.

Public API the rest of the code relies on:

* ``resolve_gpu(raw, memory_gb=None, *, provider=None, catalog=None) -> str | None``: canonical
  id (e.g. ``"H100-SXM"``) for a provider's GPU string, or ``None`` when unknown or ambiguous
  (never a guess). Order: the instance-type table (``"p5.48xlarge"``), a canonical id written
  as such (``"A100-PCIe-80GB"``), user aliases from ``catalog``, then the name rules of
  ``tracker.catalog.names`` (read its docstring for the documented defaults: a bare "H100" is the
  SXM part, a bare "A100" needs its memory size, "Tesla V100" without a form factor is
  ``None``...). ``provider`` narrows instance-type look-ups and enables provider rules.
* ``instance_gpu(instance_type, provider=None) -> tuple[str, float] | None``: canonical id and
  GPU count for instance-type-only providers (AWS ``p5.48xlarge``, Azure
  ``Standard_ND96isr_H100_v5``, GCP ``a3-highgpu-8g``), from ``tracker/catalog/data/instance_types.csv``.
* ``gpu_ids_matching(query) -> list[str]``: an exact canonical id -> just it
  (case-insensitive); a family (``"H100"``, ``"A100"``, ``"V100"``) -> every id of the family;
  ``"H200*"`` -> every id starting with ``H200`` (use it for "H200 and H200-NVL", since
  ``"H200"`` alone is the SXM part's own id); otherwise what ``resolve_gpu`` makes of it.
* ``family_of(gpu_id) -> str``.
* ``GpuSpec`` (frozen; its columns are ``tracker.gpu_columns.GpuColumns``),
  ``load_catalog(overrides=None) -> dict[str, GpuSpec]``,
  ``catalog_rows_for_db(catalog=None) -> list[dict]`` (one dict per ``db.models.GpuModel`` row).

Families (``family`` column): variants of one chip and memory line share a family, so
``--gpu H100`` means H100-SXM, H100-PCIe and H100-NVL. Superchips are their own families:
GH200 (Grace + H100-class GPU, priced as a module) is *not* in H100 or H200, and GB200 (the
B200 die in a Grace Blackwell NVL72 rack, 2,500 dense TFLOPS at 1,200 W) is *not* in B200
(the HGX part clouds rent, 2,250). A800 is apart from A100 (a different, export-market SKU).

User catalog file (TOML; ``catalog_file`` in the config), adds GPUs or overrides fields::

    [gpus.H100-SXM]                      # override: the price you paid
    purchase_price_usd = 27500
    purchase_price_date = "2025-02-01"
    purchase_price_source = "our invoice"

    [gpus.RTX-PRO-4000]                  # a new GPU
    vendor = "NVIDIA"
    vram_gb = 20
    sources = ["https://www.nvidia.com/..."]
    aliases = ["RTX PRO 4000 Blackwell"] # raw names that resolve to it (with catalog=...)

Keys are ``GpuModel`` column names plus ``aliases``; an unknown key or a wrong type is a
``ConfigError`` naming it. A new GPU without ``sources`` (or an override of the purchase price
without ``purchase_price_source``) is sourced as "user catalog <file>".
"""

from __future__ import annotations

import csv
import dataclasses
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import NoneType
from typing import Any, Final, get_args, get_type_hints

from tracker.catalog.instance_types import instance_gpu
from tracker.errors import ConfigError
from tracker.gpu_columns import GpuColumns

DATA_DIR: Final = Path(__file__).parent / "data"
GPUS_CSV: Final = DATA_DIR / "gpus.csv"


@dataclass(frozen=True, slots=True)
class GpuSpec(GpuColumns):
    """One catalog row: the ``gpu_model`` columns (``tracker.gpu_columns``, read its docstring
    for what the figures mean) plus the raw names that resolve to it."""

    aliases: tuple[str, ...] = ()

    @property
    def source_urls(self) -> list[str]:
        return self.sources.split()

    def as_row(self) -> dict[str, Any]:
        """The ``gpu_model`` row (no ``aliases``)."""
        return {f: getattr(self, f) for f in DB_FIELDS}

    def as_json(self) -> dict[str, Any]:
        """For ``catalog --format json``: ``gpu`` instead of ``id``, ``sources`` as a list."""
        out: dict[str, Any] = {"gpu": self.id}
        out.update({f: getattr(self, f) for f in DB_FIELDS if f != "id"})
        out["sources"] = self.source_urls
        return out


_HINTS: Final = get_type_hints(GpuColumns)
#: The ``gpu_model`` columns, in order, and the type each is read as (``float | None``: ``float``).
_TYPES: Final = {name: next((t for t in get_args(hint) if t is not NoneType), hint) for name, hint in _HINTS.items()}
DB_FIELDS: Final = tuple(_TYPES)
_FLOAT_FIELDS: Final = frozenset(f for f, t in _TYPES.items() if t is float)
_INT_FIELDS: Final = frozenset(f for f, t in _TYPES.items() if t is int)
#: Text columns that may be NULL: an empty cell is ``None`` there, ``""`` elsewhere.
_NULLABLE_TEXT: Final = frozenset(f for f, t in _TYPES.items() if t is str and NoneType in get_args(_HINTS[f]))


def _parse_csv_row(row: Mapping[str, str], where: str) -> GpuSpec:
    values: dict[str, Any] = {}
    for name in DB_FIELDS:
        if name not in row:
            raise ConfigError(f"{where}: column {name!r} is missing")
        raw = (row[name] or "").strip()
        if name in _FLOAT_FIELDS:
            values[name] = float(raw) if raw else None
        elif name in _INT_FIELDS:
            values[name] = int(raw) if raw else None
        elif name in _NULLABLE_TEXT:
            values[name] = raw or None
        else:
            values[name] = raw
    if not values["id"]:
        raise ConfigError(f"{where}: empty id")
    values["family"] = values["family"] or values["id"]
    return GpuSpec(**values)


@cache
def _builtin() -> tuple[GpuSpec, ...]:
    with GPUS_CSV.open(newline="", encoding="utf-8") as fh:
        specs = tuple(_parse_csv_row(r, f"{GPUS_CSV.name} line {i + 2}") for i, r in enumerate(csv.DictReader(fh)))
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{GPUS_CSV.name}: duplicate ids")
    return specs


def load_catalog(overrides: Path | str | None = None) -> dict[str, GpuSpec]:
    """The shipped catalog, plus the user's TOML file when given (see the module docstring)."""
    catalog = {s.id: s for s in _builtin()}
    if overrides is not None:
        path = Path(overrides).expanduser()
        _apply_overrides(catalog, _read_toml(path), origin=f"user catalog {path}")
    return catalog


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"catalog_file: {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"catalog_file: {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"catalog_file: {path}: arrays or tables nested too deeply") from None
    unknown = set(data) - {"gpus"}
    if unknown:
        raise ConfigError(f"catalog_file: {path}: unknown top-level key(s) {', '.join(sorted(unknown))} (use [gpus.<id>])")
    gpus = data.get("gpus", {})
    if not isinstance(gpus, dict):
        raise ConfigError(f"catalog_file: {path}: 'gpus' must be a table of [gpus.<id>] tables")
    return gpus


def _coerce(key: str, name: str, value: Any) -> Any:
    where = f"catalog_file: gpus.{key}.{name}"
    if name in _FLOAT_FIELDS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: {value!r} is not a number")
        return float(value)
    if name in _INT_FIELDS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: {value!r} is not an integer")
        return value
    if name == "sources":
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return " ".join(value)
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where}: {value!r} is not a string or a list of strings")
    if name == "aliases":
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(f"{where}: {value!r} is not a list of strings")
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ConfigError(f"{where}: {value!r} is not a string")
    return str(value)


def _apply_overrides(catalog: dict[str, GpuSpec], gpus: Mapping[str, Any], origin: str) -> None:
    allowed = (set(DB_FIELDS) - {"id"}) | {"aliases"}
    for key, table in gpus.items():
        if not isinstance(table, dict):
            raise ConfigError(f"catalog_file: gpus.{key} must be a table")
        unknown = set(table) - allowed
        if unknown:
            raise ConfigError(f"catalog_file: gpus.{key}: unknown field(s) {', '.join(sorted(unknown))}")
        changes = {name: _coerce(key, name, value) for name, value in table.items()}
        if "purchase_price_usd" in changes and "purchase_price_source" not in changes:
            changes["purchase_price_source"] = origin
        if key in catalog:
            catalog[key] = dataclasses.replace(catalog[key], **changes)
        else:
            changes.setdefault("family", key)
            changes.setdefault("name", key)
            changes.setdefault("sources", origin)
            catalog[key] = GpuSpec(id=key, **changes)


def catalog_rows_for_db(catalog: Mapping[str, GpuSpec] | None = None) -> list[dict[str, Any]]:
    """One dict per ``gpu_model`` row (``GpuModel(**row)``), shipped catalog by default."""
    specs = (catalog or load_catalog()).values()
    return [s.as_row() for s in specs]


def family_of(gpu_id: str, catalog: Mapping[str, GpuSpec] | None = None) -> str:
    spec = (catalog or load_catalog()).get(gpu_id)
    return spec.family if spec else gpu_id


def gpu_ids_matching(query: str, catalog: Mapping[str, GpuSpec] | None = None) -> list[str]:
    """``"H100"`` -> every H100 variant; an exact canonical id -> just it; ``"H200*"`` -> prefix."""
    cat = catalog or load_catalog()
    q = query.strip()
    if not q:
        return []
    low = q.lower()
    exact = [g for g in cat if g.lower() == low]
    if exact:
        return exact
    if low.endswith("*"):
        prefix = low[:-1]
        return [g for g in cat if g.lower().startswith(prefix)] if prefix else []
    family = [g for g, s in cat.items() if s.family.lower() == low]
    if family:
        return family
    gpu = resolve_gpu(q, catalog=cat)
    return [gpu] if gpu else []


def _memory_consistent(spec: GpuSpec | None, memory_gb: float | None) -> bool:
    from tracker.catalog.names import MEMORY_HIGH, MEMORY_LOW

    if spec is None or memory_gb is None or memory_gb <= 0 or spec.vram_gb is None:
        return True
    return MEMORY_LOW * spec.vram_gb <= memory_gb <= MEMORY_HIGH * spec.vram_gb


def resolve_gpu(
    raw: str,
    memory_gb: float | None = None,
    *,
    provider: str | None = None,
    catalog: Mapping[str, GpuSpec] | None = None,
) -> str | None:
    """Canonical GPU id for a provider's GPU string (or instance type), or ``None``.

    The name rules (``tracker.catalog.names``, a hundred regular expressions compiled at import)
    are imported here: a query by family or id (``--gpu H100``) never reaches them."""
    from tracker.catalog.names import alias_key, looks_like_instance_type, resolve_name

    if not raw or not raw.strip():
        return None
    text = raw.strip()
    hit = instance_gpu(text, provider)
    if hit is not None:
        return hit[0]
    if looks_like_instance_type(text):
        return None  # an instance type the table does not know: never parsed as a name
    cat = catalog if catalog is not None else load_catalog()
    low = text.lower()
    if "-" in text:  # our own canonical spelling, e.g. "A100-PCIe-80GB" (bare "P100" goes to the rules)
        exact = next((g for g in cat if g.lower() == low and "-" in g), None)
        if exact is not None:
            return exact if _memory_consistent(cat[exact], memory_gb) else None
    if catalog is not None:
        key = alias_key(text)
        for spec in catalog.values():
            if any(alias_key(a) == key for a in spec.aliases):
                return spec.id if _memory_consistent(spec, memory_gb) else None
    gpu = resolve_name(text, memory_gb, provider=provider)
    return gpu if gpu is None or gpu in cat else None


def unknown_ids(ids: Iterable[str], catalog: Mapping[str, GpuSpec] | None = None) -> list[str]:
    """The ids not in the catalog (for checks on tables that refer to it)."""
    cat = catalog or load_catalog()
    return sorted({i for i in ids if i not in cat})

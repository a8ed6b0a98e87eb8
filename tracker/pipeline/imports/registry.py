"""The import formats' registry: each format's description, module, cadence and gap, which
format a file is (``detect``), and ``import_files``. Loaded when first used (the package itself
only names the formats; see its docstring)."""


from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlalchemy.engine import Engine

from tracker.errors import ConfigError
from tracker.pipeline.imports import (
    CSV,
    ewyluda,
    opencomputeprices,
    own_csv,
    skypilot_git,
    snapshots,
    tugot17,
)
from tracker.pipeline.imports.base import (
    BadRow,
    ImportResult,
    Progress,
    Snapshot,
    files_label,
)


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    description: str
    module: ModuleType | None
    cadence: timedelta | None
    max_gap: timedelta | None
    #: the archive keeps one snapshot per source and UTC day, the newest (see ``store_snapshots``)
    one_per_day: bool = False


def _archive(module: ModuleType, *, one_per_day: bool = False) -> Format:
    """An archive format, as its module declares it."""
    return Format(module.NAME, module.DESCRIPTION, module, module.CADENCE, module.MAX_GAP, one_per_day)


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format(CSV, "gpu-tracker's own prices/history CSV exports, or one SkyPilot vms.csv", None, None, None),
    _archive(tugot17), _archive(ewyluda), _archive(skypilot_git), _archive(opencomputeprices, one_per_day=True),
)}


def detect(path: Path) -> str:
    """The format of a file, from its name and first bytes (``csv`` when no archive format claims it)."""
    if path.is_dir():
        if (path / ".git").exists():
            return skypilot_git.NAME
        raise ConfigError(f"import: {path} is a folder; pass its files (e.g. {path}/*.jsonl)")
    with path.open(encoding="utf-8-sig", errors="replace") as fh:
        head = fh.read(4096)
    for fmt in (tugot17, ewyluda, opencomputeprices):
        if fmt.sniff(path, head):
            return fmt.NAME
    if path.suffix == ".jsonl":
        raise ConfigError(f"import: {path.name} is JSON lines but not a tugot17 summary file (no gpu_type/by_provider)")
    return CSV


def import_files(
    engine: Engine,
    paths: Sequence[Path],
    *,
    fmt: str | None = None,
    provider: str | None = None,
    observed_at: datetime | None = None,
    clouds: Sequence[str] = (),
    version: str | None = None,
    max_gap: timedelta | None | str = "default",
    currency_rates: Mapping[str, float] | None = None,
    catalog: Mapping[str, Any] | None = None,
    strict: bool = False,
    progress: Progress | None = None,
) -> ImportResult:
    """Import ``paths`` (all of one format) in one transaction; see the package docstring.

    ``max_gap``: ``"default"`` takes the format's, ``None`` means no gap is assumed."""
    if not paths:
        raise ConfigError("import: name at least one file")
    for p in paths:
        if not p.exists():
            raise ConfigError(f"import: {p} does not exist")
    names = {fmt} if fmt else {detect(p) for p in paths}
    if len(names) > 1:
        raise ConfigError(f"import: the files are of different formats ({', '.join(sorted(names))}); import them apart")
    name = names.pop()
    if name not in FORMATS:
        raise ConfigError(f"import: unknown format {name!r}; one of {', '.join(FORMATS)}")
    spec = FORMATS[name]
    if spec.module is None:
        if max_gap != "default":
            raise ConfigError("import: --max-gap is for archive formats; a CSV export states its own continuity")
        return own_csv.import_files(engine, list(paths), provider=provider, observed_at=observed_at,
                                    currency_rates=currency_rates, catalog=catalog, strict=strict, progress=progress)
    if provider or observed_at:
        raise ConfigError(f"import: --provider and --observed-at are for a single SkyPilot vms.csv; {name} names its own")
    gap = spec.max_gap if max_gap == "default" else max_gap
    assert not isinstance(gap, str)
    label = files_label(paths)
    result = ImportResult(label, name)
    module = spec.module
    if module is skypilot_git:
        if len(paths) != 1:
            raise ConfigError("import skypilot-git: name one clone")
    elif clouds or version:
        raise ConfigError("import: --cloud and --catalog-version are for skypilot-git")

    def found() -> Iterator[Snapshot]:
        """The files' snapshots, read as the store asks for them (in batches: ``store_snapshots``)."""
        if module is skypilot_git:
            yield from skypilot_git.read(paths[0], result, clouds=clouds, version=version, progress=progress)
            return
        for p in sorted(paths):
            yield from module.read(p, result, progress)

    return snapshots.store_snapshots(engine, found(), result, max_gap=gap, adapt_gap=max_gap == "default",
                                     cadence=spec.cadence, note=partial(result.note, label), one_per_day=spec.one_per_day,
                                     currency_rates=currency_rates, strict=strict)


__all__ = ["FORMATS", "BadRow", "Format", "ImportResult", "detect", "import_files"]

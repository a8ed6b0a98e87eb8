"""History on day one: importers for price archives, one module per format, and their registry.

=================  ===========================================================================
format             module
=================  ===========================================================================
``csv``            ``own_csv``: this project's own ``prices``/``history`` CSV exports, and a
                   single SkyPilot ``vms.csv`` (``--provider``, ``--observed-at``)
``tugot17``        ``tugot17``: tugot17/gpu-price-tracker ``data/summary/*.jsonl``
``ewyluda``        ``ewyluda``: ewyluda/gpu-price-index daily observation CSVs
``skypilot-git``   ``skypilot_git``: every commit of a skypilot-catalog clone's ``vms.csv``
``opencomputeprices`` ``opencomputeprices``: thatkavish/OpenComputePrices unified CSVs
=================  ===========================================================================

The archive formats and our own ``prices``/``history`` exports produce ``Snapshot`` records and
share one store path (``snapshots.store_snapshots``) whose rules -- cadence and gaps, absence,
order and repetition, stated interval starts, provider aliases and external providers -- are in
its docstring; how each export's rows map onto snapshots is in ``own_csv``'s. Every format refuses
timestamps in the future, keeps GPU names the catalog cannot resolve raw and reports them,
and reports skipped rows with their file and line number.
"""

from __future__ import annotations

from typing import Any

#: The format names, in the order ``gpu-tracker import`` lists them (each format's module takes
#: its ``NAME`` from here): named without importing any format, so the command's help is cheap.
CSV, TUGOT17, EWYLUDA, SKYPILOT_GIT = "csv", "tugot17", "ewyluda", "skypilot-git"
OPENCOMPUTEPRICES = "opencomputeprices"
FORMAT_NAMES = (CSV, TUGOT17, EWYLUDA, SKYPILOT_GIT, OPENCOMPUTEPRICES)


#: What the registry (``registry``) offers from here, imported when first asked for.
_REGISTRY = ("FORMATS", "BadRow", "Format", "ImportResult", "detect", "import_files")


def __getattr__(name: str) -> Any:
    if name not in _REGISTRY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from tracker.analysis.imports import registry

    return getattr(registry, name)

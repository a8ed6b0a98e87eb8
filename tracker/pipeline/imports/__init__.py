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
timestamps in the future, names GPUs with the project's catalog (``base.catalog_gpu``: the
archive's own label is only a hint, and a MIG profile, vGPU or fraction of a card is never a
whole GPU), keeps the names it cannot resolve raw and reports them, and reports skipped rows
with their file and line number.

**Bounded cost.** Every format is read as a stream (``base.bounded_lines``: a line over
``MAX_LINE`` or a CSV field over ``MAX_FIELD`` is a one-line error naming the file and line) and
stored in batches of ``base.BATCH_ROWS`` rows (``snapshots.batches``), so what the import holds
is one batch whatever the size of the files (the roll-up refresh at its end still holds the
intervals of each provider's window it touched: ``db.rollups``); series the store has never seen are stored set-based
(``fresh``), as a scrape stores a collection. **A failure midway keeps nothing**: the batches
are written inside the import's one transaction, so a line past the bounds, ``--strict`` with a
bad row or a database error rolls the whole import back, and the same command, run again once
the file is fixed, imports it from the start (an import already stored is skipped snapshot by
snapshot, so nothing is counted twice either way).
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
    from tracker.pipeline.imports import registry

    return getattr(registry, name)

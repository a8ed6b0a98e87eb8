"""The package boundaries: a module imports only from its own layer or below.

The layers, lowest first (README "How it works" draws the same picture):

====  ==================================================  ==============================================
rank  packages                                            why there
====  ==================================================  ==============================================
0     tracker (the package root), tracker.errors,         everyone raises, logs and names kinds the same
      tracker.logs, tracker.kinds                         way
1     db, tracker.catalog                                 storage and the spec catalog: data, no policy
2     scrapers                                            providers: fetch and pure parse (they read the
                                                          catalog's instance-type table, never the store)
3     tracker.config.settings                             settings know the providers they configure
4     tracker.pipeline                                    collect -> normalise -> validate -> store
5     tracker.analysis, tracker.alerts                    the domain: records in, results out
6     tracker.service, tracker.config.check,              the long-running job, and the checks of
      tracker.config.example,                             everything it will run; the read path the
      tracker.reads                                       interfaces share (one answer for one question)
7     tracker.cli, tracker.web, tracker.mcp,              interfaces: presentation only
      tracker.docs, tracker.__main__
====  ==================================================  ==============================================

Two packages of the same rank may not import each other either (db and the catalog are
independent; analysis and alerts are siblings that each read the store), except in the
shared layer (errors underlie kinds) and among the interfaces (``serve`` starts the web app), where
``APART`` still keeps some pairs apart: the MCP server and the exports read through ``tracker.reads``,
never through the dashboard. Imports under
``if TYPE_CHECKING:`` and inside functions count: a late import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RANKS: dict[str, int] = {
    "tracker": 0, "tracker.errors": 0, "tracker.logs": 0, "tracker.kinds": 0,
    "db": 1, "tracker.catalog": 1,
    "scrapers": 2,
    "tracker.config": 3, "tracker.config.settings": 3,
    "tracker.pipeline": 4,
    "tracker.analysis": 5, "tracker.alerts": 5,
    "tracker.service": 6, "tracker.config.check": 6, "tracker.config.example": 6, "tracker.reads": 6,
    "tracker.cli": 7, "tracker.web": 7, "tracker.mcp": 7, "tracker.export": 7, "tracker.docs": 7, "tracker.__main__": 7,
}

#: Ranks whose packages may import each other.
SIBLINGS_MAY_IMPORT = {0, 7}
#: (importer, imported) layers kept apart even where siblings may import each other: an interface
#: that only reads must not load another interface (the MCP server would start the dashboard's code).
APART: frozenset[tuple[str, str]] = frozenset({
    ("tracker.mcp", "tracker.web"), ("tracker.mcp", "tracker.cli"), ("tracker.export", "tracker.web"),
})


def layer_of(module: str) -> str:
    """The longest RANKS key that is ``module`` or a package above it."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in RANKS:
            return key
    raise KeyError(module)


def package_modules() -> list[tuple[str, Path]]:
    out = []
    for top in ("tracker", "scrapers", "db"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if "migrations" in path.parts:
                continue  # Alembic revisions import only db and alembic, by their own rules
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            out.append((".".join(parts), path))
    return out


def imported_modules(module: str, path: Path) -> set[str]:
    """Every project module ``path`` imports, wherever the import statement is."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # `from pkg import module`
    return {m for m in found if m.split(".")[0] in {"tracker", "scrapers", "db"}}


def violations() -> list[str]:
    bad: list[str] = []
    known = {m for m, _ in package_modules()}
    for module, path in package_modules():
        mine = layer_of(module)
        for target in sorted(imported_modules(module, path)):
            if target not in known and target.rpartition(".")[0] in known:
                target = target.rpartition(".")[0]  # `from pkg.mod import name`: the module counts
            if target not in known:
                continue
            theirs = layer_of(target)
            if (mine, theirs) in APART:
                bad.append(f"{module} ({mine}) imports {target} ({theirs}): they are kept apart")
                continue
            if theirs == mine or RANKS[theirs] < RANKS[mine]:
                continue
            if RANKS[theirs] == RANKS[mine] and RANKS[mine] in SIBLINGS_MAY_IMPORT:
                continue
            bad.append(f"{module} (rank {RANKS[mine]}, {mine}) imports {target} (rank {RANKS[theirs]}, {theirs})")
    return sorted(set(bad))


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for module, _ in package_modules():
        try:
            layer_of(module)
        except KeyError:
            unplaced.append(module)
    assert unplaced == []


def test_no_module_imports_a_higher_or_sibling_layer() -> None:
    assert violations() == []


def test_the_checker_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a db module importing the pipeline is reported."""
    fake = tmp_path / "queries.py"
    fake.write_text("from tracker.pipeline.collect import collect\n")
    found = imported_modules("db.labels", fake)
    assert "tracker.pipeline.collect" in found
    assert RANKS[layer_of("tracker.pipeline.collect")] > RANKS[layer_of("db.labels")]


def test_the_checker_keeps_the_mcp_server_away_from_the_dashboard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP server reads through ``tracker.reads``; an import of ``tracker.web`` is reported."""
    fake = tmp_path / "server.py"
    fake.write_text("from tracker.web import data\n")
    real = package_modules()
    monkeypatch.setattr(f"{__name__}.package_modules", lambda: [*real, ("tracker.mcp.fake", fake)])
    assert violations() == ["tracker.mcp.fake (tracker.mcp) imports tracker.web (tracker.web): they are kept apart"]


@pytest.mark.parametrize("module,layer", [
    ("scrapers.aws", "scrapers"), ("tracker.pipeline.collect", "tracker.pipeline"),
    ("tracker.config.check", "tracker.config.check"), ("tracker.catalog.names", "tracker.catalog"),
    ("tracker.reads.data", "tracker.reads"),
])
def test_layer_of(module: str, layer: str) -> None:
    assert layer_of(module) == layer


def test_readme_names_every_package() -> None:
    """README "How it works" names each folder and what it owns."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How it works", 1)[1].split("\n## ", 1)[0]
    folders = ["scrapers/", "db/", "tracker/catalog/", "tracker/config/", "tracker/pipeline/", "tracker/analysis/",
               "tracker/alerts/", "tracker/service/", "tracker/cli/", "tracker/web/"]
    for top in ("tracker", "scrapers", "db"):
        for p in sorted((ROOT / top).iterdir()):
            if p.is_dir() and (p / "__init__.py").exists() and p.name != "migrations":
                folders.append(f"{p.relative_to(ROOT).as_posix()}/")
    missing = sorted({f for f in folders if f not in section})
    assert missing == []

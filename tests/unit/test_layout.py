"""The package layout (issue 10, guide.md Layers and rule 8, interfaces.md Packaging).

One import namespace; capability packages inside ``jobs/``; no import cycle among
tidings' modules, function-local and ``TYPE_CHECKING`` imports included.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Where each installed subpackage lives in the checkout.
FOLDERS = {
    "tidings": REPO / "tidings",
    "tidings.workers": REPO / "workers",
    "tidings.jobs": REPO / "jobs",
    "tidings.scheduler": REPO / "scheduler",
    "tidings.store": REPO / "store",
}
#: jobs/ root holds shared helpers only.
MAX_JOBS_ROOT_MODULES = 8


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if (
                package == "tidings"
                and parts
                and parts[0] in {"workers", "jobs", "scheduler", "store"}
            ):
                continue
            found[name] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - node.level + 1]
                base = ".".join([*up, base]) if base else ".".join(up)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        # a package's own __init__ is a parent, not an import of its children
        edges[name] = {t for t in _imports(name, path, known) if not name.startswith(t + ".")}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_counting_function_local_imports() -> None:
    assert cycles(graph()) == []


def test_jobs_root_holds_at_most_eight_modules() -> None:
    root = [p.name for p in (REPO / "jobs").glob("*.py") if p.name != "__init__.py"]
    assert len(root) <= MAX_JOBS_ROOT_MODULES, sorted(root)


def test_every_import_is_under_the_tidings_namespace() -> None:
    generic = {"jobs", "store", "workers", "scheduler"}
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                assert node.module.split(".")[0] not in generic, (name, node.module)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] not in generic, (name, alias.name)

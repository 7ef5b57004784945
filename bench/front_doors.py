"""Front doors (issue 31's figures): how much code reaches inside a ``jobs/`` package, as one
JSON object.

- ``tests``: test files (``tests/**/test_*.py``) and how many import a module inside a ``jobs/``
  package rather than its front door (``from tidings.jobs.<package>.<module> import ...`` or
  ``from tidings.jobs.<package> import <module>``); ``with_root`` also counts the modules of
  the ``jobs/`` root, which has no front door.
- ``entry_points``: modules inside a ``jobs/`` package that product code outside that package
  imports (``tidings/ workers/ scheduler/`` and the other packages); the console's named
  exception (issue 21) is the one left.
- ``doors``: the names each package's ``__init__.__all__`` lists.

Static (``ast``), so it runs on any tree: ``python bench/front_doors.py [tree]`` (default: the
tree this file is in), which is how the figures before issue 31 were taken.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

#: Product folders whose imports count as product code.
PRODUCT = ("tidings", "workers", "scheduler", "jobs")


def packages(jobs: Path) -> list[str]:
    return sorted(p.name for p in jobs.iterdir() if (p / "__init__.py").exists())


def reaches_inside(
    jobs: Path, pkgs: list[str], node: ast.ImportFrom, home: str | None
) -> list[str]:
    """The modules inside a ``jobs/`` package (other than ``home``) that ``node`` imports."""
    parts = (node.module or "").split(".")
    if node.level or parts[:2] != ["tidings", "jobs"] or len(parts) < 3:
        return []
    if parts[2] not in pkgs or parts[2] == home:
        return []
    if len(parts) > 3:
        return [".".join(parts[:4])]
    return [
        f"{node.module}.{a.name}" for a in node.names if (jobs / parts[2] / f"{a.name}.py").exists()
    ]


def root_module(jobs: Path, node: ast.ImportFrom) -> bool:
    parts = (node.module or "").split(".")
    if node.level or parts[:2] != ["tidings", "jobs"]:
        return False
    if len(parts) == 2:
        return any((jobs / f"{a.name}.py").exists() for a in node.names)
    return (jobs / f"{parts[2]}.py").exists()


def imports(path: Path) -> list[ast.ImportFrom]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom)]


def main() -> None:
    tree = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    jobs = tree / "jobs"
    pkgs = packages(jobs)
    tests = sorted((tree / "tests").rglob("test_*.py"))
    inside = with_root = 0
    for path in tests:
        found = imports(path)
        hit = any(reaches_inside(jobs, pkgs, n, None) for n in found)
        inside += hit
        with_root += hit or any(root_module(jobs, n) for n in found)
    entry: set[str] = set()
    for folder in PRODUCT:
        for path in sorted((tree / folder).rglob("*.py")):
            rel = path.relative_to(tree).parts
            home = rel[1] if rel[0] == "jobs" and len(rel) > 2 else None
            for node in imports(path):
                entry.update(reaches_inside(jobs, pkgs, node, home))
    doors: dict[str, int] = {}
    for pkg in pkgs:
        init = ast.parse((jobs / pkg / "__init__.py").read_text())
        names = [
            n.value
            for n in ast.walk(init)
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
        ]
        doors[pkg] = len(names[0].elts) if names and isinstance(names[0], ast.List) else 0
    print(
        json.dumps(
            {
                "benchmark": "front_doors",
                "tree": str(tree),
                "tests": {
                    "files": len(tests),
                    "importing_inside": inside,
                    "share": round(inside / len(tests), 3),
                    "with_root": with_root,
                    "share_with_root": round(with_root / len(tests), 3),
                },
                "entry_points": {"count": len(entry), "modules": sorted(entry)},
                "doors": doors,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

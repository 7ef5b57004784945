"""Lay out the installed shape of the package as links, for tools that read files, not imports.

The layer folders live at the repository's top level but install as subpackages of
``tidings`` (interfaces.md, Packaging). mypy and import-linter read source files and know
nothing of setuptools' ``package-dir``, so ``make lint`` runs them over this tree:
``<dest>/tidings/`` with each source file linked from where it lives.

    python -m tests.support.linktree build/typecheck
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Installed subpackage → folder in the checkout (mirrors pyproject's package-dir).
PACKAGE_DIRS = {
    "tidings": "tidings",
    "tidings/workers": "workers",
    "tidings/jobs": "jobs",
    "tidings/scheduler": "scheduler",
    "tidings/store": "store",
}
SUFFIXES = (".py", ".typed")


def lay_out(dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    for package, folder in PACKAGE_DIRS.items():
        source = REPO / folder
        for path in source.rglob("*"):
            if path.suffix not in SUFFIXES or "__pycache__" in path.parts:
                continue
            target = dest / package / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, target)


if __name__ == "__main__":
    lay_out(Path(sys.argv[1]).resolve())

"""Issue 21, acceptance 3: only the composed read (``jobs.consumer.coherent.observe``: D9,
then C22) reaches the payloads from outside ``jobs/consumer/``. The import-linter contract
``one-way-down`` (pyproject.toml) lets only the package itself and the console's
read-only preview import the bare read; a module anywhere else that imports it breaks
``make lint``. Run here over the same link tree ``make lint`` uses, once as it is and
once with a rogue module added.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.linktree import REPO, lay_out

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
ROGUES = {
    "tidings/_rogue.py": "from tidings.jobs.consumer._bare_read import bare_read\n",
    "tidings/jobs/tick/_rogue.py": "from tidings.jobs.consumer import _bare_read\n",
}


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(LINT_IMPORTS),
            "--no-cache",
            "--contract",
            "one-way-down",
            str(REPO / "pyproject.toml"),
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not LINT_IMPORTS.exists() and shutil.which("lint-imports") is None:
        pytest.skip("import-linter is not installed")
    dest = tmp_path_factory.mktemp("linktree")
    lay_out(dest)
    return dest


def test_the_tree_as_it_is_keeps_the_contract(tree: Path) -> None:
    done = lint(tree)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("rogue", sorted(ROGUES))
def test_a_module_outside_view_importing_the_bare_read_breaks_it(tree: Path, rogue: str) -> None:
    path = tree / rogue
    path.write_text(ROGUES[rogue])
    try:
        done = lint(tree)
    finally:
        path.unlink()
    module = rogue.removesuffix(".py").replace("/", ".")
    assert done.returncode != 0
    assert f"{module} -> tidings.jobs.consumer._bare_read" in done.stdout

"""One import namespace (interfaces.md, Packaging; issue 10 acceptance 1).

The distribution installs exactly one top-level import package, ``tidings``; the
layer folders are its subpackages, so a user's own ``jobs.py``, ``store.py``,
``workers.py`` or ``scheduler.py`` never shadows a part of tidings.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
USER_MODULES = ("jobs", "store", "workers", "scheduler")


def test_installed_distribution_declares_only_tidings() -> None:
    site = sysconfig.get_paths()["purelib"]
    (dist,) = [
        d for d in importlib.metadata.distributions(path=[site]) if d.metadata["Name"] == "tidings"
    ]
    top_level = (dist.read_text("top_level.txt") or "").split()
    assert top_level == ["tidings"]
    recorded = {Path(str(f)).parts[0] for f in dist.files or ()}
    assert not recorded & set(USER_MODULES)


def test_wheel_holds_only_the_tidings_package(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: a build leaves build/ and egg-info behind
    tracked = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in tracked:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # Issue 20: every data folder is declared, so setuptools warns about none of them.
    assert "would be ignored" not in built.stdout + built.stderr
    (wheel,) = (tmp_path / "dist").glob("tidings-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"tidings"}
    for layer in USER_MODULES:
        assert f"tidings/{layer}/__init__.py" in names
    assert "tidings/store/lua/inbox_admit.lua" in names
    assert any(n.startswith("tidings/web/templates/") and n.endswith(".html") for n in names)
    assert any(n.startswith("tidings/web/static/") and n.endswith(".js") for n in names)
    assert "tidings/jobs/channels/publishing.py" in names


def test_import_beside_users_own_modules_that_raise(tmp_path: Path) -> None:
    for name in USER_MODULES:
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the user\\'s own {name}')\n")
    script = (
        "import tidings\n"
        "hub = tidings.connect('embedded')\n"
        "agent = hub.agent('w', inline=True)\n"
        "assert agent.publish_event('system', {'text': 'hi'}, wait=True)['status'] == 'ok'\n"
        "assert 'system' in agent.snapshot()\n"
        "hub.close()\n"
        "print('ok')\n"
    )
    (tmp_path / "w").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_metadata_spdx_license_classifiers_urls_and_split_extras() -> None:
    """Issue 14 (packaging): an SPDX ``license`` string, classifiers and project URLs;
    linters in ``dev``, not in ``test``; a bounded setuptools build requirement."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert project["project"]["license"] == "MIT"
    metadata = importlib.metadata.metadata("tidings")
    assert metadata["License-Expression"] == "MIT"
    classifiers = metadata.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert {u.split(",")[0] for u in metadata.get_all("Project-URL") or []} >= {
        "Homepage",
        "Source",
        "Issues",
    }
    extras = project["project"]["optional-dependencies"]
    names = {key: {Requirement(r).name for r in reqs} for key, reqs in extras.items()}
    assert {"mypy", "ruff", "import-linter"} <= names["dev"]
    assert not {"mypy", "ruff", "import-linter"} & names["test"]
    (setuptools,) = [
        Requirement(r)
        for r in project["build-system"]["requires"]
        if Requirement(r).name == "setuptools"
    ]
    bounds = {spec.operator for spec in setuptools.specifier}
    assert bounds == {">=", "<"}
    assert "'.[dev,test" in (REPO / "Makefile").read_text("utf-8")

"""Typed results stay typed (issue 22, acceptance 1): no ``Name = dict[str, Any]`` result
alias, ``Any`` at most 15 per 1,000 code lines, and one alias per aliased module.

The figures are counted by ``bench/vocabulary.py`` (its docstring says how), so the test and
the closing-note figures cannot disagree.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The issue's ceiling: ``Any`` tokens per 1,000 non-blank code lines.
MAX_ANY_PER_KLOC = 15.0


def _vocabulary() -> ModuleType:
    path = REPO / "bench" / "vocabulary.py"
    spec = importlib.util.spec_from_file_location("bench_vocabulary", path)
    if spec is None or spec.loader is None:
        pytest.fail("bench/vocabulary.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figures_of_the_five_packages_hold() -> None:
    figures = _vocabulary().measure(REPO)
    assert figures["result_aliases"] == 0
    assert figures["any_per_kloc"] <= MAX_ANY_PER_KLOC, figures
    assert figures["alias_drift"] == {}


def test_the_counter_sees_what_it_must_refuse(tmp_path: Path) -> None:
    """The measure is not vacuous: a result alias, ``Any`` tokens and a drifting alias in a
    scratch tree are all counted."""
    vocabulary = _vocabulary()
    for package in vocabulary.PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "jobs" / "a.py").write_text(
        "from typing import Any\n"
        "import tidings.jobs.inbox.admission as inbox\n"
        "Result = dict[str, Any]\n"
        "def f(x: Any) -> Any:\n"
        "    return x\n"
    )
    (tmp_path / "store" / "b.py").write_text("import tidings.jobs.inbox.admission as inboxes\n")
    figures = vocabulary.measure(tmp_path)
    assert figures["result_aliases"] == 1
    assert figures["any"] == 4
    assert figures["any_per_kloc"] > MAX_ANY_PER_KLOC
    assert figures["alias_drift"] == {"tidings.jobs.inbox.admission": ["inbox", "inboxes"]}

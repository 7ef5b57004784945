"""Fault points (interfaces.md Environment: TIDINGS_FAULTS): the code reaches only known points."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tidings.store import faults

REPO = Path(__file__).resolve().parents[2]


def reached_points() -> set[str]:
    found: set[str] = set()
    for folder in ("jobs", "store", "workers", "scheduler", "tidings"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "reach"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    found.add(str(node.args[0].value))
    return found


def test_every_reached_point_is_declared_and_every_declared_point_is_reached() -> None:
    assert reached_points() == set(faults.POINTS)


def test_an_unknown_point_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown fault point"):
        faults.reach("flush.before_wirte")


def test_an_unarmed_known_point_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDINGS_ENABLE_FAULTS", "1")
    monkeypatch.setenv("TIDINGS_FAULTS", "expire.after_alarm")
    faults.reach("flush.before_write")

"""Production code narrows types with real checks, not ``assert`` (issue 10): asserts
vanish under ``python -O``."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("tidings", "workers", "jobs", "scheduler", "store")


def test_no_assert_statements_in_the_packages() -> None:
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for layer in LAYERS
        for path in (REPO / layer).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assert)
    ]
    assert not found

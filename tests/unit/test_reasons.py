"""One reason registry (issue 22 acceptance 2): every ``reason`` the code answers is in
``store/reasons.py``, every entry is answered somewhere and documented in
``docs/reference/reasons.md`` with its sentence.

The scan reads the five packages' AST for reason literals: ``reason=`` and ``*_reason=``
keywords and parameter defaults, ``{"reason": ...}`` entries, assignments to names ending
in ``reason`` (``default_reason`` class attributes too), and the first argument of every
function or class whose first parameter is named ``reason`` (the ``error(reason, ...)`` helpers).
A name is followed to a module-level string constant; an f-string must be one of
:data:`TEMPLATES`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tidings.store.reasons import ALL, REASONS, Reason

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("tidings", "jobs", "store", "scheduler", "workers")
#: The reasons an f-string builds, by its template (``{}`` for each placeholder).
TEMPLATES = {
    "invalid_{}": {"invalid_workdir", "invalid_memory_repo"},
    "missing_{}": {"missing_event_id", "missing_ref_id"},
}
ROW = re.compile(r"^\| `([A-Za-z_]+)` \| (.+?) \|$", re.M)
#: A Markdown link; its text is what store/reasons.py says.
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def _trees() -> dict[Path, ast.Module]:
    return {
        p: ast.parse(p.read_text("utf-8"))
        for pkg in PACKAGES
        for p in sorted((REPO / pkg).rglob("*.py"))
    }


def _reason_first(trees: dict[Path, ast.Module]) -> set[str]:
    """Functions and classes whose first parameter is ``reason``."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            fn = node
            if isinstance(node, ast.ClassDef):
                fn = next(
                    (
                        m
                        for m in node.body
                        if isinstance(m, ast.FunctionDef) and m.name == "__init__"
                    ),
                    None,
                )
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and node.name != "__init__":
                params = [
                    a.arg
                    for a in fn.args.posonlyargs + fn.args.args
                    if a.arg not in ("self", "cls")
                ]
                if params[:1] == ["reason"]:
                    names.add(node.name)
    return names


def _values(node: ast.AST, helpers: set[str]) -> Iterator[ast.expr]:
    if isinstance(node, ast.Call):
        yield from (k.value for k in node.keywords if k.arg and k.arg.endswith("reason"))
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name in helpers and node.args:
            yield node.args[0]
    elif isinstance(node, ast.Dict):
        yield from (
            v
            for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant) and k.value == "reason"
        )
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        params = node.args.posonlyargs + node.args.args
        pairs = [
            *zip(params[len(params) - len(node.args.defaults) :], node.args.defaults, strict=True),
            *zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True),
        ]
        yield from (d for a, d in pairs if d is not None and a.arg.endswith("reason"))
    elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
            if name.lower().endswith("reason"):
                yield node.value


def _strings(value: ast.expr, constants: dict[str, str]) -> Iterator[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value:
        yield value.value
    elif isinstance(value, ast.IfExp):
        yield from _strings(value.body, constants)
        yield from _strings(value.orelse, constants)
    elif isinstance(value, ast.BoolOp):
        for operand in value.values:
            yield from _strings(operand, constants)
    elif isinstance(value, ast.Name) and value.id in constants:
        yield constants[value.id]
    elif isinstance(value, ast.JoinedStr):
        template = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in value.values)
        assert template in TEMPLATES, f"a reason built from an unknown template {template!r}"
        yield from TEMPLATES[template]


def answered() -> dict[str, str]:
    """Every reason literal in the code, with where it first appears."""
    trees = _trees()
    helpers = _reason_first(trees)
    found: dict[str, str] = {}
    for path, tree in trees.items():
        constants = {
            t.id: n.value.value
            for n in tree.body
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            for value in _values(node, helpers):
                for reason in _strings(value, constants):
                    found.setdefault(reason, f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_the_literal_and_the_sentences_name_the_same_reasons() -> None:
    assert set(REASONS) == ALL
    assert len(Reason.__args__) == len(ALL), "a reason is listed twice"
    assert all(sentence.endswith(".") for sentence in REASONS.values())


def test_every_reason_in_the_code_is_registered() -> None:
    missing = {r: where for r, where in answered().items() if r not in ALL}
    assert not missing, f"reasons answered but not in store/reasons.py: {missing}"


def test_every_registered_reason_is_answered_somewhere() -> None:
    unused = ALL - set(answered())
    assert not unused, f"store/reasons.py lists reasons no code answers: {sorted(unused)}"


def test_the_scan_sees_reasons_of_every_kind() -> None:
    found = answered()
    for reason in (
        "invalid_channel",
        "internal_error",
        "bad_usage",
        "watch_limit",
        "added",
        "invalid_memory_repo",
        "missing_ref_id",
        "no_store",
    ):
        assert reason in found, reason


def test_every_reason_is_documented_with_its_sentence() -> None:
    text = (REPO / "docs" / "reference" / "reasons.md").read_text("utf-8")
    rows = dict(ROW.findall(LINK.sub(r"\1", text)))  # a rule id there links to its entry
    assert set(rows) == ALL, (sorted(ALL - set(rows)), sorted(set(rows) - ALL))
    wrong = {r: s for r, s in rows.items() if s != REASONS[r]}
    assert not wrong, f"docs/reference/reasons.md disagrees with store/reasons.py: {wrong}"

"""Every Lua script touches only keys of one hash tag — one agent's ``{a:<id>}`` or one
host's ``{h:<host>}`` (documented host keys, store/keys.py) — the precondition for
moving agent state to a Redis Cluster (guide.md "Placement and scale";
issue 15 acceptance 4).

Two ends are read: each script's own ``KEYS`` usage (every key it touches comes in
``KEYS``, never built from ``ARGV`` or a literal), and each Python call site (the keys
passed together come from one agent's :class:`AgentKeys` or one host's key builders).
"""

from __future__ import annotations

import ast
import inspect
import re
from importlib import resources
from pathlib import Path

import pytest

from tidings.store import keys
from tidings.store.inbox_keys import InboxKeys
from tidings.store.keys import AgentKeys

ROOT = Path(__file__).resolve().parents[2]
LUA = sorted(resources.files("tidings.store").joinpath("lua").iterdir(), key=lambda p: p.name)
#: Redis commands a script may call without a key argument.
KEYLESS = frozenset({"TIME", "PING"})
CALL = re.compile(r"redis\.p?call\(\s*\"([A-Za-z]+)\"\s*(?:,\s*([^,)]+))?")
#: The packages whose call sites are read.
SOURCES = ("jobs", "store", "scheduler", "workers", "tidings")


def test_there_are_scripts() -> None:
    assert len(LUA) >= 20


@pytest.mark.parametrize("script", LUA, ids=lambda p: p.name)
def test_a_script_touches_only_the_keys_it_is_given(script: Path) -> None:
    text = script.read_text("utf-8")
    assert re.search(r"^--.*\bKEYS\b", text, re.M), "the script documents its KEYS"
    code = "\n".join(line.split("--", 1)[0] for line in text.splitlines())
    calls = CALL.findall(code)
    assert calls, "the script calls Redis"
    for command, first in calls:
        if command.upper() in KEYLESS:
            continue
        assert re.fullmatch(r"KEYS\[\d+\]", first.strip()), (
            f"{script.name}: {command} on {first.strip()!r}, not a KEYS entry"
        )
    assert "KEYS[" in code and not re.search(r"\bKEYS\s*\[\s*[^\d\s]", code), (
        "KEYS indexed only by literal positions"
    )


def _call_sites() -> list[tuple[str, ast.Call, ast.AST]]:
    """Every ``…scripts(name, [keys], [args])`` call with its enclosing function/class."""
    found = []
    for package in SOURCES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text("utf-8"))
            for scope in ast.walk(tree):
                if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(scope):
                    func = node.func if isinstance(node, ast.Call) else None
                    name = (
                        func.attr
                        if isinstance(func, ast.Attribute)
                        else func.id
                        if isinstance(func, ast.Name)
                        else ""
                    )
                    if name in ("scripts", "_scripts") and len(node.args) >= 2:  # type: ignore[union-attr]
                        found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node, scope))
    return found


def _receiver(node: ast.AST, scope: ast.AST) -> str:
    """The key builder an element of a keys list comes from (``k``, ``self.keys``, …)."""
    if isinstance(node, ast.Starred):
        return _receiver(node.value, scope)
    if isinstance(node, ast.Call):
        return _receiver(node.func, scope)
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name):
            return node.value.id if node.value.id != "self" else f"self.{node.attr}"
        return _receiver(node.value, scope)
    if isinstance(node, ast.Name):  # a local: what it was assigned from
        for stmt in ast.walk(scope):
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == node.id
            ):
                return _receiver(stmt.value, scope)
    return f"<{ast.dump(node)[:60]}>"


#: The per-agent key builders: every key they build carries ``{a:<agent_id>}``.
AGENT_BUILDERS = (AgentKeys, InboxKeys)
BUILDER = "(keys\\.)?(" + "|".join(c.__name__ for c in AGENT_BUILDERS) + ")"


def _bound_to_agent_keys(name: str, scope: ast.AST) -> bool:
    source = ast.unparse(scope)
    return bool(re.search(rf"\b{re.escape(name)} = {BUILDER}\(", source))


HOST_KEY_BUILDERS = (
    "scheduler_jobs",
    "scheduler_run_times",
    "scheduler_leader",
    "host_agents",
    "host_workdirs",
    "host_agents_version",
)


def test_every_call_site_passes_keys_of_one_tag() -> None:
    sites = _call_sites()
    assert len(sites) >= 15
    for where, call, scope in sites:
        keys_arg = call.args[1]
        if not isinstance(keys_arg, ast.List):  # one builder's whole key list
            assert re.fullmatch(rf"{BUILDER}\(\w+\)\.\w+\(\)", ast.unparse(keys_arg)), where
            continue
        if len(keys_arg.elts) <= 1:
            continue  # one key is one slot
        receivers = {_receiver(e, scope) for e in keys_arg.elts}
        if receivers <= {"self.jobs_key", "self.run_times_key"}:
            continue  # one host's job store: both built from keys.scheduler_*(host)
        if receivers == {"keys"}:  # host keys: builders of store/keys.py, one host
            built = {ast.unparse(e) for e in keys_arg.elts}
            hosts = {re.sub(r"^keys\.(\w+)\((.*)\)$", r"\2", b) for b in built}
            assert (
                all(re.match(rf"keys\.({'|'.join(HOST_KEY_BUILDERS)})\(", b) for b in built)
                and len(hosts) == 1
            ), f"{where}: {built}"
            continue
        assert len(receivers) == 1, f"{where}: keys from {receivers}"
        (receiver,) = receivers
        if receiver == "self.keys":
            continue  # checked below: the class binds self.keys to AgentKeys
        assert _bound_to_agent_keys(receiver, scope), f"{where}: {receiver} is not AgentKeys"


def test_self_keys_and_host_keys_are_what_they_say() -> None:
    for path in (ROOT / "jobs").rglob("*.py"):
        text = path.read_text("utf-8")
        if "self.keys" in text and "scripts(" in text:
            assert re.search(rf"self\.keys = {BUILDER}\(", text), path
    jobstore = (ROOT / "scheduler" / "jobstore.py").read_text("utf-8")
    assert "self.jobs_key = keys.scheduler_jobs(host)" in jobstore
    assert "self.run_times_key = keys.scheduler_run_times(host)" in jobstore
    for builder in HOST_KEY_BUILDERS:
        assert getattr(keys, builder)("h1").startswith("{h:h1}:")


@pytest.mark.parametrize("builder", AGENT_BUILDERS, ids=lambda c: c.__name__)
def test_every_agent_key_carries_the_agent_tag(builder: type) -> None:
    k = builder("a1")
    for name, member in inspect.getmembers(builder):
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            value = getattr(k, name)
        elif inspect.isfunction(member):
            arity = len(inspect.signature(member).parameters) - 1
            value = getattr(k, name)(*(["x"] * arity))
        else:
            continue
        if isinstance(value, str):
            assert value.startswith("{a:a1}:"), name
        else:
            assert all(v.startswith("{a:a1}:") for v in value), name

"""Sync and async from one source (issue 22 acceptance 4): ``AsyncHub`` and ``AsyncAgent``
offer every public method of ``Hub`` and ``Agent``, with the same parameters (names,
kinds, defaults), as coroutines; what the asyncio side adds or leaves out is listed here
and in its docstring."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from tidings import Agent, Hub, aio
from tidings.aio import AsyncAgent, AsyncHub

#: Methods only the asyncio side has: its context manager and closing spelling, and the
#: awaited worker group that ``AsyncAgent.prepare_turn`` uses.
ASYNC_ONLY = {"aclose", "pre_turn"}
#: Sync methods with no coroutine twin: the sync context manager.
SYNC_ONLY = {"__enter__", "__exit__"}
#: ``Agent`` instance attributes that ``AsyncAgent`` mirrors as read-only properties.
MIRRORED_ATTRIBUTES = {"record", "inline"}


def _public(cls: type) -> dict[str, object]:
    return {
        name: member
        for name, member in vars(cls).items()
        if (not name.startswith("_") or name in ("__enter__", "__exit__"))
        and (callable(member) or isinstance(member, property))
    }


def _params(function: object) -> list[tuple[str, object, object]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


@pytest.mark.parametrize(("sync_cls", "async_cls"), [(Hub, AsyncHub), (Agent, AsyncAgent)])
def test_same_public_methods(sync_cls: type, async_cls: type) -> None:
    sync_names = set(_public(sync_cls)) - SYNC_ONLY
    async_names = set(_public(async_cls)) - ASYNC_ONLY - {"__aenter__", "__aexit__"}
    if sync_cls is Agent:
        async_names -= MIRRORED_ATTRIBUTES
    assert sync_names == async_names, (
        f"only on {sync_cls.__name__}: {sorted(sync_names - async_names)}; "
        f"only on {async_cls.__name__}: {sorted(async_names - sync_names)}"
    )


@pytest.mark.parametrize(("sync_cls", "async_cls"), [(Hub, AsyncHub), (Agent, AsyncAgent)])
def test_same_signatures_as_coroutines(sync_cls: type, async_cls: type) -> None:
    sync_members, async_members = _public(sync_cls), _public(async_cls)
    for name in set(sync_members) & set(async_members):
        sync_member, async_member = sync_members[name], async_members[name]
        if isinstance(sync_member, property):
            assert isinstance(async_member, property), name
            continue
        assert inspect.iscoroutinefunction(async_member), f"{async_cls.__name__}.{name}"
        assert _params(sync_member) == _params(async_member), name


@pytest.mark.parametrize("cls", [Hub, Agent, AsyncHub, AsyncAgent])
def test_public_methods_document_every_parameter(cls: type) -> None:
    """Issue 22: the public methods document their parameters; the coroutines share the
    sync text (``tidings.aio._docs``), so both sides say the same."""
    undocumented = []
    for name, member in _public(cls).items():
        if isinstance(member, property) or name.startswith("_") or name == "pre_turn":
            continue
        doc = inspect.getdoc(member) or ""
        params = [p for p in inspect.signature(member).parameters if p != "self"]  # type: ignore[arg-type]
        missing = [p for p in params if f"``{p}``" not in doc and f"``{p}=" not in doc]
        if not doc or missing:
            undocumented.append(f"{name}: {missing or 'no docstring'}")
    assert not undocumented


def test_async_hub_has_the_operator_reads() -> None:
    for name in ("find_agent", "dead_letters", "requeue_dead", "declare_actors"):
        assert inspect.iscoroutinefunction(getattr(AsyncHub, name)), name


def test_the_asyncio_client_is_typed() -> None:
    hints = inspect.get_annotations(AsyncHub.__init__)
    assert hints["aredis"] not in ("Any", "object"), hints


def test_the_added_coroutines_answer_as_the_sync_hub_does(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with aio.connect("embedded") as hub:
            assert await hub.find_agent(tmp_path) is None
            registered = await hub.agent(tmp_path)
            found = await hub.find_agent(tmp_path)
            assert isinstance(found, AsyncAgent)
            assert found.agent_id == registered.agent_id
            assert await hub.dead_letters() == []
            missing = await hub.requeue_dead("no-such-message")
            assert (missing["status"], missing["reason"]) == ("error", "not_found")

    asyncio.run(scenario())

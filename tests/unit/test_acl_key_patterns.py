"""Issue 24 (deploy/redis.conf): every key tidings builds matches the key patterns of the
workers' and producers' ACL users, so a new key family fails here, not only in the e2e
tier (which runs as those users) or in a deployment."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import dramatiq
import fakeredis
import pytest

from tidings.store import keys, rates
from tidings.store.inbox_keys import InboxKeys
from tidings.store.keys import AgentKeys
from tidings.store.settings import Settings
from tidings.workers.broker import make_broker

CONF = Path(__file__).resolve().parents[2] / "deploy" / "redis.conf"


def key_patterns(user: str) -> list[str]:
    """The ``~pattern`` rules of ``user`` in deploy/redis.conf (Redis globs: ``*``, ``?``
    and ``[...]`` as in fnmatch; ``{`` is a plain character in both)."""
    for line in CONF.read_text("utf-8").splitlines():
        words = line.split()
        if words[:2] == ["user", user]:
            return [w[1:] for w in words if w.startswith("~")]
    raise AssertionError(f"deploy/redis.conf has no user {user}")


def built(builder: Any) -> Iterator[str]:
    """Every key a key module (its constants and functions) or key builder (its
    properties and methods) yields for sample arguments."""
    properties = {n for n, v in vars(type(builder)).items() if isinstance(v, property)}
    for name, member in inspect.getmembers(builder):
        if name.startswith("_") or name == "NAMESPACE":
            continue
        if isinstance(member, str) and (name.isupper() or name in properties):
            yield member
        elif inspect.ismethod(member) or (
            inspect.isfunction(member) and member.__module__ == builder.__name__
        ):
            required = [
                p
                for p in inspect.signature(member).parameters.values()
                if p.default is inspect.Parameter.empty
            ]
            value = member(*(f"sample{i}" for i in range(len(required))))
            if isinstance(value, str):
                yield value


def tidings_keys() -> list[str]:
    found = [*built(keys), *built(AgentKeys("a1")), *built(InboxKeys("a1"))]
    found += [keys.sync_running("h1", changed=True), rates.key("login", 1)]
    return [k for k in found if k != keys.host_tag("sample0")]


def dramatiq_keys() -> list[str]:
    broker = make_broker(fakeredis.FakeRedis(), Settings(host="h1"))
    message = dramatiq.Message(
        queue_name="tidings.host.h1", actor_name="flush_channel", args=(), kwargs={}, options={}
    )
    backend = next(m.backend for m in broker.middleware if hasattr(m, "backend"))
    queue = f"{broker.namespace}:tidings.host.h1"
    return [
        broker.namespace,
        queue,
        f"{queue}.msgs",
        f"{queue}.XQ",
        broker.bell("tidings.host.h1"),
        broker.bell("tidings.host.h1.DQ"),
        f"{broker.namespace}:__heartbeats__",
        f"{broker.namespace}:__acks__.w1.q",
        backend.build_message_key(message),
    ]


@pytest.mark.parametrize("user", ["tidings", "tidings-producer"])
def test_every_key_tidings_builds_matches_the_users_patterns(user: str) -> None:
    patterns = key_patterns(user)
    names = tidings_keys() + dramatiq_keys()
    assert len(names) > 40
    outside = [k for k in names if not any(fnmatchcase(k, p) for p in patterns)]
    assert outside == []


def test_another_applications_keys_do_not_match() -> None:
    patterns = key_patterns("tidings")
    for name in ("session:1", "tidingsx", "cache:{a:1}", "a:1", "0f3a9c2e"):
        assert not any(fnmatchcase(name, p) for p in patterns), name

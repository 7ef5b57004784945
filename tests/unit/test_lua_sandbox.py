"""Scripts on the in-memory store get what a real server gives them (issue 24, acceptance 1,
the Lua part; interfaces.md "Local trust"): no ``os``, ``io``, ``package``, ``require``, ``load*``,
``dofile``, ``debug`` and no way into Python, on ``connect("embedded")`` and on the TCP
store ``tidings up --ephemeral`` serves; tidings' and dramatiq's own scripts still run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import tidings
from tests.support.polling import wait_until
from tidings._embedded import EmbeddedServer
from tidings.store import lua_sandbox

#: Globals a real server's scripts do not have.
ABSENT = (
    "os",
    "io",
    "python",
    "package",
    "require",
    "debug",
    "load",
    "loadstring",
    "loadfile",
    "dofile",
    "module",
)
#: Ways into Python through the objects fakeredis hands to Lua.
BRIDGES = (
    "return tostring(redis.call.__globals__)",
    "return tostring(cjson.null.__class__)",
    "local ok, e = pcall(redis.call, 'nosuchcommand'); return tostring(e.__class__)",
    "return tostring(redis.log.func)",
)
#: Attempts that would act on the host if they ran.
ESCAPES = (
    "return os.execute('id')",
    "return io.open('/etc/hostname'):read('*a')",
    "return python.eval('1')",
    "return loadstring('return 1')()",
    "return require('os')",
    "return debug.getinfo(1)",
)


@pytest.fixture(scope="module")
def embedded() -> Iterator[Any]:
    with tidings.connect("embedded", background=False) as hub:
        yield hub.redis


@pytest.fixture(scope="module")
def served() -> Iterator[Any]:
    server = EmbeddedServer("test-password", port=0).start()
    client = redis.Redis.from_url(server.url)
    yield client
    client.close()
    server.close()


@pytest.fixture(params=["embedded", "served"])
def store(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("name", ABSENT)
def test_a_script_sees_no_host_library(store: Any, name: str) -> None:
    assert store.eval(f"return type({name})", 0) == b"nil"


@pytest.mark.parametrize("script", BRIDGES + ESCAPES)
def test_reaching_for_the_host_is_a_script_error(store: Any, script: str) -> None:
    with pytest.raises(redis.ResponseError):
        store.eval(script, 0)
    assert store.ping()  # the store goes on serving


def test_ordinary_scripts_still_run(store: Any) -> None:
    script = (
        "redis.call('hset', KEYS[1], 'f', ARGV[1]); "
        "return {redis.call('hget', KEYS[1], 'f'), cjson.encode({a = cjson.null}), "
        "type(string), type(math), type(table)}"
    )
    assert store.eval(script, 1, "k", "v") == [b"v", b'{"a":null}', b"table", b"table", b"table"]
    with pytest.raises(redis.ResponseError, match="global"):
        store.eval("os = 1", 0)


def test_functions_are_refused(store: Any) -> None:
    with pytest.raises(redis.ResponseError, match="not available on the in-memory store"):
        store.execute_command(
            "FUNCTION",
            "LOAD",
            "#!lua name=x\nredis.register_function('f', function() return 1 end)",
        )


def test_the_whole_tool_runs_on_the_sandboxed_store(tmp_path: Path) -> None:
    """tidings' scripts (publish, flush, wake) and dramatiq's broker scripts (enqueue,
    fetch, ack) run in the sandbox: a publish flushed by a background worker lands."""
    with tidings.connect("embedded", background=True) as hub:
        agent = hub.agent(tmp_path)
        assert hub.redis.eval("return type(os)", 0) == b"nil"
        result = agent.publish_event("system", {"source": "ci", "body": "hello"})
        assert result["status"] == "ok"
        wait_until(
            lambda: (tmp_path / ".notification" / "system.json").exists(), what="the worker's flush"
        )


def test_install_refuses_a_fakeredis_it_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    from fakeredis.commands_mixins import scripting_mixin

    monkeypatch.setattr(scripting_mixin, "LUA_MODULE", object())
    with pytest.raises(RuntimeError, match="cannot sandbox"):
        lua_sandbox.install()

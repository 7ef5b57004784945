"""Redis URLs that deploy/README.md documents: ACL users and Sentinel sets."""

from __future__ import annotations

from pathlib import Path

import pytest

import tidings
from tests.support.redis_server import RedisServer, free_port
from tidings.store.connection import redact
from tidings.store.errors import NoStoreError, TidingsError
from tidings.store.settings import RedisConfig, Settings

pytestmark = pytest.mark.redis_server

ACL_USER = ("--user", "tidings", "on", ">s3cret", "~*", "&*", "+@all")


def test_acl_user_and_password_in_the_url(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", extra=ACL_USER).start()
    try:
        url = f"redis://tidings:s3cret@127.0.0.1:{server.port}/0"
        hub = tidings.connect(url, settings=Settings(host="acl"))
        try:
            (tmp_path / "w").mkdir()
            agent = hub.agent(tmp_path / "w", inline=True)
            assert agent.publish_event("mcp.x", {"text": "hi"})["flushed"] is True
        finally:
            hub.close()
        # The store answered: a refused password is auth_failed, never no_store (issue 29).
        with pytest.raises(TidingsError) as refused:
            tidings.connect(f"redis://tidings:wrong@127.0.0.1:{server.port}/0")
        assert not isinstance(refused.value, NoStoreError)
        assert refused.value.reason == "auth_failed" and ":wrong@" not in refused.value.message
    finally:
        server.stop()


def test_sentinel_url_names_every_sentinel_the_service_db_and_credentials() -> None:
    config = RedisConfig.from_url("redis+sentinel://tidings:s3cret@s1:26379,s2:26380,s3/mymaster/2")
    assert config.sentinels == (("s1", 26379), ("s2", 26380), ("s3", 26379))
    assert (config.service_name, config.db) == ("mymaster", 2)
    assert (config.username, config.password) == ("tidings", "s3cret")


def test_passwords_never_reach_messages() -> None:
    with pytest.raises(NoStoreError) as caught:
        tidings.connect(f"redis://tidings:s3cret@127.0.0.1:{free_port()}/0")
    assert "s3cret" not in caught.value.message
    assert "redis://tidings:***@127.0.0.1:" in caught.value.message
    assert (
        redact("redis+sentinel://:pw@s1:26379,s2:26379/mymaster/0")
        == "redis+sentinel://:***@s1:26379,s2:26379/mymaster/0"
    )
    assert redact("redis://h:6379/0") == "redis://h:6379/0"


def test_sentinel_credentials_are_percent_decoded_like_redis_urls() -> None:
    config = RedisConfig.from_url("redis+sentinel://me:p%40ss%3Aw@s1:26379/mymaster")
    assert (config.username, config.password) == ("me", "p@ss:w")

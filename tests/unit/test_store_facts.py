"""Issue 34 acceptance 4: the overview names the store's engine and its durability (AOF,
fsync), says "not readable" where the user may not run CONFIG (the deployed roles), and
names an in-memory store by the label it was served with (the browser test reads a real
engine's at three widths)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from redis.exceptions import NoPermissionError

from tidings.engine import storefile
from tidings.inspection.store_facts import EMBEDDED_LABEL, read_facts, served_label


class Engine:
    """What INFO and CONFIG GET answer (``config``: ``None`` refuses CONFIG like an ACL)."""

    def __init__(self, aof: int, config: dict[str, str] | None) -> None:
        self.aof, self.config = aof, config

    def info(self, section: str) -> dict[str, Any]:
        if section == "server":
            return {"server_name": "valkey", "valkey_version": "9.1.2", "redis_version": "7.2.4"}
        return {"aof_enabled": self.aof, "aof_last_write_status": "ok"}

    def config_get(self, name: str) -> dict[str, str]:
        if self.config is None:
            raise NoPermissionError("this user has no permissions to run the 'config|get' command")
        return self.config


def test_a_durable_engine() -> None:
    facts = read_facts(Engine(1, {"appendfsync": "always"}))  # type: ignore[arg-type]
    assert facts["engine"] == "valkey 9.1.2" and facts["aof"] is True
    assert facts["fsync"] == "always" and facts["verdict"] == "durable"
    assert "power failure" in str(facts["keeps"]) and facts["note"] is None


def test_a_user_that_may_not_run_config_gets_not_readable_never_a_guess() -> None:
    facts = read_facts(Engine(1, None))  # type: ignore[arg-type]
    assert facts["aof"] is True and facts["fsync"] is None and facts["keeps"] is None
    assert "may not read the fsync policy" in str(facts["note"])


def test_no_append_only_file_is_not_durable() -> None:
    facts = read_facts(Engine(0, {"appendfsync": "everysec"}))  # type: ignore[arg-type]
    assert facts["aof"] is False and facts["verdict"] == "not_durable"
    assert "loses every write since the last snapshot" in str(facts["keeps"])


def test_a_store_without_info_is_named_by_its_label() -> None:
    fake = fakeredis.FakeRedis()
    assert read_facts(fake)["verdict"] == "unknown"
    assert "does not answer INFO" in str(read_facts(fake)["note"])
    facts = read_facts(fake, EMBEDDED_LABEL)
    assert facts["engine"] == EMBEDDED_LABEL and facts["verdict"] == "not_durable"
    assert facts["keeps"] == "nothing survives the process that holds it"


def test_the_served_label_comes_from_store_json_for_that_url_only(tmp_path: Path) -> None:
    assert served_label("embedded", tmp_path) == EMBEDDED_LABEL
    assert served_label("redis://x:1/0", tmp_path) is None
    storefile.write(
        tmp_path / storefile.STORE_FILE,
        {
            "url": "redis://:pw@127.0.0.1:6390/0",
            "pid": os.getpid(),
            "port": 6390,
            "engine": "fakeredis (in memory, not durable)",
            "owner_pid": os.getpid(),
            "socket": None,
        },
    )
    assert (
        served_label("redis://:pw@127.0.0.1:6390/0", tmp_path)
        == "fakeredis (in memory, not durable)"
    )
    assert served_label("redis://elsewhere:6379/0", tmp_path) is None


@pytest.mark.parametrize("name", ["valkey-agent", "billing"])
def test_agents_are_named_by_their_workdir(name: str) -> None:
    from tidings.web.console import workdir_name

    assert workdir_name(f"/home/u/agents/{name}", "w1a2b3") == name
    assert workdir_name("", "w1a2b3") == "w1a2b3"

"""Issue 25, acceptance 1: a Redis Cluster is the state store only with a standalone
control store (interfaces.md "Past one Redis")."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tidings
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer, free_port
from tidings.store.settings import RedisConfig

pytestmark = pytest.mark.redis_server


def test_cluster_urls_name_their_seeds_and_credentials() -> None:
    config = RedisConfig.from_url("rediss+cluster://me:p%40ss@10.0.0.1:7000,10.0.0.2,[::1]:7001")
    assert config.is_cluster and config.tls and not config.is_sentinel
    assert config.nodes == (("10.0.0.1", 7000), ("10.0.0.2", 6379), ("::1", 7001))
    assert (config.username, config.password) == ("me", "p@ss")


@pytest.mark.parametrize("seed", ["cluster", "node"])
def test_a_cluster_state_store_needs_a_broker_url(
    redis_cluster: RedisCluster, seed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``redis+cluster://`` URL, or a plain ``redis://`` URL whose server answers
    ``cluster_enabled:1``, with no control store: ``broker_url_required``."""
    monkeypatch.delenv("TIDINGS_BROKER_URL", raising=False)
    url = redis_cluster.url if seed == "cluster" else redis_cluster.nodes[1].url
    with pytest.raises(tidings.TidingsError) as refused:
        tidings.connect(url)
    assert refused.value.reason == "broker_url_required"
    assert "TIDINGS_BROKER_URL" in refused.value.message


@pytest.mark.parametrize("seed", ["cluster", "node"])
def test_a_cluster_is_refused_as_the_broker(
    redis_cluster: RedisCluster, redis_server: RedisServer, seed: str
) -> None:
    url = redis_cluster.url if seed == "cluster" else redis_cluster.nodes[0].url
    with pytest.raises(tidings.TidingsError) as refused:
        tidings.connect(redis_server.url, broker_url=url)
    assert refused.value.reason == "broker_on_cluster"


def test_tidings_status_on_a_cluster_without_broker_exits_2_with_one_line(
    redis_cluster: RedisCluster,
) -> None:
    env = {"PATH": "/usr/bin:/bin", "TIDINGS_REDIS_URL": redis_cluster.url}
    done = subprocess.run(
        [sys.executable, "-m", "tidings", "status"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TIDINGS_BROKER_URL" in lines[0], done.stderr


def test_tidings_status_runs_on_a_cluster_with_a_broker(
    redis_cluster: RedisCluster, redis_server: RedisServer
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tidings",
            "status",
            "--json",
            "--redis-url",
            redis_cluster.url,
            "--broker-url",
            redis_server.url,
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert '"status": "ok"' in done.stdout


def test_a_broker_that_does_not_answer_is_named_by_its_variable(redis_server: RedisServer) -> None:
    with pytest.raises(tidings.TidingsError) as refused:
        tidings.connect(redis_server.url, broker_url=f"redis://127.0.0.1:{free_port()}/0")
    assert refused.value.reason == "no_store" and "TIDINGS_BROKER_URL" in refused.value.message


@pytest.mark.parametrize("where", ["--broker-url", "TIDINGS_BROKER_URL"])
def test_a_bad_broker_url_exits_2_with_one_line(where: str) -> None:
    args = [sys.executable, "-m", "tidings", "status", "--json"]
    env = {"PATH": "/usr/bin:/bin"}
    if where == "--broker-url":
        args += ["--broker-url", "ftp://x"]
    else:
        env["TIDINGS_BROKER_URL"] = "ftp://x"
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2, done
    assert len(done.stderr.strip().splitlines()) == 1 and where in done.stderr
    assert '"reason": "invalid_broker_url"' in done.stdout

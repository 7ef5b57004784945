"""A real Redis Cluster on free loopback ports: three primaries (optionally each with a
replica), started and torn down by tests (issue 25).

A one-node cluster hides cross-node mistakes (a pipeline or script over two tags works
there), so there are always three primaries.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.redis_server import RedisServer, free_port

#: Primaries of every test cluster.
PRIMARIES = 3
#: Hash slots of a Redis Cluster.
SLOTS = 16384
#: How long a primary may be unreachable before the cluster fails it over (ms).
NODE_TIMEOUT_MS = 1000


class RedisCluster:
    """``PRIMARIES`` primaries, each with ``replicas`` replicas, ``cluster_state:ok``."""

    def __init__(
        self, directory: Path, *, replicas: int = 0, node_timeout_ms: int = NODE_TIMEOUT_MS
    ) -> None:
        self.directory = directory
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.nodes: list[RedisServer] = []

    @property
    def url(self) -> str:
        """The ``redis+cluster://`` URL listing every node as a seed."""
        seeds = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)
        return f"redis+cluster://{seeds}"

    def start(self) -> RedisCluster:
        """Start the nodes and join them as ``redis-cli --cluster create`` would, with
        plain commands (no ``redis-cli`` needed: the shipped ``valkey-server`` serves)."""
        try:
            buses = []
            for n in range(PRIMARIES * (1 + self.replicas)):
                directory = self.directory / f"node{n}"
                buses.append(free_port())
                self.nodes.append(
                    RedisServer(
                        directory,
                        extra=(
                            "--cluster-enabled",
                            "yes",
                            "--cluster-config-file",
                            str(directory / "nodes.conf"),
                            # The bus port defaults to port + 10000, past 65535 for a high
                            # free port.
                            "--cluster-port",
                            str(buses[-1]),
                            "--cluster-node-timeout",
                            str(self.node_timeout_ms),
                            "--cluster-replica-validity-factor",
                            "0",
                            # A replica's first sync at once, not after the default 5 s pause.
                            "--repl-diskless-sync-delay",
                            "0",
                        ),
                    ).start()
                )
            self._join(buses)
            self.wait_ok(self.nodes)
            self.wait_replicated()
        except BaseException:
            self.stop()
            raise
        return self

    def _join(self, buses: list[int]) -> None:
        """Slots split evenly over the primaries, every node met, replicas attached."""
        primaries, replicas = self.nodes[:PRIMARIES], self.nodes[PRIMARIES:]
        share = SLOTS // PRIMARIES
        ids = []
        for i, node in enumerate(primaries):
            last = SLOTS - 1 if i == PRIMARIES - 1 else (i + 1) * share - 1
            with node.client() as c:
                c.execute_command("CLUSTER", "ADDSLOTSRANGE", i * share, last)
                ids.append(c.execute_command("CLUSTER", "MYID").decode())
        with self.nodes[0].client() as c:
            for node, bus in zip(self.nodes[1:], buses[1:], strict=True):
                c.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port, bus)
        for n, node in enumerate(replicas):
            primary = ids[n % PRIMARIES]
            deadline = time.monotonic() + 30
            with node.client() as c:
                while primary.encode() not in c.execute_command("CLUSTER", "NODES"):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"node {node.port} never met {primary}")
                    time.sleep(0.05)
                c.execute_command("CLUSTER", "REPLICATE", primary)

    def wait_ok(self, nodes: list[RedisServer], timeout: float = 30.0) -> None:
        """Until every one of ``nodes`` says ``cluster_state:ok`` and knows every slot."""
        deadline = time.monotonic() + timeout
        for node in nodes:
            while True:
                with node.client() as c:
                    info = c.cluster("info")
                if (
                    info.get("cluster_state") == "ok"
                    and int(info.get("cluster_slots_ok", 0)) == SLOTS
                    and int(info.get("cluster_known_nodes", 0)) == len(self.nodes)
                ):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"cluster not ok on {node.port}: {info}")
                time.sleep(0.05)

    def wait_replicated(self, timeout: float = 30.0) -> None:
        """Until every primary has its replicas online (their first sync done): a
        primary killed before that takes its data with it."""
        deadline = time.monotonic() + timeout
        for node in self.primaries():
            while True:
                with node.client() as c:
                    info = c.info("replication")
                online = sum(
                    1
                    for k, v in info.items()
                    if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
                )
                if online >= self.replicas:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"replicas of {node.port} not in sync: {info}")
                time.sleep(0.05)

    def primaries(self) -> list[RedisServer]:
        """The live nodes that are primaries now (a promoted replica included)."""
        found = []
        for node in self.nodes:
            if node.process is None or node.process.poll() is not None:
                continue
            with node.client() as c:
                if c.info("replication").get("role") == "master":
                    found.append(node)
        return found

    def keys_by_node(self) -> dict[int, list[str]]:
        """Every key on every live primary, by the primary's port."""
        found: dict[int, list[str]] = {}
        for node in self.primaries():
            with node.client() as c:
                found[node.port] = [k.decode() for k in c.scan_iter(count=1000)]
        return found

    def flush(self) -> None:
        for node in self.primaries():
            with node.client() as c:
                c.flushall()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def started(directory: Path, **kwargs: Any) -> Iterator[RedisCluster]:
    """A fixture body: a started cluster, stopped afterwards."""
    cluster = RedisCluster(directory, **kwargs).start()
    try:
        yield cluster
    finally:
        cluster.stop()

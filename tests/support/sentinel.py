"""A Sentinel replica set for failover tests: a master, a replica and Sentinels.

Sentinels run as ``redis-server <conf> --sentinel`` (the same program as
``redis-sentinel``), with short ``down-after-milliseconds`` and
``failover-timeout`` so a failover completes in a few seconds.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import redis

from tests.support.polling import wait_until
from tests.support.redis_server import PORT_ATTEMPTS, RedisServer, free_port, redis_binary

#: The monitored service, as in ``redis+sentinel://.../mymaster/0``.
SERVICE = "mymaster"
#: How long a silent node stays up in a Sentinel's eyes (ms). Shorter flaps under load:
#: a new master missing one ping would be failed over again at once (quorum 1).
DOWN_AFTER_MS = 2000
#: Sentinel's failover timeout (ms): also the pause before it retries a failed failover.
FAILOVER_TIMEOUT_MS = 3000
#: Longest write pause of a planned switchover (ms); lifted as soon as it is done.
SWITCHOVER_PAUSE_MS = 15000


class SentinelProcess:
    """One Sentinel, its config file written fresh (Sentinel rewrites it)."""

    def __init__(self, directory: Path, master_port: int) -> None:
        self.directory = directory
        self.port = free_port()
        self.master_port = master_port
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> SentinelProcess:
        """Start on :attr:`port`, or on a fresh port if another process holds it (a port
        from :func:`free_port` can be taken by a parallel test before this binds it)."""
        for _ in range(PORT_ATTEMPTS):
            self._launch()
            wait_until(self._settled, timeout=10, what=f"sentinel on {self.port}")
            if self._ours():
                return self
            self.stop()
            self.port = free_port()
        raise RuntimeError(f"no free port for a sentinel after {PORT_ATTEMPTS} attempts")

    def _launch(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        conf = self.directory / "sentinel.conf"
        conf.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.directory}\n"
            f"logfile {self.directory / 'sentinel.log'}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.master_port} 1\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n"
        )
        self.process = subprocess.Popen(
            [redis_binary(), str(conf), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _settled(self) -> bool:
        """Our process exited (its port was taken), or something answers on the port."""
        assert self.process is not None
        if self.process.poll() is not None:
            return True
        try:
            with self.client() as c:
                return bool(c.ping())
        except redis.RedisError:
            return False

    def _ours(self) -> bool:
        """Whether the process answering on :attr:`port` is this Sentinel."""
        assert self.process is not None
        if self.process.poll() is not None:
            return False
        with self.client() as c:
            return int(c.info("server")["process_id"]) == self.process.pid

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, protocol=2, decode_responses=True)

    def command(self, *args: Any) -> Any:
        with self.client() as c:
            return c.execute_command(*args)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class SentinelSet:
    """``redis_servers[0]`` starts as master, ``[1]`` as its replica."""

    def __init__(self, directory: Path, sentinels: int = 1) -> None:
        master = RedisServer(directory / "node0")
        # Its --replicaof is set at start, once the master's port is final.
        self.servers = [master, RedisServer(directory / "node1")]
        self.sentinels = [
            SentinelProcess(directory / f"sentinel{i}", master.port) for i in range(sentinels)
        ]
        #: A Sentinel address nothing listens on: clients must skip it.
        self.dead_sentinel_port = free_port()

    @property
    def url(self) -> str:
        hosts = [f"127.0.0.1:{self.dead_sentinel_port}"]
        hosts += [f"127.0.0.1:{s.port}" for s in self.sentinels]
        return f"redis+sentinel://{','.join(hosts)}/{SERVICE}/0"

    def start(self) -> SentinelSet:
        master, replica = self.servers
        master.start()  # its port may have moved (RedisServer.start): tell the others
        replica.extra = ("--replicaof", "127.0.0.1", str(master.port))
        replica.start()
        for sentinel in self.sentinels:
            sentinel.master_port = master.port
        wait_until(lambda: self._link_up(self.servers[1]), timeout=15, what="replica in sync")
        for sentinel in self.sentinels:
            sentinel.start()
        wait_until(self._replica_known, timeout=15, what="sentinels see the replica")
        return self

    @staticmethod
    def _link_up(server: RedisServer) -> bool:
        with server.client(decode_responses=True) as c:
            return bool(c.info("replication").get("master_link_status") == "up")

    def _replica_known(self) -> bool:
        for sentinel in self.sentinels:
            replicas = sentinel.command("SENTINEL", "REPLICAS", SERVICE)
            if not any("s_down" not in str(r) and "disconnected" not in str(r) for r in replicas):
                return False
        return True

    def master_port(self) -> int:
        _, port = self.sentinels[0].command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
        return int(port)

    def master(self) -> RedisServer:
        port = self.master_port()
        return next(s for s in self.servers if s.port == port)

    def kill_master(self) -> RedisServer:
        """SIGKILL the current master, as a crashed host; returns it."""
        master = self.master()
        master.kill()
        return master

    def force_failover(self) -> None:
        """``SENTINEL FAILOVER``: promote the replica although the master is healthy."""
        self.sentinels[0].command("SENTINEL", "FAILOVER", SERVICE)

    def switchover(self) -> RedisServer:
        """A planned switchover that loses no write (deploy/README.md): pause writes on
        the master, let the replica catch up, fail over, then disconnect the old
        master's clients so they reconnect through the Sentinels to the new one.
        Returns the old master."""
        master = self.master()
        with master.client(decode_responses=True) as admin:
            admin.execute_command("CLIENT", "PAUSE", SWITCHOVER_PAUSE_MS, "WRITE")
            wait_until(lambda: self._replica_caught_up(admin), timeout=10, what="replica caught up")
            self.force_failover()
            self.wait_promoted(master.port)
            admin.execute_command("CLIENT", "KILL", "TYPE", "normal")
            admin.execute_command("CLIENT", "UNPAUSE")
        return master

    @staticmethod
    def _replica_caught_up(admin: redis.Redis) -> bool:
        info = admin.info("replication")
        replica = info.get("slave0")
        return isinstance(replica, dict) and replica["offset"] == info["master_repl_offset"]

    def wait_promoted(self, old_port: int, timeout: float = 60.0) -> int:
        """Wait until every Sentinel names a new master that answers as one (a failover
        attempt that aborts is retried only after twice the failover timeout: on a
        loaded machine one such retry has taken a .ci/run past 30 s)."""

        def promoted() -> int | None:
            ports = {
                s.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)[1] for s in self.sentinels
            }
            if len(ports) != 1:
                return None
            port = int(ports.pop())
            if port == old_port:
                return None
            server = next(s for s in self.servers if s.port == port)
            with server.client(decode_responses=True) as c:
                return port if c.info("replication").get("role") == "master" else None

        return wait_until(promoted, timeout=timeout, interval=0.1, what="sentinel failover")

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.stop()


def sentinel_set(directory: Path, sentinels: int = 1) -> SentinelSet:
    """A started set; the caller stops it."""
    started = SentinelSet(directory, sentinels)
    try:
        return started.start()
    except BaseException:
        started.stop()
        raise

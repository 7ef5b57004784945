"""The Prometheus exposition server, and the sum of what ``--processes N`` children
recorded."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

#: The variable that puts prometheus_client into multiprocess mode (set for children).
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


class MetricsServer:
    """A started exposition server (``GET /metrics``); ``port`` is the bound one."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        self._httpd, self._thread = start_http_server(port, host, registry)
        self.port = int(self._httpd.server_port)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def children_registry(directory: Path) -> CollectorRegistry:
    """The sum of what child processes recorded under ``directory`` (children started
    with :data:`MULTIPROC_ENV` pointing there)."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return registry

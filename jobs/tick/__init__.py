"""A host's tick over its agents (channels.md C27): which agents to visit, full scans.

Outside this package, import only the names below (guide.md, Layout).
"""

from tidings.jobs.tick.host import HostSync, sync_host

__all__ = [
    "HostSync",
    "sync_host",
]

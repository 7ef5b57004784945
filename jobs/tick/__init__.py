"""A host's tick over its agents (channels.md C27): which agents to visit, full scans,
and prompt visits (a change starts its agent's visit within the debounce).

Outside this package, import only the names below (guide.md, Layout).
"""

from tidings.jobs.tick.host import HostSync, sync_host
from tidings.jobs.tick.prompt import PromptVisits, prompt_visit, start_prompt_visits

__all__ = [
    "HostSync",
    "PromptVisits",
    "prompt_visit",
    "start_prompt_visits",
    "sync_host",
]

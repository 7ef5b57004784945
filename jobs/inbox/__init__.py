"""The durable inbox (memory-inbox.md M1-M11, M40-M54): admission, items, their one state
table and the inbox text. Outside this package, import only the names below."""

from tidings.jobs.inbox.admission import (
    MAX_OPEN,
    MAX_TERMINAL,
    MEMORY_SOURCE_KIND,
    Admitted,
    Ignored,
    InboxError,
    admit,
    ignore,
    recover,
)
from tidings.jobs.inbox.items import (
    DEFAULT_PAGE,
    Item,
    PublicItem,
    check_query,
    projection,
    read_items,
)
from tidings.jobs.inbox.states import STATES, STORED, TRANSITIONS, Transition, projected
from tidings.jobs.inbox.text import render_inbox_text

__all__ = [
    "DEFAULT_PAGE",
    "MAX_OPEN",
    "MAX_TERMINAL",
    "MEMORY_SOURCE_KIND",
    "STATES",
    "STORED",
    "TRANSITIONS",
    "Admitted",
    "Ignored",
    "InboxError",
    "Item",
    "PublicItem",
    "Transition",
    "admit",
    "check_query",
    "ignore",
    "projected",
    "projection",
    "read_items",
    "recover",
    "render_inbox_text",
]

"""The durable inbox (memory-inbox.md M1-M11, M40-M54): admission, items and the inbox text."""

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
from tidings.jobs.inbox.text import render_inbox_text

__all__ = [
    "DEFAULT_PAGE",
    "MAX_OPEN",
    "MAX_TERMINAL",
    "MEMORY_SOURCE_KIND",
    "Admitted",
    "Ignored",
    "InboxError",
    "Item",
    "PublicItem",
    "admit",
    "check_query",
    "ignore",
    "projection",
    "read_items",
    "recover",
    "render_inbox_text",
]

"""Structured event logging: one named event per line, with fields."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("tidings")


def event(name: str, level: int = logging.WARNING, **fields: Any) -> None:
    """Log ``name`` with ``fields`` attached (``record.event``, ``record.fields``).

    The message is the bare name: formatters write the fields as values (JSON
    object, or ``key=value``), never as a dict's repr inside the message.
    """
    logger.log(level, "%s", name, extra={"event": name, "fields": fields})

"""Structured event logging: one named event per line, with fields."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("tidings")


def event(name: str, level: int = logging.WARNING, **fields: Any) -> None:
    """Log ``name`` with ``fields`` attached (``record.event``, ``record.fields``)."""
    logger.log(level, "%s %s", name, fields, extra={"event": name, "fields": fields})

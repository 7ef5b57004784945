"""Structured event logging: one named event per line, with fields."""

from __future__ import annotations

import logging

logger = logging.getLogger("tidings")


def event(
    name: str,
    level: int = logging.WARNING,
    *,
    exc_info: BaseException | None = None,
    **fields: object,
) -> None:
    """Log ``name`` with ``fields`` attached (``record.event``, ``record.fields``);
    ``exc_info`` adds that exception's traceback.

    The message is the bare name: formatters write the fields as values (JSON
    object, or ``key=value``), never as a dict's repr inside the message.
    """
    logger.log(level, "%s", name, exc_info=exc_info, extra={"event": name, "fields": fields})

"""Logging of the long-running commands (``up``, ``worker``, ``scheduler``).

With ``TIDINGS_LOG_JSON`` (the default) every record, tidings' and dramatiq's
alike, is one JSON object per line on stderr: ``time``, ``level``, ``logger``,
``message``, ``host``, ``pid``; the ``event`` name and ``fields`` that
``tidings.jobs.log.event`` attaches; and, while a dramatiq message is being processed,
its ``actor``, ``message_id`` and ``agent_id``. Otherwise the same facts go
into one plain text line.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TypedDict

from dramatiq.middleware import CurrentMessage

from tidings.store.settings import Settings

#: Loggers whose INFO lines are routine per-tick scheduling (APScheduler's "Running
#: job" and "Job executed" for every sync tick): logged at DEBUG (interfaces.md,
#: TIDINGS_LOG_LEVEL), else a quiet host writes two lines a second.
ROUTINE_LOGGERS = ("apscheduler.executors", "apscheduler.scheduler")
#: Plain-text layout when JSON is off.
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class MessageContext(TypedDict, total=False):
    """The dramatiq message a record was logged under."""

    actor: str
    message_id: str
    agent_id: str


class RecordContext(MessageContext, total=False):
    """What a record carries beyond its message (``fields``: the event's own, open)."""

    event: str
    fields: dict[str, object]


def message_context() -> MessageContext:
    """``actor``, ``message_id`` and ``agent_id`` of the message this thread processes."""
    message = CurrentMessage.get_current_message()
    if message is None:
        return {}
    context: MessageContext = {"actor": message.actor_name, "message_id": message.message_id}
    # Agent actors take the agent id first (workers/actors.py).
    if message.args and isinstance(message.args[0], str):
        context["agent_id"] = message.args[0]
    return context


def record_context(record: logging.LogRecord) -> RecordContext:
    """What a record carries beyond its message: event, fields and message context."""
    context: RecordContext = {}
    event = getattr(record, "event", None)
    fields = getattr(record, "fields", None)
    if event:
        context["event"] = event
    if fields:
        context["fields"] = fields
        if isinstance(fields.get("agent_id"), str):
            context["agent_id"] = fields["agent_id"]
    return {**context, **message_context()}


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "host": self.host,
            "pid": record.process,
            **record_context(record),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _text_value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


class TextFormatter(logging.Formatter):
    """The plain line, followed by the record's fields and context as ``key=value``."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = record_context(record)
        fields = context.pop("fields", {})
        event = {"event": context.pop("event")} if "event" in context else {}
        pairs: dict[str, object] = {**event, **fields, **context}
        return " ".join([line, *(f"{k}={_text_value(v)}" for k, v in pairs.items())])


class RoutineToDebug(logging.Filter):
    """Demotes the INFO records of :data:`ROUTINE_LOGGERS` to DEBUG, and drops them
    unless the configured level lets DEBUG through."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and record.name.startswith(ROUTINE_LOGGERS):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return record.levelno >= self.level


class _ProcessHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler this module installed, so set-up can be repeated."""


def configure(settings: Settings) -> None:
    """Route every logger of this process through one stderr handler at
    ``TIDINGS_LOG_LEVEL``."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _ProcessHandler)]:
        root.removeHandler(handler)
    level = logging.getLevelNamesMapping()[settings.log_level]
    handler = _ProcessHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(settings.host) if settings.log_json else TextFormatter())
    handler.addFilter(RoutineToDebug(level))
    root.addHandler(handler)
    root.setLevel(level)

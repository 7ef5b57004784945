"""The ``manual`` action (channels.md C43): the manual shipped as package data of ``tidings``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

#: The manual ships as package data of ``tidings``.
MANUAL_PACKAGE = "tidings"
MANUAL_NAME = "notification-manual.md"
MISSING_ERROR = "notification manual missing — package data not installed correctly"


def manual_path() -> Path:
    return Path(str(resources.files(MANUAL_PACKAGE).joinpath(MANUAL_NAME))).absolute()


class Manual(TypedDict):
    """C43: the ``manual`` action's answer (``error`` only when ``degraded``)."""

    status: Literal["ok", "degraded"]
    notification_manual: str
    manual_path: str
    error: NotRequired[str]


def manual(path: Path | None = None) -> Manual:
    """C43: the text and its absolute path; ``degraded`` when the file is missing."""
    target = path if path is not None else manual_path()
    try:
        text = target.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return {
            "status": "degraded",
            "notification_manual": "",
            "manual_path": str(target),
            "error": MISSING_ERROR,
        }
    return {"status": "ok", "notification_manual": text, "manual_path": str(target)}

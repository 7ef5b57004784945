"""The tour every demo chapter is handed: the hub, the agent, the workdir and the console."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from tidings._agent import Agent
from tidings._hub import Hub


def json_at(value: object, *path: str) -> object:
    """The JSON value at ``path`` inside ``value`` (``None`` where a level is missing)."""
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


@dataclass
class Tour:
    hub: Hub
    agent: Agent
    workdir: Path
    console: Console
    chapters_shown: int = 0

    def chapter(self, title: str) -> None:
        """Open the next chapter; chapters are numbered in the order they run."""
        self.chapters_shown += 1
        self.console.rule(f"{self.chapters_shown}. {title}")

    def say(self, text: str) -> None:
        self.console.print(text)

    def show(self, title: str, value: object) -> None:
        text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        self.console.print(Panel(text, title=title, expand=False))

    def expect(self, condition: bool, what: str) -> None:
        if not condition:
            raise AssertionError(what)

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.02)

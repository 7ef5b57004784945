"""The tour every demo chapter is handed: the hub, the agent, the workdir and the console."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
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
    #: The channels the tour has said what they are (every one it uses, before it does).
    introduced: set[str] = field(default_factory=set)
    #: Someone reads the tour at a terminal: it may pause for them (and print a live URL).
    interactive: bool = False

    def chapter(self, title: str) -> None:
        """Open the next chapter; chapters are numbered in the order they run."""
        self.chapters_shown += 1
        self.console.rule(f"{self.chapters_shown}. {title}")

    def does(self, *, cli: str | None = None, python: str | None = None) -> None:
        """The command line and the Python call that do what the chapter narrates
        (``W`` stands for the agent's workdir, ``agent`` for ``hub.agent(W)``)."""
        if cli:
            self.console.print(
                f"  [dim]$[/] [cyan]{escape(cli)}[/]", highlight=False, soft_wrap=True
            )
        if python:
            self.console.print(
                f"  [dim]>>>[/] [cyan]{escape(python)}[/]", highlight=False, soft_wrap=True
            )

    def pause(self) -> None:
        """Wait for Enter (only at a terminal)."""
        if self.interactive:
            with contextlib.suppress(EOFError):
                input()

    def introduce(self, channel: str, what: str) -> None:
        """Say what a channel is, the first time the tour uses it."""
        if channel not in self.introduced:
            self.introduced.add(channel)
            self.say(f"The [bold]{channel}[/] channel: {what}")

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

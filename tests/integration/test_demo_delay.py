"""The demo's delay chapter runs and checks itself on an embedded hub (issue 3: demo)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

import tidings
from tidings.demo.chapters import CHAPTERS, Tour
from tidings.demo.delay import delay_alarm


def test_d19_demo_chapter_shows_a_delay_ending_in_an_alarm(tmp_path: Path) -> None:
    assert delay_alarm in CHAPTERS
    out = io.StringIO()
    with tidings.connect("embedded", background=True) as hub:
        tour = Tour(hub, hub.agent(tmp_path), tmp_path, Console(file=out, width=100))
        delay_alarm(tour)  # raises AssertionError if anything it shows is not so
    assert "Notification delay ended: email" in out.getvalue()
